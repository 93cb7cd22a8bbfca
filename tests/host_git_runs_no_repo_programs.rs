//! Safety rule 1: host-side git never runs a program that the repository names.
//!
//! Every program-naming key and every hook is planted in the host repository,
//! each touching its own sentinel file. Every host operation slipway has is then
//! run, and no sentinel may exist. At the end every plant is fired through the
//! real git CLI, one trigger each, proving the test would catch any of them.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

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
    "post-index-change",
];
// Not planted, because git never runs them from a repository: the sample
// `fsmonitor-watchman` hook (it runs only when `core.fsmonitor` names it, and
// `core.fsmonitor` is planted) and `uploadpack.packObjectsHook` (git reads it
// from protected config only: system, global, the command line).

struct Planted {
    sentinels: PathBuf,
    /// Every mark a plant can leave.
    marks: BTreeSet<String>,
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

    /// The marks left since the last call; clears them.
    fn take(&self) -> BTreeSet<String> {
        let fired: BTreeSet<String> = self.fired().into_iter().collect();
        for name in &fired {
            std::fs::remove_file(self.sentinels.join(name)).expect("clear a mark");
        }
        fired
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
    let mut marks = BTreeSet::new();
    for hook in HOOKS {
        // The hooks of `core.hooksPath` and of `.git/hooks` leave marks of their own.
        for (dir, mark) in [
            (hooks_dir.clone(), format!("hookspath-{hook}")),
            (repo.join(".git/hooks"), format!("hook-{hook}")),
        ] {
            let path = dir.join(hook);
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\n[ -n \"$AGENT_SIDE\" ] || touch '{}/{mark}'\nexit 0\n",
                    sentinels.display()
                ),
            )
            .expect("hook");
            marks.insert(mark);
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
        // A key naming one of the programs above leaves that program's mark.
        if let Some(name) = value
            .split_whitespace()
            .next()
            .and_then(|p| p.rsplit_once("/plant-"))
            .map(|(_, name)| name)
        {
            marks.insert(name.to_owned());
        }
    }
    // Attributes route every file through the planted filter, diff and merge
    // drivers; `plain.txt` has no diff driver, so its diffs go to `diff.external`.
    std::fs::write(
        repo.join(".git/info/attributes"),
        "* filter=evil diff=evil merge=evil\nplain.txt !diff\n",
    )
    .expect("attributes");
    Planted { sentinels, marks }
}

/// `git credential fill` for a host nobody has credentials for, as a fetch over https asks.
fn credential_fill(env: &TestEnv, dir: &Path) {
    use std::io::Write;
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(dir)
        .env_clear()
        .envs(std::env::var_os("PATH").map(|p| ("PATH".to_owned(), p)))
        .envs(env.envs())
        .args(["credential", "fill"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("git runs");
    let mut pipe = child.stdin.take().expect("stdin");
    pipe.write_all(b"protocol=https\nhost=example.invalid\n\n")
        .expect("git's stdin");
    drop(pipe);
    // It fails (nobody answers): only what it ran matters.
    child.wait().expect("git runs");
}

/// Commits made while proving the plants are unsigned: signing is a plant of its own.
const UNSIGNED: [&str; 4] = ["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"];

fn unsigned<'a>(args: &[&'a str]) -> Vec<&'a str> {
    UNSIGNED
        .iter()
        .copied()
        .chain(args.iter().copied())
        .collect()
}

/// Runs `trigger` and asserts it left at least the marks `want`; returns every
/// mark it left. Triggers that fail by design (a signature nobody can make, a
/// remote nobody answers) are not checked: the mark is the proof.
fn fires<T>(
    planted: &Planted,
    what: &str,
    want: &[String],
    trigger: impl FnOnce() -> T,
) -> BTreeSet<String> {
    planted.take();
    // What the trigger printed or returned does not matter: only what it ran.
    drop(trigger());
    let fired = planted.take();
    let missing: Vec<&String> = want.iter().filter(|m| !fired.contains(*m)).collect();
    assert!(
        missing.is_empty(),
        "{what}: the plants {missing:?} did not fire under the git CLI (fired: {fired:?})"
    );
    fired
}

