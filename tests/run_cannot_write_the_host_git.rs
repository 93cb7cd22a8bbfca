//! Safety rule 2: no run can write the host's `.git` or `.slipway/`, in any
//! sandbox. The agent's git works in a private git dir; only the run's branch
//! comes back, object by object, hashed again, by compare-and-swap. Each test
//! is an attack an agent could write, run in the sandboxes where it applies,
//! and then the same checks: the host repository exists whole, `git fsck` is
//! clean, every commit reachable before is reachable after, every other ref
//! is as it was, no file outside the worktree changed, the user's own `git
//! status`, `git commit` and `git log` (in the host and in a kept worktree)
//! run no program the agent planted, and no host file's content reached the
//! agent.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// The sandboxes to attack from (the docker one needs the engine and test image).
fn every_sandbox() -> [Sandbox; 2] {
    require_docker_image();
    [Sandbox::Host, Sandbox::Docker]
}

/// A host repository with a sibling worktree, a secret file beside it, and
/// a folder the planted programs would leave their marks in.
struct World {
    env: TestEnv,
    repo: PathBuf,
    sentinels: PathBuf,
    secret: PathBuf,
    sibling: PathBuf,
}

const SECRET: &str = "s3cr3t-host-file-content-9f2c";

impl World {
    fn new() -> World {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        env.commit_file(&repo, "src/lib.txt", "one\n", "second commit");
        env.git(&repo, &["tag", "-a", "v1", "-m", "release one"]);
        env.git(&repo, &["branch", "keep"]);
        let sentinels = env.path().join("sentinels");
        std::fs::create_dir_all(&sentinels).expect("sentinels");
        let secret = env.path().join("secret.txt");
        std::fs::write(&secret, SECRET).expect("secret");
        let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "sibling"]);
        let sibling = PathBuf::from(s(&created, "path"));
        World {
            env,
            repo,
            sentinels,
            secret,
            sibling,
        }
    }

    /// A program that leaves a mark when something runs it.
    fn planted(&self, name: &str) -> String {
        format!("touch {}/{name}", self.sentinels.display())
    }

    /// Runs `script` as the agent. As its last step the agent clears the
    /// marks its own git left (a host process runs what it plants itself; in
    /// a container the sentinels' folder does not exist): every mark found
    /// after the run was left by something that ran once the agent was done,
    /// slipway's import, merge or close among them.
    fn run(&self, sandbox: Sandbox, extra: &[&str], script: &str) -> (bool, Value, String) {
        let script = format!(
            "( {script}\n); status=$?; rm -f '{}'/*; exit $status",
            self.sentinels.display()
        );
        let mut args = vec!["--json", "run"];
        args.extend(sandbox.args());
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", &script]);
        self.env.run_result(&self.repo, &args)
    }

    fn ok_run(&self, sandbox: Sandbox, extra: &[&str], script: &str) -> (Value, String) {
        let (ok, result, log) = self.run(sandbox, extra, script);
        assert!(ok, "{sandbox:?}: the run failed: {result}\n{log}");
        (result, log)
    }
}

/// What must not change: every ref but the run's branch, the commits
/// reachable, and every file outside the run's worktree.
struct Before {
    refs: BTreeMap<String, String>,
    reachable: BTreeSet<String>,
    files: BTreeMap<PathBuf, Vec<u8>>,
    head_run: bool,
}

fn refs(env: &TestEnv, repo: &Path) -> BTreeMap<String, String> {
    env.git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect()
}

