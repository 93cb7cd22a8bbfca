//! Safety rule 1: host-side git never runs a program that the repository names.
//!
//! Every program-naming key and every hook is planted in the host repository,
//! each touching its own sentinel file. Every host operation slipway has is then
//! run, and no sentinel may exist. At the end the same plants are fired through
//! the real git CLI, proving the test would catch a leak.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "post-index-change",
];

struct Planted {
    sentinels: PathBuf,
}

impl Planted {
    fn fired(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.sentinels)
            .expect("sentinel dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Plants every hook and program-naming key in `repo`; the agent side (marked by
/// AGENT_SIDE in the environment) is exempt so only slipway's own git is judged.
fn plant(env: &TestEnv, repo: &Path) -> Planted {
    let sentinels = env.path().join("sentinels");
    std::fs::create_dir_all(&sentinels).expect("sentinel dir");
    let program = |name: &str, passthrough: bool| -> String {
        let body = format!(
            "[ -n \"$AGENT_SIDE\" ] || touch '{}/{name}'\n{}",
            sentinels.display(),
            if passthrough {
                "exec cat\n"
            } else {
                "exit 0\n"
            }
        );
        env.script(&format!("plant-{name}"), &body)
            .display()
            .to_string()
    };
    let hooks_dir = env.path().join("planted-hooks");
    std::fs::create_dir_all(&hooks_dir).expect("hooks dir");
    for hook in HOOKS {
        for dir in [hooks_dir.clone(), repo.join(".git/hooks")] {
            let path = dir.join(hook);
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\n[ -n \"$AGENT_SIDE\" ] || touch '{}/hook-{hook}'\nexit 0\n",
                    sentinels.display()
                ),
            )
            .expect("hook");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
    let keys: Vec<(String, String)> = vec![
        ("core.fsmonitor".into(), program("core.fsmonitor", false)),
        ("core.hooksPath".into(), hooks_dir.display().to_string()),
        ("filter.evil.clean".into(), program("filter.clean", true)),
        ("filter.evil.smudge".into(), program("filter.smudge", true)),
        ("diff.evil.textconv".into(), program("diff.textconv", true)),
        ("diff.evil.command".into(), program("diff.command", false)),
        ("diff.external".into(), program("diff.external", false)),
        (
            "merge.evil.driver".into(),
            program("merge.driver", false) + " %O %A %B",
        ),
        (
            "credential.helper".into(),
            program("credential.helper", false),
        ),
        ("core.sshCommand".into(), program("core.sshCommand", false)),
        ("core.pager".into(), program("core.pager", true)),
        ("core.editor".into(), program("core.editor", false)),
        ("sequence.editor".into(), program("sequence.editor", false)),
        ("core.askPass".into(), program("core.askPass", false)),
        ("gpg.program".into(), program("gpg.program", false)),
        ("gpg.ssh.program".into(), program("gpg.ssh.program", false)),
        ("commit.gpgsign".into(), "true".into()),
        ("tag.gpgsign".into(), "true".into()),
        (
            "core.alternateRefsCommand".into(),
            program("alternateRefsCommand", false),
        ),
        (
            "uploadpack.packObjectsHook".into(),
            program("packObjectsHook", false),
        ),
        (
            "remote.origin.uploadpack".into(),
            program("uploadpack", false),
        ),
        (
            "remote.origin.receivepack".into(),
            program("receivepack", false),
        ),
    ];
    for (key, value) in &keys {
        env.git(repo, &["config", key, value]);
    }
    // Attributes route every file through the planted filter, diff and merge drivers.
    std::fs::write(
        repo.join(".git/info/attributes"),
        "* filter=evil diff=evil merge=evil\n",
    )
    .expect("attributes");
    Planted { sentinels }
}

/// Git run by the test itself after planting: exempt from the sentinels, unsigned.
fn test_side_git(env: &TestEnv, repo: &Path, args: &[&str]) {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(repo)
        .env("AGENT_SIDE", "1")
        .args(["-c", "commit.gpgsign=false"])
        .args(args);
    for (k, v) in env.envs() {
        cmd.env(k, v);
    }
    assert!(cmd.status().expect("git runs").success(), "git {args:?}");
}

fn agent_commits(env: &TestEnv, file: &str, text: &str) -> PathBuf {
    env.script(
        &format!("agent-{}", file.replace('/', "-")),
        &format!(
            "set -e\nexport AGENT_SIDE=1\nprintf '%s\\n' '{text}' >> {file}\ngit add {file}\ngit -c commit.gpgsign=false commit -q -m 'agent edits {file}'\n"
        ),
    )
}

#[test]
fn no_host_operation_runs_a_repository_program() {
    let env = TestEnv::new();
    // A remote so the fast-forward path and remote-tracking refs exist.
    let upstream = env.new_repo("upstream");
    env.commit_file(&upstream, "src/lib.txt", "one\n", "add lib");
    let repo = env.path().join("host");
    env.git(
        env.path(),
        &["clone", "-q", upstream.to_str().expect("utf8"), "host"],
    );
    env.git(&upstream, &["checkout", "-q", "-b", "feat"]);
    env.commit_file(&upstream, "feat.txt", "feat\n", "feat work");
    env.git(&repo, &["fetch", "-q", "origin"]);
    env.git(&repo, &["branch", "-q", "--track", "feat", "origin/main"]);
    env.git(
        &repo,
        &["branch", "-q", "--set-upstream-to=origin/feat", "feat"],
    );
    let planted = plant(&env, &repo);

    // branches, resolve
    env.slipway_json(&repo, &["branches"]);
    for policy in ["host-head", "current-branch", "default"] {
        env.slipway_json(&repo, &["resolve", "--source", policy]);
    }
    env.slipway_json(
        &repo,
        &["resolve", "--source", "named", "--ref", "origin/feat"],
    );

    // create, re-use with fast-forward (feat is strictly behind origin/feat), list
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    let reused = env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    assert_eq!(reused["reused"], true);
    assert!(
        reused["notes"].to_string().contains("fast-forwarded"),
        "expected a fast-forward: {reused}"
    );
    assert_eq!(
        env.git(Path::new(s(&created, "path")), &["rev-parse", "HEAD"]),
        env.rev(&repo, "origin/feat")
    );
    env.slipway_json(
        &repo,
        &["worktree", "create", "--branch", "fresh", "--copy", "src"],
    );
    env.slipway_json(&repo, &["worktree", "list"]);

    // merge-to-head: fast-forward merge, then a real merge commit
    let agent = agent_commits(&env, "notes.txt", "from the agent");
    env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    std::fs::write(repo.join("host-side.txt"), "host\n").expect("write");
    test_side_git(&env, &repo, &["add", "host-side.txt"]);
    test_side_git(&env, &repo, &["commit", "-q", "-m", "host moves on"]);
    let agent2 = agent_commits(&env, "agent2.txt", "second agent");
    let merged = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--ref",
            "origin/main",
            "--",
            agent2.to_str().expect("utf8"),
        ],
    );
    assert_eq!(merged["merge"]["kind"], "merged", "{merged}");

    // a conflicting merge-to-head run is aborted
    let conflicting = env.script(
        "agent-conflict",
        "set -e\nexport AGENT_SIDE=1\necho agent > README.md\ngit add README.md\ngit -c commit.gpgsign=false commit -q -m 'agent rewrites README'\n",
    );
    // The host rewrites README too (test-side git, exempt from the sentinels).
    std::fs::write(repo.join("README.md"), "host\n").expect("write");
    test_side_git(&env, &repo, &["add", "README.md"]);
    test_side_git(&env, &repo, &["commit", "-q", "-m", "host rewrites README"]);
    let (result, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--ref",
            "origin/main",
            "--",
            conflicting.to_str().expect("utf8"),
        ],
    );
    assert_eq!(err["kind"], "mergeConflict", "{err}");
    assert!(result["keptBranch"].is_string(), "{result}");

    // close: a clean worktree and a dirty one
    env.slipway_json(&repo, &["worktree", "close", "fresh"]);
    std::fs::write(Path::new(s(&created, "path")).join("dirty.txt"), "x").expect("write");
    let closed = env.slipway_json_code(&repo, &["worktree", "close", "feat"], 3);
    assert_eq!(closed["outcome"], "preserved");
    env.slipway_json(&repo, &["worktree", "close", "feat", "--force"]);

    assert_eq!(
        planted.fired(),
        Vec::<String>::new(),
        "slipway ran programs named by the repository"
    );

    // The plants are live: real git fires them in the same repository.
    std::fs::write(repo.join("trigger.txt"), "x\n").expect("write");
    let _ = env.git_output(&repo, &["add", "trigger.txt"]);
    let _ = env.git_output(&repo, &["commit", "-q", "-m", "trigger"]);
    let fired = planted.fired();
    assert!(
        fired.iter().any(|f| f.starts_with("hook-")) && fired.iter().any(|f| f == "filter.clean"),
        "the planted programs should fire under the git CLI, got {fired:?}"
    );
}
