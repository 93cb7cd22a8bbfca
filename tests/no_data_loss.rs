//! Safety rule 4: nothing is lost. Every failure path keeps every commit and
//! every uncommitted file, and says where they are.

use crate::common;

use std::path::Path;

use common::*;

fn run_args<'a>(extra: &[&'a str], agent: &'a Path) -> Vec<&'a str> {
    let mut args = vec!["run"];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(agent.to_str().expect("utf8 path"));
    args
}

/// Everything about the host checkout a user could notice.
fn host_state(env: &TestEnv, repo: &Path) -> (String, String, String, Vec<(String, Vec<u8>)>) {
    let head = env.rev(repo, "HEAD");
    let branch = env.git(repo, &["symbolic-ref", "HEAD"]);
    let status = env.porcelain(repo);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(repo).expect("read host") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_file() {
            files.push((
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).expect("read"),
            ));
        }
    }
    files.sort();
    (head, branch, status, files)
}

#[test]
fn failed_run_with_commits_keeps_its_temporary_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "commit-then-fail",
        "set -e\necho one > one.txt\ngit add one.txt\ngit commit -q -m 'agent commit'\nexit 3\n",
    );
    let (result, err) =
        env.slipway_fail(&repo, &run_args(&["--strategy", "merge-to-head"], &agent));
    assert_eq!(err["kind"], "agentFailed");
    let branch = s(&result, "branch").to_owned();
    let commits = commit_shas(&result);
    assert_eq!(commits.len(), 1);
    assert!(s(&result, "keptBranch").contains("git merge"), "{result}");
    assert!(
        env.local_branches(&repo).contains(&branch),
        "the temp branch must be kept"
    );
    assert_eq!(
        env.rev(&repo, &branch),
        commits[0],
        "the kept branch holds the agent's commit"
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", &branch]),
        "agent commit"
    );
    // the host branch did not move
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%s", "main"]),
        "initial commit"
    );
}

#[test]
fn failed_run_without_commits_leaves_no_branch_and_keeps_uncommitted_files() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let clean_fail = env.script("clean-fail", "exit 1\n");
    let (result, err) = env.slipway_fail(
        &repo,
        &run_args(&["--strategy", "merge-to-head"], &clean_fail),
    );
    assert_eq!(err["kind"], "agentFailed");
    assert_eq!(
        env.local_branches(&repo),
        vec!["main".to_owned()],
        "no temporary branch may leak"
    );
    assert!(result["preservedWorktreePath"].is_null());
    assert!(
        !Path::new(s(&result, "worktreePath")).exists(),
        "a clean worktree is removed"
    );

    let dirty_fail = env.script("dirty-fail", "echo 'half done' > wip.txt\nexit 1\n");
    let (result, err) = env.slipway_fail(
        &repo,
        &run_args(&["--strategy", "merge-to-head"], &dirty_fail),
    );
    let preserved = s(&result, "preservedWorktreePath");
    assert_eq!(
        err["data"]["preservedWorktreePath"], preserved,
        "the error carries the path as a plain field"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(preserved).join("wip.txt")).expect("kept"),
        "half done\n"
    );
    let list = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(list["worktrees"][0]["state"], "preserved", "{list}");
}

#[test]
fn merge_conflict_leaves_the_host_exactly_as_it_was() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    env.commit_file(&repo, "README.md", "host version\n", "host edits README");
    std::fs::write(repo.join("untracked-host-note.txt"), "mine\n").expect("write");
    std::fs::write(repo.join("other.txt"), "unstaged\n").expect("write");
    let before = host_state(&env, &repo);
    let agent = env.script(
        "conflicting",
        "set -e\necho 'agent version' > README.md\ngit commit -qam 'agent edits README'\n",
    );
    let (result, err) = env.slipway_fail(
        &repo,
        &run_args(&["--strategy", "merge-to-head", "--ref", &base], &agent),
    );
    assert_eq!(err["kind"], "mergeConflict", "{err}");
    assert!(s(&err, "message").contains("README.md"));
    assert_eq!(
        host_state(&env, &repo),
        before,
        "HEAD, index and working tree must not change"
    );
    assert!(
        !repo.join(".git/MERGE_HEAD").exists(),
        "no merge in progress may be left"
    );
    assert!(
        !std::fs::read_to_string(repo.join("README.md"))
            .expect("read")
            .contains("<<<<<<<")
    );
    let branch = s(&result, "branch");
    assert!(
        env.local_branches(&repo).contains(&branch.to_owned()),
        "the branch is kept"
    );
    assert_eq!(env.rev(&repo, branch), commit_shas(&result)[0]);
}