fn reachable(env: &TestEnv, repo: &Path) -> BTreeSet<String> {
    env.git(repo, &["rev-list", "--all"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Every file under `dir`, except what a run legitimately changes: the
/// repository's `.slipway/` (records, logs, the run's worktree), its object
/// store, refs and reflogs (checked apart), index files, and the sentinels.
/// Linked worktrees' admin dirs are checked where a test needs them (closing
/// a worktree removes its own), and for `head` runs the host checkout is the
/// run's worktree.
fn files(world: &World, head_run: bool) -> BTreeMap<PathBuf, Vec<u8>> {
    let git = world.repo.join(".git");
    let skipped = [
        world.repo.join(".slipway"),
        git.join("objects"),
        git.join("refs"),
        git.join("logs"),
        git.join("packed-refs"),
        git.join("index"),
        git.join("ORIG_HEAD"),
        git.join("worktrees"),
        world.sentinels.clone(),
        world.env.path().join("home"),
    ];
    let mut out = BTreeMap::new();
    let mut todo = vec![world.env.path().to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if skipped.iter().any(|s| path.starts_with(s)) {
                continue;
            }
            if head_run && path.starts_with(&world.repo) && !path.starts_with(&git) {
                continue;
            }
            let meta = path.symlink_metadata().expect("meta");
            if meta.is_dir() {
                todo.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                out.insert(path, target.into_os_string().into_encoded_bytes());
            } else {
                out.insert(path.clone(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

impl Before {
    fn take(world: &World) -> Before {
        Before::take_for(world, false)
    }

    /// Before a `head` run, whose worktree is the host checkout itself.
    fn take_for(world: &World, head_run: bool) -> Before {
        Before {
            refs: refs(&world.env, &world.repo),
            reachable: reachable(&world.env, &world.repo),
            files: files(world, head_run),
            head_run,
        }
    }

    /// The checks every attack ends with. `run_refs` are the refs the run may
    /// move or create (its branch, its side branch); `kept` is a worktree the
    /// run left, where the user's git is tried too.
    fn check(&self, world: &World, run_refs: &[&str], kept: Option<&Path>, log: &str) {
        let (env, repo) = (&world.env, &world.repo);
        assert!(
            repo.join(".git/HEAD").is_file(),
            "the host repository is gone"
        );
        assert!(
            repo.join(".git/config").is_file(),
            "the host config is gone"
        );
        assert!(
            repo.join("README.md").is_file(),
            "the host checkout lost files"
        );
        let fsck = env.git_output(repo, &["fsck", "--no-progress"]);
        assert!(
            fsck.status.success(),
            "git fsck fails after the run:\n{}{}",
            String::from_utf8_lossy(&fsck.stdout),
            String::from_utf8_lossy(&fsck.stderr)
        );
        let now = reachable(env, repo);
        let lost: Vec<&String> = self.reachable.difference(&now).collect();
        assert!(lost.is_empty(), "commits no longer reachable: {lost:?}");
        let mut refs_now = refs(env, repo);
        refs_now.retain(|name, _| !run_refs.iter().any(|r| name.starts_with(r)));
        let mut refs_before = self.refs.clone();
        refs_before.retain(|name, _| !run_refs.iter().any(|r| name.starts_with(r)));
        assert_eq!(refs_now, refs_before, "a ref other than the run's moved");
        let after = files(world, self.head_run);
        let changed: Vec<&PathBuf> = self
            .files
            .iter()
            .filter(|(p, bytes)| after.get(*p) != Some(bytes))
            .map(|(p, _)| p)
            .chain(after.keys().filter(|p| !self.files.contains_key(*p)))
            .collect();
        assert!(
            changed.is_empty(),
            "files outside the worktree changed: {changed:?}"
        );
        assert!(
            !log.contains(SECRET),
            "a host file's content reached the agent:\n{log}"
        );
        let marks = marks(world);
        assert!(
            marks.is_empty(),
            "programs the agent planted ran after it was done (slipway's import, merge or close ran them): {marks:?}"
        );
        user_git_runs_nothing(world, repo);
        if let Some(kept) = kept {
            user_git_runs_nothing(world, kept);
        }
    }
}

/// The marks planted programs left so far.
fn marks(world: &World) -> Vec<String> {
    std::fs::read_dir(&world.sentinels)
        .expect("sentinels")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The user's own `git status`, `git log` and `git commit` in `dir`, after
/// which no planted program may have left a mark.
fn user_git_runs_nothing(world: &World, dir: &Path) {
    let env = &world.env;
    for args in [
        &["status"][..],
        &["status", "--porcelain", "--ignore-submodules=none"],
        &["log", "-1", "--stat"],
        &["diff"],
        &["commit", "-q", "--allow-empty", "-m", "the user's commit"],
    ] {
        // Whatever git answers, only what it ran matters here.
        let _ = env.git_output(dir, args);
    }
    let marks = marks(world);
    assert!(
        marks.is_empty(),
        "the user's git in {} ran programs the agent planted: {marks:?}",
        dir.display()
    );
}

fn worktree_id(world: &World, branch: &str) -> String {
    let list = world.env.slipway_json(&world.repo, &["worktree", "list"]);
    list["worktrees"]
        .as_array()
        .or_else(|| list.as_array())
        .expect("worktrees")
        .iter()
        .find(|w| w["branch"] == branch)
        .map(|w| s(w, "id").to_owned())
        .unwrap_or_else(|| panic!("no worktree for {branch}: {list}"))
}

#[test]
fn swapping_the_admin_dir_cannot_make_close_delete_the_host_repository() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        let created = env.slipway_json(repo, &["worktree", "create", "--branch", "victim"]);
        let id = s(&created, "id").to_owned();
        let admin = repo.join(".git/worktrees").join(&id);
        let before = Before::take(&world);
        // Swap the admin dir so its `gitdir` names the host's `.git`, and
        // (from a container) point the worktree's own `.git` at the host
        // repository. A host process that rewrites `.git` to name the host's
        // git dir is running `git --git-dir=<host>` by another name: the host
        // sandbox is no boundary for that, and it is attacked from containers.
        let repoint = match sandbox {
            Sandbox::Docker => format!(
                "printf 'gitdir: {}\\n' > .git && echo dotgit-rewritten; ",
                repo.join(".git").display()
            ),
            Sandbox::Host => String::new(),
        };
        let script = format!(
            "A='{admin}'; mv \"$A\" \"$A.old\" && echo swapped; mkdir -p \"$A\"; \
             echo '{git}' > \"$A/gitdir\"; echo '../..' > \"$A/commondir\"; \
             echo 'ref: refs/heads/main' > \"$A/HEAD\"; {repoint}\
             echo work > w.txt; git add w.txt; git commit -qm work; true",
            admin = admin.display(),
            git = repo.join(".git").display()
        );
        let (ok, result, log) = world.run(sandbox, &["--worktree", &id], &script);
        if sandbox == Sandbox::Docker {
            assert!(ok, "{result}\n{log}");
            assert!(
                !log.contains("swapped"),
                "the admin dir is not in the container:\n{log}"
            );
            assert!(
                !log.contains("dotgit-rewritten"),
                ".git is read-only inside:\n{log}"
            );
        }
        let closed = env.slipway(repo, &["--json", "worktree", "close", "victim", "--force"]);
        eprintln!(
            "[{sandbox:?}] close: {}{}",
            String::from_utf8_lossy(&closed.stdout),
            String::from_utf8_lossy(&closed.stderr)
        );
        assert!(closed.status.success());
        if sandbox == Sandbox::Docker {
            assert!(
                !PathBuf::from(s(&created, "path")).exists(),
                "the worktree is removed"
            );
        }
        // On the host the agent is an ordinary process and really swapped
        // the admin dir: put it back the way `git worktree repair` would, so
        // the checks below see the user's repository, not the agent's swap.
        if admin.with_extension("old").exists() {
            match std::fs::remove_dir_all(&admin) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{e}"),
                _ => {}
            }
            std::fs::rename(admin.with_extension("old"), &admin).expect("restore");
        }
        before.check(&world, &["refs/heads/victim"], None, &log);
        assert!(
            world.sibling.join("README.md").is_file(),
            "the sibling worktree lost files"
        );
    }
}

#[test]
fn planted_commondir_modules_config_and_config_worktree_run_nothing() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let before = Before::take(&world);
        let common = world.repo.join(".git");
        // The host's own `.git` is attacked from containers only: a host
        // process can write anywhere the user can.
        let direct = match sandbox {
            Sandbox::Docker => format!(
                "for f in '{host}/config' '{host}/hooks/pre-commit' '{host}/commondir' '{host}/config.worktree'; do \
                 echo x >> \"$f\" 2>/dev/null && echo wrote-host-$f; done\n",
                host = common.display()
            ),
            Sandbox::Host => String::new(),
        };
        // A `commondir` file sends git's ref writes wherever it names (even
        // with GIT_COMMON_DIR set), so a host process could reach the host's
        // refs with it; in a container the path names nothing. Planted last:
        // the agent's own git stops working after it.
        let commondir = match sandbox {
            Sandbox::Docker => format!("echo '{}' > \"$C/commondir\"\n", common.display()),
            Sandbox::Host => String::new(),
        };
        let script = format!(
            "D=$(git rev-parse --git-dir); C=$(git rev-parse --git-common-dir)\n\
             echo \"$D\" \"$C\"\n\
             mkdir -p \"$C/modules/sub\" && printf '[core]\\n\\tfsmonitor = {fs1}\\n' > \"$C/modules/sub/config\"\n\
             git config extensions.worktreeConfig true\n\
             printf '[core]\\n\\tfsmonitor = {fs2}\\n' > \"$D/config.worktree\"\n\
             git config core.fsmonitor '{fs3}'; git config core.hooksPath \"$C/hooks\"\n\
             mkdir -p \"$C/hooks\"; for h in pre-commit post-commit post-checkout reference-transaction; do \
               printf '#!/bin/sh\\n{hook}-'$h'\\n' > \"$C/hooks/$h\"; chmod +x \"$C/hooks/$h\"; done\n\
             {direct}\
             mkdir -p sub && (cd sub && unset GIT_DIR GIT_WORK_TREE; \
               git init -q && git config core.fsmonitor '{fs4}' && \
               echo s > s.txt && git add s.txt && git -c core.hooksPath=/dev/null commit -qm sub)\n\
             printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules\n\
             git add .gitmodules sub 2>/dev/null; git -c core.hooksPath=/dev/null commit -qm 'add a submodule'\n\
             echo left > uncommitted.txt\n{commondir}",
            fs1 = world.planted("fsmonitor-modules"),
            fs2 = world.planted("fsmonitor-config-worktree"),
            fs3 = world.planted("fsmonitor-config"),
            fs4 = world.planted("fsmonitor-nested"),
            hook = world.planted("hook"),
        );
        let (result, log) = world.ok_run(sandbox, &["--branch", "agent/planted"], &script);
        assert!(
            !log.contains("wrote-host-"),
            "{sandbox:?} wrote the host's .git:\n{log}"
        );
        for file in ["commondir", "config.worktree", "modules"] {
            assert!(
                !common.join(file).exists(),
                "{sandbox:?} planted {file} in the host"
            );
        }
        let kept = PathBuf::from(s(&result, "preservedWorktreePath"));
        let quarantined = result["quarantined"].as_array().expect("quarantined");
        assert!(
            quarantined
                .iter()
                .any(|q| q["path"] == "sub/.git" && q["finding"] == "nestedGit"),
            "{sandbox:?}: the nested repository is moved aside: {quarantined:?}"
        );
        assert!(
            quarantined.iter().any(|q| q["finding"] == "newGitlink"),
            "{sandbox:?}: the new gitlink is reported: {quarantined:?}\n{log}"
        );
        assert!(!kept.join("sub/.git").exists());
        before.check(&world, &["refs/heads/agent/planted"], Some(&kept), &log);
    }
}

#[test]
fn objects_cannot_be_deleted_or_replaced() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        let readme_blob = env.rev(repo, "HEAD:README.md");
        let before = Before::take(&world);
        // Try the host's store directly, then commit a blob and swap another
        // object's content in under its name in the private store.
        // A host process can write anywhere the user can (the host sandbox is
        // no boundary): the host's own store is attacked from containers only.
        let direct = match sandbox {
            Sandbox::Docker => format!(
                "H='{}'; chmod -R u+w \"$H\" 2>/dev/null; rm -f \"$H\"/*/* 2>/dev/null; \
                 for f in \"$H\"/*/*; do echo evil > \"$f\" 2>/dev/null && echo replaced-host-object; done\n",
                repo.join(".git/objects").display()
            ),
            Sandbox::Host => String::new(),
        };
        let script = format!(
            "{direct}real=$(echo 'the real content' | git hash-object -w --stdin)\n\
             other=$(echo 'something else entirely' | git hash-object -w --stdin)\n\
             O=$(git rev-parse --git-path objects)\n\
             echo 'the real content' > real.txt; git add real.txt; git commit -qm 'commit the real blob'\n\
             chmod u+w \"$O/${{real%${{real#??}}}}/${{real#??}}\"\n\
             cp \"$O/${{other%${{other#??}}}}/${{other#??}}\" \"$O/${{real%${{real#??}}}}/${{real#??}}\" && echo swapped\n"
        );
        let (ok, result, log) = world.run(sandbox, &["--branch", "agent/objects"], &script);
        assert!(
            !ok,
            "{sandbox:?}: a run whose objects lie must not complete: {result}"
        );
        assert!(
            log.contains("swapped"),
            "{sandbox:?}: the swap happened:\n{log}"
        );
        assert_eq!(result["error"]["kind"], "importRefused", "{result}");
        assert_eq!(
            env.rev(repo, "agent/objects"),
            env.rev(repo, "main"),
            "the branch did not move to a commit with a lying object"
        );
        if sandbox == Sandbox::Docker {
            assert_eq!(env.git(repo, &["cat-file", "-t", &readme_blob]), "blob");
            assert!(!log.contains("replaced-host-object"), "{log}");
        }
        before.check(&world, &["refs/heads/agent/objects"], None, &log);
    }
}

#[test]
fn shallow_and_another_worktrees_head_stay_as_they_are() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        let sibling_id = worktree_id(&world, "sibling");
        let sibling_head = repo.join(".git/worktrees").join(&sibling_id).join("HEAD");
        let head_before = std::fs::read(&sibling_head).expect("sibling HEAD");
        let history = env.git(repo, &["rev-list", "--count", "HEAD"]);
        let before = Before::take(&world);
        let direct = match sandbox {
            Sandbox::Docker => format!(
                "git rev-parse HEAD > '{host}/shallow' 2>/dev/null && echo host-shallow; \
                 echo 'ref: refs/heads/main' > '{sib}' 2>/dev/null && echo moved-sibling; \
                 git -C '{sibpath}' checkout -q -b evil 2>/dev/null && echo switched-sibling; ",
                host = repo.join(".git").display(),
                sib = sibling_head.display(),
                sibpath = world.sibling.display()
            ),
            Sandbox::Host => String::new(),
        };
        let script = format!(
            "git update-ref refs/heads/sibling HEAD~1; \
             D=$(git rev-parse --git-dir); git rev-parse HEAD > \"$D/shallow\"; {direct}\
             echo x > x.txt; git add x.txt; git commit -qm x; true"
        );
        let (result, log) = world.ok_run(sandbox, &["--branch", "agent/shallow"], &script);
        assert!(
            !repo.join(".git/shallow").exists(),
            "{sandbox:?}: the host became shallow"
        );
        assert_eq!(env.git(repo, &["rev-list", "--count", "HEAD"]), history);
        assert!(
            !log.contains("host-shallow") && !log.contains("moved-sibling"),
            "{log}"
        );
        assert!(!log.contains("switched-sibling"), "{log}");
        assert_eq!(std::fs::read(&sibling_head).expect("HEAD"), head_before);
        let ignored: Vec<&str> = result["refsIgnored"]
            .as_array()
            .expect("refsIgnored")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(ignored.contains(&"refs/heads/sibling"), "{result}");
        before.check(&world, &["refs/heads/agent/shallow"], None, &log);
    }
}

