//! Branch strategies: where the agent's commits land, checked against `git log`,
//! and no `refs/heads` entry left behind that the result does not name.

use crate::common;

use std::path::Path;

use common::*;

const COMMIT_TWICE: &str = "set -e\n\
    echo one >> agent.txt\ngit add agent.txt\ngit commit -qm 'agent: first'\n\
    echo two >> agent.txt\ngit commit -qam 'agent: second'\n";

fn rev_list(env: &TestEnv, repo: &Path, range: &str) -> Vec<String> {
    env.git(repo, &["rev-list", "--reverse", range])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn assert_only_branches(env: &TestEnv, repo: &Path, allowed: &[&str]) {
    for b in env.local_branches(repo) {
        assert!(
            allowed.contains(&b.as_str()),
            "branch {b} was left behind (allowed: {allowed:?})"
        );
    }
}

#[test]
fn head_commits_straight_into_the_host_checkout() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    let agent = env.script("twice", COMMIT_TWICE);
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "head",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(
        commit_shas(&result),
        rev_list(&env, &repo, &format!("{base}..main"))
    );
    assert_eq!(commit_shas(&result).len(), 2);
    assert_eq!(
        s(&result, "worktreePath"),
        repo.canonicalize().expect("canon").to_str().expect("utf8")
    );
    assert!(
        !repo
            .join(".slipway/worktrees")
            .read_dir()
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    );
    assert_only_branches(&env, &repo, &["main"]);
    assert_eq!(
        std::fs::read_to_string(repo.join("agent.txt")).expect("read"),
        "one\ntwo\n"
    );
}

#[test]
fn merge_to_head_fast_forwards_and_cleans_up() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    let agent = env.script("twice", COMMIT_TWICE);
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["status"], "completed");
    assert_eq!(result["merge"]["kind"], "fastForward");
    assert_eq!(
        commit_shas(&result),
        rev_list(&env, &repo, &format!("{base}..main"))
    );
    assert_only_branches(&env, &repo, &["main"]);
    assert!(
        !Path::new(s(&result, "worktreePath")).exists(),
        "the clean worktree is removed"
    );
    assert!(result["preservedWorktreePath"].is_null());
    assert_eq!(
        env.porcelain(&repo),
        "",
        "the host working tree matches its new HEAD"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("agent.txt")).expect("read"),
        "one\ntwo\n"
    );
}

#[test]
fn merge_to_head_creates_a_merge_commit_when_the_host_moved_on() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    env.commit_file(&repo, "host.txt", "host\n", "host moves on");
    let host_tip = env.rev(&repo, "HEAD");
    let agent = env.script("twice", COMMIT_TWICE);
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--ref",
            &base,
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["merge"]["kind"], "merged");
    let merge = s(&result["merge"], "commit");
    assert_eq!(env.rev(&repo, "main"), merge);
    let parents = env.git(&repo, &["log", "-1", "--format=%P", "main"]);
    let shas = commit_shas(&result);
    assert_eq!(parents, format!("{host_tip} {}", shas[1]));
    assert_eq!(shas, rev_list(&env, &repo, &format!("{base}..main^2")));
    assert_only_branches(&env, &repo, &["main"]);
    assert_eq!(env.porcelain(&repo), "");
    assert!(repo.join("host.txt").exists() && repo.join("agent.txt").exists());
}

#[test]
fn merge_to_head_with_uncommitted_leftovers_merges_and_preserves() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "leftover",
        &format!("{COMMIT_TWICE}echo scratch > scratch.txt\n"),
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["merge"]["kind"], "fastForward");
    let preserved = Path::new(s(&result, "preservedWorktreePath"));
    assert!(preserved.join("scratch.txt").exists());
    let branch = s(&result, "branch");
    assert!(
        s(&result, "keptBranch").contains(branch),
        "the kept temp branch is named: {result}"
    );
    assert_only_branches(&env, &repo, &["main", branch]);
}

#[test]
fn branch_lands_on_the_named_branch_and_keeps_the_worktree() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    let agent = env.script("twice", COMMIT_TWICE);
    let first = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "agent/fix-42",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(
        commit_shas(&first),
        rev_list(&env, &repo, &format!("{base}..agent/fix-42"))
    );
    assert_eq!(
        env.rev(&repo, "main"),
        base,
        "the host branch does not move"
    );
    assert_eq!(env.porcelain(&repo), "");
    let path = s(&first, "worktreePath").to_owned();
    assert!(Path::new(&path).is_dir());
    assert_only_branches(&env, &repo, &["main", "agent/fix-42"]);

    // Running again on the same branch re-uses the worktree and adds commits.
    let tip = env.rev(&repo, "agent/fix-42");
    let second = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "agent/fix-42",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(s(&second, "worktreePath"), path);
    assert_eq!(
        commit_shas(&second),
        rev_list(&env, &repo, &format!("{tip}..agent/fix-42"))
    );
    let list = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(list["worktrees"].as_array().expect("list").len(), 1);
}