#[test]
fn host_changes_in_the_way_abort_the_merge_and_keep_everything() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "edits-readme",
        "set -e\necho 'agent version' > README.md\ngit commit -qam 'agent edits README'\n",
    );
    // An unstaged host edit to the file the agent changes.
    std::fs::write(repo.join("README.md"), "my unsaved work\n").expect("write");
    let before = host_state(&env, &repo);
    let (result, err) =
        env.slipway_fail(&repo, &run_args(&["--strategy", "merge-to-head"], &agent));
    assert_eq!(err["kind"], "hostDirty", "{err}");
    assert_eq!(host_state(&env, &repo), before);
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).expect("read"),
        "my unsaved work\n"
    );
    let branch = s(&result, "branch");
    assert_eq!(
        env.rev(&repo, branch),
        commit_shas(&result)[0],
        "the agent's commit is kept on its branch"
    );

    // A staged change to the file the agent changes stops the merge too.
    std::fs::write(repo.join("README.md"), "staged work\n").expect("write");
    env.git(&repo, &["add", "README.md"]);
    let before = host_state(&env, &repo);
    let (_, err) = env.slipway_fail(&repo, &run_args(&["--strategy", "merge-to-head"], &agent));
    assert_eq!(err["kind"], "hostDirty");
    assert_eq!(host_state(&env, &repo), before);
    env.git(&repo, &["reset", "-q", "--hard"]);

    // A staged change the merge does not touch stays staged, exactly.
    std::fs::write(repo.join("staged.txt"), "staged\n").expect("write");
    env.git(&repo, &["add", "staged.txt"]);
    let done = env.slipway_json(&repo, &run_args(&["--strategy", "merge-to-head"], &agent));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        env.git(&repo, &["diff", "--cached", "--name-only"]),
        "staged.txt"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).expect("read"),
        "agent version\n"
    );

    // An untracked host file where the agent adds one is not overwritten.
    env.git(&repo, &["reset", "-q"]);
    std::fs::remove_file(repo.join("staged.txt")).expect("rm");
    let adds = env.script(
        "adds-file",
        "set -e\necho agent > new.txt\ngit add new.txt\ngit commit -qm 'agent adds new.txt'\n",
    );
    std::fs::write(repo.join("new.txt"), "the user's own new.txt\n").expect("write");
    let (_, err) = env.slipway_fail(&repo, &run_args(&["--strategy", "merge-to-head"], &adds));
    assert_eq!(err["kind"], "hostDirty", "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.join("new.txt")).expect("read"),
        "the user's own new.txt\n"
    );
}

#[test]
fn closing_a_dirty_worktree_keeps_every_kind_of_change() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "tracked.txt", "v1\n", "add tracked");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "wip"]);
    let path = Path::new(s(&created, "path")).to_path_buf();
    std::fs::write(path.join("untracked.txt"), "new\n").expect("write");
    std::fs::write(path.join("tracked.txt"), "v2 unstaged\n").expect("write");
    std::fs::write(path.join("staged.txt"), "staged\n").expect("write");
    env.git(&path, &["add", "staged.txt"]);
    let porcelain = env.porcelain(&path);
    let closed = env.slipway_json(&repo, &["worktree", "close", "wip"]);
    assert_eq!(closed["outcome"], "preserved");
    let again = env.slipway_json(&repo, &["worktree", "close", "wip"]);
    assert_eq!(closed, again, "closing again gives the same answer");
    assert_eq!(
        env.porcelain(&path),
        porcelain,
        "every change is still there"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("tracked.txt")).expect("read"),
        "v2 unstaged\n"
    );
}

#[test]
fn a_crash_between_record_and_worktree_loses_nothing() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    // Simulate the half state: the record and branch exist, the worktree does not.
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "half"]);
    let id = s(&created, "id").to_owned();
    let path = Path::new(s(&created, "path")).to_path_buf();
    env.git(
        &path,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "work before the crash",
        ],
    );
    let tip = env.rev(&repo, "half");
    std::fs::remove_dir_all(&path).expect("rm worktree dir");
    env.git(&repo, &["worktree", "prune"]);

    let list = env.slipway_json(&repo, &["worktree", "list"]);
    let entry = &list["worktrees"][0];
    assert_eq!(entry["id"], id.as_str());
    assert_eq!(entry["health"], "missing", "the orphan is findable: {list}");
    assert_eq!(
        env.rev(&repo, "half"),
        tip,
        "the branch and its commit survive"
    );

    // Creating the branch again rebuilds the worktree on the same commit.
    let again = env.slipway_json(&repo, &["worktree", "create", "--branch", "half"]);
    assert_eq!(s(&again, "path"), path.to_str().expect("utf8"));
    assert_eq!(env.rev(&path, "HEAD"), tip);

    // The other half state: a registered worktree whose record vanished, with uncommitted work.
    std::fs::write(path.join("unsaved.txt"), "keep me\n").expect("write");
    std::fs::remove_file(repo.join(".slipway/state").join(format!("{id}.json")))
        .expect("rm record");
    let list = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(
        list["worktrees"][0]["branch"], "half",
        "rebuilt record: {list}"
    );
    assert_eq!(list["worktrees"][0]["dirty"], true);
    let closed = env.slipway_json(&repo, &["worktree", "close", "half"]);
    assert_eq!(closed["outcome"], "preserved");
    assert_eq!(
        std::fs::read_to_string(path.join("unsaved.txt")).expect("read"),
        "keep me\n"
    );
}