#[test]
fn refs_the_agent_moves_stay_in_its_private_git_dir_and_are_listed() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        let before = Before::take(&world);
        let script = "set -e\necho work > work.txt\ngit add work.txt\ngit commit -qm 'own work'\n\
                      git update-ref refs/heads/main HEAD\ngit tag v9\ngit update-ref -d refs/heads/keep\n\
                      git branch stray\ngit update-ref refs/tags/v1 HEAD\n";
        let (result, log) = world.ok_run(sandbox, &["--branch", "agent/task"], script);
        assert_eq!(env.rev(repo, "agent/task"), commit_shas(&result)[0]);
        let mut ignored: Vec<String> = result["refsIgnored"]
            .as_array()
            .expect("refsIgnored")
            .iter()
            .map(|c| c["name"].as_str().expect("name").to_owned())
            .collect();
        ignored.sort();
        assert_eq!(
            ignored,
            [
                "refs/heads/keep",
                "refs/heads/main",
                "refs/heads/stray",
                "refs/tags/v1",
                "refs/tags/v9"
            ],
            "{sandbox:?}"
        );
        before.check(&world, &["refs/heads/agent/task"], None, &log);
    }
}

#[test]
fn a_well_behaved_run_lists_no_ignored_ref() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let before = Before::take(&world);
        let (result, log) = world.ok_run(
            sandbox,
            &["--branch", "polite"],
            "set -e\necho y > y.txt\ngit add y.txt\ngit commit -qm polite\n",
        );
        assert_eq!(result["refsIgnored"], serde_json::json!([]));
        // Nor anything quarantined: the worktree's .git file, pointed at the
        // private git dir for the run, comes back byte for byte.
        assert_eq!(
            result["quarantined"],
            serde_json::json!([]),
            "{sandbox:?}: {result}"
        );
        assert_eq!(commit_shas(&result).len(), 1);
        before.check(&world, &["refs/heads/polite"], None, &log);
    }
}

