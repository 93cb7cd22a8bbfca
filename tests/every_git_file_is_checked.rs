//! Safety rule 7: every git file in the checkout is checked, not only the
//! top-level one. The gitfiles of submodules and the `.git` folders of
//! nested repositories are read before a run and again after it, in every
//! strategy: a new one is quarantined, a changed gitfile is put back as it
//! was (the changed one kept in quarantine), and a nested `.git` folder whose
//! config, hooks, attributes or alternates changed is quarantined whole. The
//! user's own `git status` afterwards runs nothing the agent planted.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

struct World {
    env: TestEnv,
    repo: PathBuf,
    marks: PathBuf,
}

impl World {
    /// A repository with a real submodule `sub` (its gitfile names
    /// `.git/modules/sub`) and an ignored vendored repository `vendor/lib`.
    fn new() -> World {
        let env = TestEnv::new();
        let lib = env.new_repo("lib");
        let repo = env.new_repo("repo");
        env.git(
            &repo,
            &["submodule", "add", "-q", lib.to_str().expect("utf8"), "sub"],
        );
        std::fs::write(repo.join(".gitignore"), "vendor/\n").expect("ignore");
        env.git(&repo, &["add", ".gitignore"]);
        env.git(&repo, &["commit", "-qm", "add a submodule"]);
        let vendored = repo.join("vendor/lib");
        std::fs::create_dir_all(&vendored).expect("vendor");
        env.git(&vendored, &["init", "-q"]);
        env.commit_file(&vendored, "v.txt", "v\n", "vendored");
        let marks = env.path().join("marks");
        std::fs::create_dir_all(&marks).expect("marks");
        World { env, repo, marks }
    }