#[test]
fn an_idle_timeout_names_the_preserved_worktree_and_keeps_its_work() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let stalls = env.script(
        "stalls",
        "set -e\necho 'draft' > draft.txt\necho one > one.txt\ngit add one.txt\ngit commit -qm 'first step'\necho 'thinking...'\nsleep 60\n",
    );
    let (result, err) = env.slipway_fail(
        &repo,
        &run_args(
            &["--strategy", "merge-to-head", "--idle-timeout", "1"],
            &stalls,
        ),
    );
    assert_eq!(err["kind"], "idleTimeout");
    assert_eq!(result["status"], "timedOut");
    let preserved = Path::new(s(&result, "preservedWorktreePath"));
    assert_eq!(
        std::fs::read_to_string(preserved.join("draft.txt")).expect("kept"),
        "draft\n"
    );
    assert_eq!(
        env.rev(&repo, s(&result, "branch")),
        commit_shas(&result)[0]
    );
}

#[test]
fn a_failed_branch_run_keeps_worktree_and_commits() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "branch-fail",
        "set -e\necho a > a.txt\ngit add a.txt\ngit commit -qm 'step a'\necho b > b.txt\nexit 2\n",
    );
    let (result, _) = env.slipway_fail(&repo, &run_args(&["--branch", "agent/fix"], &agent));
    let path = Path::new(s(&result, "preservedWorktreePath"));
    assert!(path.join("b.txt").exists());
    assert_eq!(env.rev(&repo, "agent/fix"), commit_shas(&result)[0]);
}

#[test]
fn merge_timeout_leaves_the_host_exactly_as_it_was_and_keeps_the_branch() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let base = env.rev(&repo, "HEAD");
    let agent = env.script(
        "adds-a-file",
        // The run id makes each run's commit distinct.
        "set -e\necho \"$SLIPWAY_RUN_ID\" > agent.txt\ngit add agent.txt\ngit commit -qm 'agent adds agent.txt'\n",
    );
    std::fs::write(repo.join("untracked-host-note.txt"), "mine\n").expect("write");
    // First a fast-forward, then (after a host commit) a real merge: a zero
    // timeout stops both before the host changes.
    for host_moves in [false, true] {
        if host_moves {
            env.commit_file(&repo, "host.txt", "host\n", "host moves on");
        }
        let before = host_state(&env, &repo);
        let (result, err) = env.slipway_fail(
            &repo,
            &run_args(
                &[
                    "--strategy",
                    "merge-to-head",
                    "--ref",
                    &base,
                    "--merge-timeout",
                    "0",
                ],
                &agent,
            ),
        );
        assert_eq!(err["kind"], "mergeTimeout", "{err}");
        assert!(s(&err, "message").contains("merge timeout"), "{err}");
        assert_eq!(result["status"], "timedOut", "{result}");
        assert_eq!(host_state(&env, &repo), before, "the host must not change");
        assert!(!repo.join(".git/MERGE_HEAD").exists());
        let branch = s(&result, "branch");
        assert_eq!(
            env.rev(&repo, branch),
            commit_shas(&result)[0],
            "the agent's commit is kept on its branch"
        );
        assert!(s(&result, "keptBranch").contains("git merge"), "{result}");
    }
    // With time to spare (even more than a clock can count) the same run merges.
    let done = env.slipway_json(
        &repo,
        &run_args(
            &[
                "--strategy",
                "merge-to-head",
                "--ref",
                &base,
                "--merge-timeout",
                "18446744073709551615",
            ],
            &agent,
        ),
    );
    assert_eq!(done["status"], "completed", "{done}");
    assert!(repo.join("agent.txt").exists());
}