#[test]
fn the_head_strategy_moves_only_the_hosts_branch() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        let before = Before::take_for(&world, true);
        let (result, log) = world.ok_run(
            sandbox,
            &["--strategy", "head"],
            "set -e\necho x > x.txt\ngit add x.txt\ngit commit -qm 'agent on HEAD'\ngit update-ref refs/heads/keep HEAD\n",
        );
        assert_eq!(env.rev(repo, "main"), commit_shas(&result)[0]);
        assert_eq!(
            env.porcelain(repo),
            "",
            "{sandbox:?}: the index follows the new commit"
        );
        assert_eq!(result["refsIgnored"][0]["name"], "refs/heads/keep");
        before.check(&world, &["refs/heads/main"], None, &log);
    }
}

#[test]
fn a_stray_process_left_in_a_long_lived_sandbox_moves_nothing_on_the_host() {
    require_docker_image();
    let world = World::new();
    let (env, repo) = (&world.env, &world.repo);
    env.slipway_json(repo, &["worktree", "create", "--branch", "long"]);
    let sandbox = env.slipway_json(
        repo,
        &[
            "sandbox",
            "create",
            "--worktree",
            "long",
            "--sandbox",
            "docker",
            "--image",
            TEST_IMAGE,
            "--network",
            "none",
        ],
    );
    let id = s(&sandbox, "id").to_owned();
    let before = Before::take(&world);
    // The stray acts once the run is over and imported: when the test says
    // go (a file in the container's /tmp), then says it is done.
    let wait_for_go = "until [ -e /tmp/go ]; do sleep 0.05; done"; // allow-sleep: the stray polls for the test's go signal
    let script = format!(
        "set -e\necho a > a.txt; git add a.txt; git commit -qm a\n\
         setsid sh -c '{wait_for_go}; \
         git update-ref refs/heads/main HEAD; git tag evil; \
         echo b > b.txt; git add b.txt; git commit -qm stray; echo stray-done > /tmp/done' \
         </dev/null >/dev/null 2>&1 &\n"
    );
    let result = env.slipway_json(
        repo,
        &["run", "--in-sandbox", &id, "--", "sh", "-c", &script],
    );
    let first = commit_shas(&result);
    assert_eq!(first.len(), 1);
    let stray = env.slipway(
        repo,
        &[
            "sandbox",
            "exec",
            &id,
            "--",
            "timeout",
            "60",
            "sh",
            "-c",
            "touch /tmp/go; until [ -e /tmp/done ]; do sleep 0.05; done; cat /tmp/done", // allow-sleep: polls for the stray's own end
        ],
    );
    assert!(
        stray.status.success() && String::from_utf8_lossy(&stray.stdout).contains("stray-done"),
        "the stray did not finish its writes within 60 s: {}{}",
        String::from_utf8_lossy(&stray.stdout),
        String::from_utf8_lossy(&stray.stderr)
    );
    assert_eq!(
        env.rev(repo, "long"),
        first[0],
        "the stray's commit stays private"
    );
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    before.check(&world, &["refs/heads/long"], None, &log);
    // The next run starts from the host's refs again: the stray's private
    // commit and tag are gone with the private dir's reset.
    let next = env.slipway_json(
        repo,
        &[
            "run",
            "--in-sandbox",
            &id,
            "--",
            "sh",
            "-c",
            "git log --oneline | head -3",
        ],
    );
    assert_eq!(next["status"], "completed");
    assert!(
        env.git_output(repo, &["rev-parse", "-q", "--verify", "refs/tags/evil"])
            .stdout
            .is_empty()
    );
    env.slipway_json(repo, &["sandbox", "close", &id]);
}