    fn plant(&self, name: &str) -> String {
        format!("touch {}/{name}", self.marks.display())
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_dir(&self.marks)
            .expect("marks")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn run(&self, sandbox: Sandbox, strategy: &[&str], script: &str) -> (Value, String) {
        let mut args = vec!["--json", "run"];
        args.extend_from_slice(strategy);
        args.extend(sandbox.args());
        args.extend(["--", "sh", "-c", script]);
        let (ok, result, log) = self.env.run_result(&self.repo, &args);
        assert!(ok, "{sandbox:?} {strategy:?}: {result}\n{log}");
        (result, log)
    }

    /// The user's own git in the checkout and in both inner repositories.
    fn users_git(&self, checkout: &Path) {
        self.env.git(checkout, &["status", "--porcelain"]);
        if checkout.join("vendor/lib").is_dir() {
            self.env
                .git(&checkout.join("vendor/lib"), &["status", "--porcelain"]);
        }
        self.env
            .git(&checkout.join("sub"), &["status", "--porcelain"]);
    }
}

fn quarantined(result: &Value) -> Vec<(String, String)> {
    result["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .map(|q| (s(q, "path").to_owned(), s(q, "detail").to_owned()))
        .collect()
}

#[test]
fn a_submodules_gitfile_the_run_repoints_is_put_back_in_every_sandbox() {
    require_docker_image();
    for sandbox in [Sandbox::Host, Sandbox::Docker] {
        let world = World::new();
        let before = std::fs::read(world.repo.join("sub/.git")).expect("gitfile");
        let script = format!(
            // (A `head` run on the host has GIT_DIR in its environment.)
            "set -e\nenv -u GIT_DIR -u GIT_WORK_TREE git init -q --bare .cache/evil\n\
             printf '[core]\\n\\tfsmonitor = {}\\n' >> .cache/evil/config\n\
             printf 'gitdir: ../.cache/evil\\n' > sub/.git\necho REPOINTED\n",
            world.plant("fsmonitor")
        );
        let (result, log) = world.run(sandbox, &["--strategy", "head"], &script);
        assert!(log.contains("REPOINTED"), "{sandbox:?}: {log}");
        assert_eq!(
            std::fs::read(world.repo.join("sub/.git")).expect("gitfile"),
            before,
            "{sandbox:?}: the submodule's gitfile is as before"
        );
        let found = quarantined(&result);
        assert!(
            found
                .iter()
                .any(|(p, d)| p == "sub/.git" && d.contains("put back")),
            "{sandbox:?}: reported {found:?}"
        );
        world.users_git(&world.repo);
        assert!(
            world.marks().is_empty(),
            "{sandbox:?}: {:?} ran",
            world.marks()
        );
    }
}

#[test]
fn a_vendored_repository_whose_config_or_hooks_the_run_changes_is_quarantined() {
    require_docker_image();
    for (sandbox, change) in [
        (
            Sandbox::Host,
            "git --git-dir=vendor/lib/.git config core.fsmonitor 'MARK'",
        ),
        (
            Sandbox::Docker,
            "printf '#!/bin/sh\\nMARK\\n' > vendor/lib/.git/hooks/pre-commit; chmod +x vendor/lib/.git/hooks/pre-commit",
        ),
        (
            Sandbox::Host,
            "printf '* filter=x\\n' > vendor/lib/.git/info/attributes",
        ),
    ] {
        let world = World::new();
        let change = change.replace("MARK", &world.plant("vendored"));
        let (result, log) = world.run(
            sandbox,
            &["--strategy", "head"],
            &format!("{change}\necho CHANGED"),
        );
        assert!(log.contains("CHANGED"), "{sandbox:?}: {log}");
        let found = quarantined(&result);
        assert!(
            found
                .iter()
                .any(|(p, d)| p == "vendor/lib/.git" && d.contains("changed")),
            "{sandbox:?} {change}: reported {found:?}"
        );
        assert!(!world.repo.join("vendor/lib/.git").exists(), "moved aside");
        world.users_git(&world.repo);
        world.env.git(
            &world.repo.join("vendor/lib"),
            &["commit", "--allow-empty", "-qm", "x"],
        );
        assert!(
            world.marks().is_empty(),
            "{sandbox:?}: {:?} ran",
            world.marks()
        );
    }
}

#[test]
fn new_git_files_below_a_worktree_are_quarantined_in_every_strategy() {
    require_docker_image();
    for sandbox in [Sandbox::Host, Sandbox::Docker] {
        for strategy in [&["--branch", "agent/nested"][..], &["--strategy", "head"]] {
            let world = World::new();
            let script = format!(
                "mkdir -p deep/er && \
                 printf 'gitdir: /tmp/evil\\n' > deep/er/.git && mkdir -p x/.GIT && \
                 printf '[core]\\n\\tfsmonitor = {}\\n' > x/.GIT/config && echo PLANTED",
                world.plant("new")
            );
            let (result, log) = world.run(sandbox, strategy, &script);
            assert!(log.contains("PLANTED"), "{log}");
            let paths: Vec<String> = quarantined(&result).into_iter().map(|(p, _)| p).collect();
            for planted in ["deep/er/.git", "x/.GIT"] {
                assert!(
                    paths.contains(&planted.to_owned()),
                    "{sandbox:?} {strategy:?}: {paths:?}"
                );
            }
            let checkout = PathBuf::from(s(&result, "worktreePath"));
            assert!(!checkout.join("deep/er/.git").exists() && !checkout.join("x/.GIT").exists());
            world.env.git(&checkout, &["status", "--porcelain"]);
            assert!(world.marks().is_empty(), "{:?} ran", world.marks());
        }
    }
}

#[test]
fn git_files_a_run_leaves_alone_are_left_alone() {
    // The control: submodule and vendored repository untouched, nothing reported.
    let world = World::new();
    let before = std::fs::read(world.repo.join("sub/.git")).expect("gitfile");
    let (result, _) = world.run(
        Sandbox::Host,
        &["--strategy", "head"],
        "echo work > work.txt && git -C sub log -1 >/dev/null",
    );
    assert_eq!(
        quarantined(&result),
        Vec::<(String, String)>::new(),
        "{result}"
    );
    assert_eq!(
        std::fs::read(world.repo.join("sub/.git")).expect("gitfile"),
        before
    );
    assert!(world.repo.join("vendor/lib/.git/config").is_file());
    world.users_git(&world.repo);
}