#[test]
fn a_merge_to_head_worktree_handle_merges_after_each_run_and_keeps_its_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let created = env.slipway_json(&repo, &["worktree", "create", "--merge-to-head"]);
    let id = s(&created, "id").to_owned();
    let temp = s(&created, "branch").to_owned();
    let agent = env.script("once", "set -e\necho \"$SLIPWAY_RUN_ID\" >> runs.txt\ngit add runs.txt\ngit commit -qm \"run $SLIPWAY_RUN_ID\"\n");
    for round in 1..=2 {
        let result = env.slipway_json(
            &repo,
            &[
                "run",
                "--worktree",
                &id,
                "--",
                agent.to_str().expect("utf8"),
            ],
        );
        assert_eq!(commit_shas(&result).len(), 1, "round {round}");
        assert_eq!(
            env.rev(&repo, "main"),
            commit_shas(&result)[0],
            "merged into main after round {round}"
        );
        assert!(
            env.local_branches(&repo).contains(&temp),
            "the source branch is kept for the next call"
        );
        assert_eq!(s(&result, "preservedWorktreePath"), s(&created, "path"));
    }
    let closed = env.slipway_json(&repo, &["worktree", "close", &id]);
    assert_eq!(closed["outcome"], "removed");
    assert_eq!(
        closed["branchDeleted"], true,
        "merged temp branch is deleted on close"
    );
    assert_only_branches(&env, &repo, &["main"]);
}

#[test]
fn a_merge_back_counts_every_commit_that_landed_not_only_the_runs() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let created = env.slipway_json(&repo, &["worktree", "create", "--merge-to-head"]);
    let id = s(&created, "id").to_owned();
    let wt = std::path::PathBuf::from(s(&created, "path"));
    // The person's own commit in the worktree (an interactive session's), then a run.
    let mine = env.commit_file(&wt, "mine.txt", "mine\n", "my commit");
    let agent = env.script(
        "theirs",
        "set -e\necho theirs > theirs.txt\ngit add theirs.txt\ngit commit -qm 'agent commit'\n",
    );
    let agent = agent.to_str().expect("utf8");
    let result = env.slipway_json(&repo, &["run", "--worktree", &id, "--", agent]);
    let run_commits = commit_shas(&result);
    assert_eq!(run_commits.len(), 1, "the run made one: {result}");
    let landed: Vec<&str> = result["mergedCommits"]
        .as_array()
        .unwrap_or_else(|| panic!("mergedCommits in {result}"))
        .iter()
        .map(|c| c["sha"].as_str().expect("sha"))
        .collect();
    assert_eq!(
        landed,
        vec![mine.as_str(), run_commits[0].as_str()],
        "{result}"
    );
    assert_eq!(env.rev(&repo, "main"), run_commits[0], "both are on main");
    let out = env.slipway(&repo, &["run", "--worktree", &id, "--", agent]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("landed:"),
        "only the run's commit this time: {text}"
    );
    env.commit_file(&wt, "more.txt", "more\n", "another of mine");
    let out = env.slipway(
        &repo,
        &[
            "run",
            "--worktree",
            &id,
            "--",
            "sh",
            "-c",
            "echo nothing to do",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("landed: 1 commit in main (1 made before this run)"),
        "{text}"
    );
}

#[test]
fn head_is_not_a_worktree_strategy() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let out = env.slipway(&repo, &["worktree", "create", "--strategy", "head"]);
    assert!(!out.status.success());
    let (_, err) = env.slipway_fail(
        &repo,
        &["run", "--strategy", "head", "--branch", "x", "--", "true"],
    );
    assert_eq!(err["kind"], "invalidParams");
}

#[test]
fn git_a_host_run_starts_elsewhere_is_not_pointed_at_the_runs_git_dir() {
    // A host run in a worktree reaches its private git dir through the
    // worktree's `.git` file, not GIT_DIR/GIT_WORK_TREE: a repository the
    // agent makes in a subfolder, or clones into /tmp, is its own.
    let env = TestEnv::new();
    let upstream = env.new_repo("upstream");
    let upstream_tip = env.rev(&upstream, "HEAD");
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    let clone = env.path().join("elsewhere");
    let script = format!(
        "set -e\n\
         [ -z \"$GIT_DIR\" ] && [ -z \"$GIT_WORK_TREE\" ] && echo NO-GIT-ENV\n\
         git init -q inner && git -C inner commit -q --allow-empty -m 'inner repository'\n\
         git clone -q {up} {clone} && git -C {clone} rev-parse HEAD > cloned.txt\n\
         rm -rf inner; git add cloned.txt; git commit -qm 'what the clone had'\n\
         git rev-parse --git-dir",
        up = upstream.display(),
        clone = clone.display()
    );
    let (ok, result, log) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--branch",
            "agent/elsewhere",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert!(ok, "{result}\n{log}");
    assert!(log.contains("NO-GIT-ENV"), "{log}");
    assert_eq!(
        rev_list(&env, &repo, &format!("{base}..agent/elsewhere")).len(),
        1,
        "only the agent's commit in the worktree is on its branch: {log}"
    );
    assert_eq!(
        env.git(&repo, &["show", "agent/elsewhere:cloned.txt"]),
        upstream_tip,
        "the clone in another folder is a clone of the upstream"
    );
    assert_eq!(env.rev(&clone, "HEAD"), upstream_tip);
    // The worktree's `.git` names its own admin dir again.
    let worktree = Path::new(s(&result, "worktreePath"));
    let dot_git = std::fs::read_to_string(worktree.join(".git")).expect("gitfile");
    assert!(dot_git.contains(".git/worktrees/"), "{dot_git}");
    assert_eq!(
        env.git(worktree, &["rev-parse", "HEAD"]),
        env.rev(&repo, "agent/elsewhere")
    );
}