#[test]
fn a_lock_left_by_the_agent_cannot_make_the_merge_undo_the_users_edit() {
    for sandbox in every_sandbox() {
        let world = World::new();
        let (env, repo) = (&world.env, &world.repo);
        std::fs::write(repo.join("src/lib.txt"), "one\nthe user's unstaged edit\n").expect("edit");
        let before_main = env.rev(repo, "main");
        let direct = match sandbox {
            Sandbox::Docker => format!(
                "touch '{}/refs/heads/main.lock' 2>/dev/null && echo locked-host || true\n",
                repo.join(".git").display()
            ),
            Sandbox::Host => String::new(),
        };
        let script = format!(
            "set -e\necho a > agent.txt; git add agent.txt; git commit -qm agent\n\
             touch \"$(git rev-parse --git-common-dir)/refs/heads/main.lock\"\n{direct}"
        );
        let (result, log) = world.ok_run(sandbox, &["--strategy", "merge-to-head"], &script);
        assert!(!log.contains("locked-host"), "{log}");
        assert!(!repo.join(".git/refs/heads/main.lock").exists());
        assert_eq!(result["merge"]["kind"], "fastForward", "{result}");
        assert_ne!(env.rev(repo, "main"), before_main);
        assert_eq!(
            std::fs::read_to_string(repo.join("src/lib.txt")).expect("lib"),
            "one\nthe user's unstaged edit\n",
            "{sandbox:?}: the user's edit survives"
        );
        assert!(repo.join("agent.txt").is_file());
    }
}