/// Fires every hook through the git CLI, one trigger at a time; `prefix` is
/// the mark of the hooks git runs now (`hookspath-` or `hook-`).
fn every_hook_fires(
    env: &TestEnv,
    repo: &Path,
    planted: &Planted,
    prefix: &str,
) -> BTreeSet<String> {
    let want =
        |hooks: &[&str]| -> Vec<String> { hooks.iter().map(|h| format!("{prefix}{h}")).collect() };
    let scratch = env.path().join(format!("{prefix}scratch"));
    std::fs::create_dir_all(&scratch).expect("scratch");
    let mut all = BTreeSet::new();
    all.extend(fires(
        planted,
        "git add",
        &want(&["post-index-change"]),
        || {
            std::fs::write(repo.join(format!("{prefix}1.txt")), "one\n").expect("write");
            env.git(repo, &["add", &format!("{prefix}1.txt")]);
        },
    ));
    all.extend(fires(
        planted,
        "git commit",
        &want(&[
            "pre-commit",
            "prepare-commit-msg",
            "commit-msg",
            "post-commit",
            "reference-transaction",
        ]),
        || env.git(repo, &unsigned(&["commit", "-q", "-m", "hooks one"])),
    ));
    all.extend(fires(
        planted,
        "git commit --amend",
        &want(&["post-rewrite"]),
        || {
            env.git(
                repo,
                &unsigned(&["commit", "-q", "--amend", "-m", "hooks one, amended"]),
            )
        },
    ));
    let side = format!("{prefix}side");
    all.extend(fires(
        planted,
        "git checkout -b",
        &want(&["post-checkout"]),
        || env.git(repo, &unsigned(&["checkout", "-q", "-b", &side])),
    ));
    std::fs::write(repo.join(format!("{prefix}2.txt")), "two\n").expect("write");
    env.git(repo, &["add", &format!("{prefix}2.txt")]);
    env.git(repo, &unsigned(&["commit", "-q", "-m", "hooks two"]));
    env.git(repo, &["checkout", "-q", "-"]);
    all.extend(fires(
        planted,
        "git merge --no-ff",
        &want(&["pre-merge-commit", "post-merge"]),
        || {
            env.git(
                repo,
                &unsigned(&["merge", "-q", "--no-ff", "-m", "hooks merge", &side]),
            )
        },
    ));
    all.extend(fires(planted, "git rebase", &want(&["pre-rebase"]), || {
        env.git(repo, &unsigned(&["rebase", "-q", "HEAD", &side]));
        env.git(repo, &["checkout", "-q", "-"]);
    }));
    let patch = scratch.join("hooks.patch");
    std::fs::write(repo.join(format!("{prefix}3.txt")), "three\n").expect("write");
    env.git(repo, &["add", &format!("{prefix}3.txt")]);
    env.git(repo, &unsigned(&["commit", "-q", "-m", "hooks three"]));
    let formatted = env.git_output(repo, &["format-patch", "-1", "--stdout"]);
    std::fs::write(&patch, &formatted.stdout).expect("patch");
    env.git(repo, &["reset", "-q", "--hard", "HEAD~1"]);
    all.extend(fires(
        planted,
        "git am",
        &want(&["applypatch-msg", "pre-applypatch", "post-applypatch"]),
        || {
            env.git(
                repo,
                &unsigned(&["am", "-q", patch.to_str().expect("utf8")]),
            )
        },
    ));
    all.extend(fires(
        planted,
        "git send-email",
        &want(&["sendemail-validate"]),
        || {
            let out = env.git_output(
                repo,
                &[
                    "send-email",
                    "--dry-run",
                    "--confirm=never",
                    "--from=test@slipway.invalid",
                    "--to=nobody@slipway.invalid",
                    patch.to_str().expect("utf8"),
                ],
            );
            assert!(
                out.status.success(),
                "git send-email cannot run here (on Debian: apt-get install git-email):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        },
    ));
    let bare = scratch.join("bare.git");
    env.git(
        env.path(),
        &["init", "-q", "--bare", bare.to_str().expect("utf8")],
    );
    all.extend(fires(planted, "git push", &want(&["pre-push"]), || {
        env.git(
            repo,
            &[
                "push",
                "-q",
                bare.to_str().expect("utf8"),
                "HEAD:refs/heads/pushed",
            ],
        )
    }));
    // The receiving side: a clone pushes into the host.
    let pusher = scratch.join("pusher");
    env.git(
        env.path(),
        &[
            "clone",
            "-q",
            repo.to_str().expect("utf8"),
            pusher.to_str().expect("utf8"),
        ],
    );
    env.commit_file(&pusher, "pushed.txt", "pushed\n", "pushed into the host");
    all.extend(fires(
        planted,
        "a push into the host",
        &want(&[
            "pre-receive",
            "update",
            "post-receive",
            "post-update",
            "reference-transaction",
        ]),
        || {
            env.git(
                &pusher,
                &[
                    "push",
                    "-q",
                    "origin",
                    &format!("HEAD:refs/heads/{prefix}incoming"),
                ],
            )
            .truncate(0)
        },
    ));
    let current = env.git(repo, &["symbolic-ref", "--short", "HEAD"]);
    env.git(&pusher, &["fetch", "-q", "origin"]);
    env.git(
        &pusher,
        &["reset", "-q", "--hard", &format!("origin/{current}")],
    );
    env.commit_file(
        &pusher,
        "pushed2.txt",
        "pushed\n",
        "pushed onto the checked-out branch",
    );
    test_side_git(
        env,
        repo,
        &["config", "receive.denyCurrentBranch", "updateInstead"],
    );
    all.extend(fires(
        planted,
        "a push to the host's checked-out branch",
        &want(&["push-to-checkout"]),
        || {
            env.git(
                &pusher,
                &["push", "-q", "origin", &format!("HEAD:{current}")],
            )
            .truncate(0)
        },
    ));
    test_side_git(
        env,
        repo,
        &["config", "--unset", "receive.denyCurrentBranch"],
    );
    // Two packs are more than gc.autoPackLimit=1: `gc --auto` has work to do.
    env.git(repo, &["repack", "-q", "-d"]);
    std::fs::write(repo.join(format!("{prefix}4.txt")), "four\n").expect("write");
    env.git(repo, &["add", &format!("{prefix}4.txt")]);
    env.git(repo, &unsigned(&["commit", "-q", "-m", "hooks four"]));
    env.git(repo, &["repack", "-q", "-d"]);
    all.extend(fires(
        planted,
        "git gc --auto",
        &want(&["pre-auto-gc"]),
        || {
            env.git(
                repo,
                &[
                    "-c",
                    "gc.autoPackLimit=1",
                    "-c",
                    "gc.autoDetach=false",
                    "gc",
                    "--auto",
                    "--quiet",
                ],
            )
        },
    ));
    all
}

/// Fires every program-naming key through the git CLI, one trigger each.
fn every_key_fires(
    env: &TestEnv,
    repo: &Path,
    upstream: &Path,
    planted: &Planted,
) -> BTreeSet<String> {
    let want = |names: &[&str]| -> Vec<String> { names.iter().map(|n| (*n).to_owned()).collect() };
    let mut all = BTreeSet::new();
    all.extend(fires(
        planted,
        "git status",
        &want(&["core.fsmonitor"]),
        || env.git(repo, &["status", "--porcelain"]),
    ));
    all.extend(fires(planted, "git add", &want(&["filter.clean"]), || {
        std::fs::write(repo.join("plain.txt"), "plain\n").expect("write");
        env.git(repo, &["add", "plain.txt"]);
        env.git(repo, &unsigned(&["commit", "-q", "-m", "plain"]));
    }));
    all.extend(fires(
        planted,
        "git checkout of a file",
        &want(&["filter.smudge"]),
        || {
            std::fs::remove_file(repo.join("plain.txt")).expect("rm");
            env.git(repo, &["checkout", "-q", "--", "plain.txt"]);
        },
    ));
    std::fs::write(repo.join("plain.txt"), "plain, changed\n").expect("write");
    std::fs::write(repo.join("README.md"), "changed\n").expect("write");
    all.extend(fires(
        planted,
        "git diff",
        &want(&["diff.command", "diff.external"]),
        || {
            env.git_output(repo, &["diff"]);
        },
    ));
    all.extend(fires(
        planted,
        "git diff --no-ext-diff",
        &want(&["diff.textconv"]),
        || env.git(repo, &["diff", "--no-ext-diff", "--", "README.md"]),
    ));
    env.git(repo, &["checkout", "-q", "--", "plain.txt", "README.md"]);
    // Both sides change one file: a content merge, by the planted driver.
    env.git(repo, &["checkout", "-q", "-b", "drivers"]);
    std::fs::write(repo.join("plain.txt"), "plain, theirs\n").expect("write");
    env.git(repo, &unsigned(&["commit", "-q", "-am", "theirs"]));
    env.git(repo, &["checkout", "-q", "-"]);
    std::fs::write(repo.join("plain.txt"), "plain, ours\n").expect("write");
    env.git(repo, &unsigned(&["commit", "-q", "-am", "ours"]));
    all.extend(fires(
        planted,
        "a content merge",
        &want(&["merge.driver"]),
        || {
            env.git_output(repo, &unsigned(&["merge", "-q", "--no-edit", "drivers"]));
        },
    ));
    env.git_output(repo, &["merge", "--abort"]);
    all.extend(fires(
        planted,
        "git credential fill",
        &want(&["credential.helper", "core.askPass"]),
        || {
            credential_fill(env, repo);
        },
    ));
    all.extend(fires(
        planted,
        "an ssh remote",
        &want(&["core.sshCommand"]),
        || {
            env.git_output(repo, &["ls-remote", "ssh://example.invalid/repo"]);
        },
    ));
    all.extend(fires(
        planted,
        "git log on a terminal",
        &want(&["core.pager"]),
        || {
            let mut envs = env.envs();
            envs.extend(std::env::var_os("PATH").map(|p| ("PATH".to_owned(), p)));
            let mut log = common::pty::Pty::spawn(
                &["git".to_owned(), "log".to_owned(), "-1".to_owned()],
                repo,
                &envs,
            );
            assert!(
                crate::common::lsp::wait_until(EVENT_DEADLINE, || !log.running()),
                "git log on a terminal never ended: {}",
                log.screen()
            );
        },
    ));
    all.extend(fires(
        planted,
        "git commit without -m",
        &want(&["core.editor"]),
        || {
            env.git_output(repo, &unsigned(&["commit", "--allow-empty"]));
        },
    ));
    all.extend(fires(
        planted,
        "git rebase -i",
        &want(&["sequence.editor"]),
        || {
            env.git_output(repo, &unsigned(&["rebase", "-q", "-i", "HEAD~1"]));
            env.git_output(repo, &["rebase", "--abort"]);
        },
    ));
    all.extend(fires(
        planted,
        "commit.gpgsign",
        &want(&["gpg.program"]),
        || {
            env.git_output(repo, &["commit", "-q", "--allow-empty", "-m", "signed"]);
        },
    ));
    all.extend(fires(
        planted,
        "tag.gpgsign",
        &want(&["gpg.program"]),
        || {
            env.git_output(
                repo,
                &[
                    "-c",
                    "commit.gpgsign=false",
                    "tag",
                    "-m",
                    "signed",
                    "signed-tag",
                ],
            );
        },
    ));
    all.extend(fires(
        planted,
        "an ssh signature",
        &want(&["gpg.ssh.program"]),
        || {
            env.git_output(
                repo,
                &[
                    "-c",
                    "gpg.format=ssh",
                    "-c",
                    "user.signingKey=key::ssh-ed25519 AAAA",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "ssh-signed",
                ],
            );
        },
    ));
    all.extend(fires(
        planted,
        "git fetch origin",
        &want(&["uploadpack"]),
        || {
            env.git_output(repo, &["fetch", "-q", "origin"]);
        },
    ));
    all.extend(fires(
        planted,
        "git push origin",
        &want(&["receivepack"]),
        || {
            env.git_output(repo, &["push", "-q", "origin", "HEAD:refs/heads/nowhere"]);
        },
    ));
    // With an alternate object store, a push into the host lists the
    // alternate's refs through core.alternateRefsCommand.
    let alternates = repo.join(".git/objects/info/alternates");
    std::fs::write(
        &alternates,
        format!("{}\n", upstream.join(".git/objects").display()),
    )
    .expect("alternates");
    let pusher = env.path().join("alternate-pusher");
    env.git(
        env.path(),
        &[
            "clone",
            "-q",
            "--no-local",
            upstream.to_str().expect("utf8"),
            pusher.to_str().expect("utf8"),
        ],
    );
    all.extend(fires(
        planted,
        "a push into a host with an alternate",
        &want(&["alternateRefsCommand"]),
        || {
            env.git_output(
                &pusher,
                &[
                    "push",
                    "-q",
                    repo.to_str().expect("utf8"),
                    "HEAD:refs/heads/from-alternate",
                ],
            );
        },
    ));
    std::fs::remove_file(&alternates).expect("alternates");
    all
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

    // Every plant is live: the git CLI fires each in the same repository,
    // the hooks of core.hooksPath first, then those of .git/hooks.
    let mut fired = every_key_fires(&env, &repo, &upstream, &planted);
    fired.extend(every_hook_fires(&env, &repo, &planted, "hookspath-"));
    test_side_git(&env, &repo, &["config", "--unset", "core.hooksPath"]);
    fired.extend(every_hook_fires(&env, &repo, &planted, "hook-"));
    let never: Vec<&String> = planted.marks.difference(&fired).collect();
    assert!(never.is_empty(), "plants no git command fired: {never:?}");
}