#[test]
fn symlinked_git_files_never_bring_a_host_file_into_the_container() {
    require_docker_image();
    let world = World::new();
    let (env, repo) = (&world.env, &world.repo);
    let secret = world.secret.display().to_string();
    // Run one plants symlinks where slipway reads or mounts things; run two
    // (same branch, same worktree) and a long-lived sandbox look for them.
    let plant = format!(
        "D=$(git rev-parse --git-dir); for f in index commondir gitdir HEAD config packed-refs; do \
         ln -sf '{secret}' \"$D/$f.x\" 2>/dev/null; done; ln -sf '{secret}' \"$D/index\" 2>/dev/null; \
         ln -sf '{secret}' leak; mkdir -p d; ln -sf ../../../secret.txt d/up; \
         echo w > w.txt; git add w.txt; git commit -qm w; true"
    );
    let (first, log1) = world.ok_run(Sandbox::Docker, &["--branch", "agent/links"], &plant);
    let moved: Vec<&str> = first["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .filter(|q| q["finding"] == "escapingSymlink")
        .filter_map(|q| q["path"].as_str())
        .collect();
    assert!(
        moved.contains(&"leak") && moved.contains(&"d/up"),
        "{first}"
    );
    let look = "D=$(git rev-parse --git-dir); cat \"$D\"/* 2>/dev/null; cat leak d/up 2>/dev/null; \
                cat /slipway/*/git/* 2>/dev/null; git status --porcelain; true";
    let (_, log2) = world.ok_run(Sandbox::Docker, &["--branch", "agent/links"], look);
    assert!(!log1.contains(SECRET) && !log2.contains(SECRET), "{log2}");
    let sandbox = env.slipway_json(
        repo,
        &[
            "sandbox",
            "create",
            "--worktree",
            "agent/links",
            "--sandbox",
            "docker",
            "--image",
            TEST_IMAGE,
            "--network",
            "none",
        ],
    );
    let id = s(&sandbox, "id").to_owned();
    for script in [plant.as_str(), look] {
        let result = env.slipway_json(
            repo,
            &["run", "--in-sandbox", &id, "--", "sh", "-c", script],
        );
        let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
        assert!(
            !log.contains(SECRET),
            "the long-lived sandbox saw a host file:\n{log}"
        );
    }
    env.slipway_json(repo, &["sandbox", "close", &id]);
    assert_eq!(
        std::fs::read_to_string(&world.secret).expect("secret"),
        SECRET
    );
}

#[test]
fn an_isolated_sandbox_cannot_write_outside_the_worktree() {
    require_docker_image();
    let world = World::new();
    let (env, repo) = (&world.env, &world.repo);
    let hooks = repo.join(".git/hooks");
    let before = Before::take(&world);
    // A committed symlink to the host's hooks, then a folder of the same name
    // holding a hook; an escaping symlink; files under nested `.git` folders.
    let script = format!(
        "set -e\nln -s '{hooks}' evil; git add evil; git commit -qm 'a symlink'\n\
         rm evil; mkdir evil; printf '#!/bin/sh\\n{hook}\\n' > evil/pre-commit; chmod +x evil/pre-commit\n\
         ln -s /etc out\n\
         mkdir -p deep/x; ln -s '{repo}' deep/x/host\n\
         mkdir -p sub/.git/hooks; printf '#!/bin/sh\\n{hook}\\n' > sub/.git/hooks/pre-commit\n",
        hooks = hooks.display(),
        hook = world.planted("isolated-hook"),
        repo = repo.display()
    );
    let out = env
        .slipway_cmd(repo)
        .args([
            "--json",
            "run",
            "--sandbox",
            "docker-isolated",
            "--image",
            TEST_IMAGE,
            "--network",
            "none",
            "--branch",
            "agent/isolated",
            "--",
            "bash",
            "-c",
            &script,
        ])
        .output()
        .expect("slipway runs");
    let result: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no result:\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(
        out.status.success(),
        "{result}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !hooks.join("pre-commit").exists(),
        "a hook was written through the symlink"
    );
    let wt = PathBuf::from(s(&result, "worktreePath"));
    assert!(
        wt.join("evil").symlink_metadata().expect("evil").is_dir(),
        "the returned folder replaced the symlink inside the worktree"
    );
    assert!(wt.join("evil/pre-commit").is_file());
    let findings: Vec<(String, String)> = result["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .map(|q| (s(q, "path").to_owned(), s(q, "finding").to_owned()))
        .collect();
    for (path, finding) in [
        ("out", "escapingSymlink"),
        ("deep/x/host", "escapingSymlink"),
    ] {
        assert!(
            findings.iter().any(|(p, f)| p == path && f == finding),
            "{path} is refused: {findings:?}"
        );
    }
    // git never lists what is inside a nested `.git`, so nothing of it comes
    // back (an archive that holds such paths anyway is refused: see the unit
    // tests of `run::returned`).
    assert!(!wt.join("out").exists() && !wt.join("sub/.git").exists());
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    before.check(&world, &["refs/heads/agent/isolated"], Some(&wt), &log);
}

#[test]
fn a_head_run_in_docker_cannot_rewrite_slipway_records() {
    require_docker_image();
    let world = World::new();
    let (env, repo) = (&world.env, &world.repo);
    let state = repo.join(".slipway/state");
    let records_before: BTreeMap<PathBuf, Vec<u8>> = std::fs::read_dir(&state)
        .expect("state")
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).expect("record")))
        .collect();
    let outside = world.env.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::write(outside.join("keep.txt"), "keep").expect("keep");
    let script = format!(
        "ls -a .slipway; for f in .slipway/state/*.json; do \
           printf '{{\"id\":\"x\",\"path\":\"{out}\"}}' > \"$f\" 2>/dev/null && echo rewrote; done; \
         mkdir -p .slipway/state 2>/dev/null && echo made; rm -rf .slipway/* 2>/dev/null; \
         ls {real} 2>/dev/null && echo saw-real; true",
        out = outside.display(),
        real = state.display()
    );
    let before = Before::take_for(&world, true);
    let (_, log) = world.ok_run(Sandbox::Docker, &["--strategy", "head"], &script);
    assert!(
        !log.contains("rewrote") && !log.contains("saw-real"),
        "{log}"
    );
    let records_after: BTreeMap<PathBuf, Vec<u8>> = std::fs::read_dir(&state)
        .expect("state")
        .flatten()
        .filter(|e| records_before.contains_key(&e.path()))
        .map(|e| (e.path(), std::fs::read(e.path()).expect("record")))
        .collect();
    assert_eq!(records_after, records_before, "a record changed");
    let closed = env.slipway_json_code(repo, &["worktree", "close", "sibling", "--force"], 0);
    assert_eq!(closed["outcome"], "removed", "{closed}");
    assert_eq!(
        std::fs::read_to_string(outside.join("keep.txt")).expect("keep"),
        "keep"
    );
    assert!(!world.sibling.exists());
    before.check(
        &world,
        &["refs/heads/main", "refs/heads/sibling"],
        None,
        &log,
    );
}

#[test]
fn an_altered_record_never_makes_close_delete_another_folder() {
    let world = World::new();
    let (env, repo) = (&world.env, &world.repo);
    let outside = env.path().join("precious");
    std::fs::create_dir_all(&outside).expect("precious");
    std::fs::write(outside.join("data.txt"), "data").expect("data");
    let other_repo = env.new_repo("other");
    let id = worktree_id(&world, "sibling");
    let record_path = repo.join(".slipway/state").join(format!("{id}.json"));
    let original = std::fs::read_to_string(&record_path).expect("record");
    for target in [&outside, &other_repo, repo] {
        let mut record: Value = serde_json::from_str(&original).expect("json");
        record["path"] = Value::String(target.display().to_string());
        std::fs::write(&record_path, record.to_string()).expect("alter");
        // The record is not acted on at all: its path is not the one
        // slipway derives from its id.
        let (_, err) = env.slipway_fail(repo, &["worktree", "close", "sibling", "--force"]);
        assert_eq!(err["kind"], "corruptRecord", "{err}");
        assert!(
            target.join(".").is_dir(),
            "{} was deleted",
            target.display()
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("data.txt")).expect("data"),
        "data"
    );
    assert!(other_repo.join(".git/HEAD").is_file());
    // A repository planted at the worktree's own path is not slipway's either.
    std::fs::write(&record_path, &original).expect("restore");
    std::fs::remove_dir_all(&world.sibling).expect("remove the sibling's folder");
    std::fs::create_dir_all(&world.sibling).expect("folder");
    env.git(&world.sibling, &["init", "-q"]);
    env.commit_file(
        &world.sibling,
        "mine.txt",
        "mine\n",
        "an unrelated repository",
    );
    let closed = env.slipway_json_code(repo, &["worktree", "close", "sibling", "--force"], 3);
    assert_eq!(closed["outcome"], "preserved", "{closed}");
    assert!(world.sibling.join("mine.txt").is_file());
}
