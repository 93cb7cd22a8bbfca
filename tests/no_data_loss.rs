//! Safety rule 4: nothing is lost. Every failure path keeps every commit and
//! every uncommitted file, and says where they are.

use crate::common;

use std::path::{Path, PathBuf};

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
    assert_kept_for_slipway(&result, &branch);
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

/// Every file of a worktree but its `.git`, with its bytes (a symlink: its target).
fn worktree_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read").flatten() {
            let path = entry.path();
            if path == dir.join(".git") {
                continue;
            }
            let meta = path.symlink_metadata().expect("meta");
            if meta.is_dir() {
                todo.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                out.push((path, target.into_os_string().into_encoded_bytes()));
            } else {
                use std::os::unix::fs::PermissionsExt;
                let mut bytes = std::fs::read(&path).expect("read");
                bytes.extend(meta.permissions().mode().to_le_bytes());
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Each kind of uncommitted change git status shows, alone in a worktree of
/// its own: close preserves it (and says so the same way twice), and the
/// change is there afterwards exactly: status, staged and unstaged diffs, and
/// every file's bytes and mode. (An ignored file is no change to git status,
/// so it does not keep a worktree: see the README on close.)
#[test]
fn closing_a_dirty_worktree_keeps_every_kind_of_change() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "tracked.txt", "v1\n", "add tracked");
    env.commit_file(&repo, "other.txt", "other\n", "add other");
    type Change = fn(&TestEnv, &Path);
    let kinds: [(&str, Change); 12] = [
        ("an untracked file", |_, wt| {
            std::fs::write(wt.join("untracked.txt"), "new\n").expect("write")
        }),
        ("an untracked file in a new folder", |_, wt| {
            std::fs::create_dir_all(wt.join("new/deeper")).expect("mkdir");
            std::fs::write(wt.join("new/deeper/file.txt"), "new\n").expect("write");
        }),
        ("an unstaged edit", |_, wt| {
            std::fs::write(wt.join("tracked.txt"), "v2 unstaged\n").expect("write")
        }),
        ("a staged edit", |env, wt| {
            std::fs::write(wt.join("tracked.txt"), "v2 staged\n").expect("write");
            env.git(wt, &["add", "tracked.txt"]);
        }),
        ("a staged edit edited again", |env, wt| {
            std::fs::write(wt.join("tracked.txt"), "v2 staged\n").expect("write");
            env.git(wt, &["add", "tracked.txt"]);
            std::fs::write(wt.join("tracked.txt"), "v3 on top\n").expect("write");
        }),
        ("a staged new file", |env, wt| {
            std::fs::write(wt.join("staged.txt"), "staged\n").expect("write");
            env.git(wt, &["add", "staged.txt"]);
        }),
        ("an intent to add", |env, wt| {
            std::fs::write(wt.join("intent.txt"), "intent\n").expect("write");
            env.git(wt, &["add", "-N", "intent.txt"]);
        }),
        ("an unstaged deletion", |_, wt| {
            std::fs::remove_file(wt.join("tracked.txt")).expect("rm")
        }),
        ("a staged deletion", |env, wt| {
            env.git(wt, &["rm", "-q", "tracked.txt"]);
        }),
        ("a staged rename", |env, wt| {
            env.git(wt, &["mv", "tracked.txt", "renamed.txt"]);
        }),
        ("a mode change", |_, wt| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                wt.join("tracked.txt"),
                std::fs::Permissions::from_mode(0o755),
            )
            .expect("chmod");
        }),
        ("a file turned into a symlink", |_, wt| {
            std::fs::remove_file(wt.join("tracked.txt")).expect("rm");
            std::os::unix::fs::symlink("other.txt", wt.join("tracked.txt")).expect("symlink");
        }),
    ];
    for (n, (what, change)) in kinds.iter().enumerate() {
        let branch = format!("wip/{n}");
        let created = env.slipway_json(&repo, &["worktree", "create", "--branch", &branch]);
        let path = Path::new(s(&created, "path")).to_path_buf();
        change(&env, &path);
        let seen = |env: &TestEnv| {
            (
                env.porcelain(&path),
                env.git(&path, &["diff", "--cached", "--binary"]),
                env.git(&path, &["diff", "--binary"]),
                worktree_files(&path),
            )
        };
        let before = seen(&env);
        assert!(!before.0.is_empty(), "{what}: git status shows a change");
        let closed = env.slipway_json_code(&repo, &["worktree", "close", &branch], 3);
        assert_eq!(closed["outcome"], "preserved", "{what}: {closed}");
        assert!(
            !s(&closed, "reason").is_empty(),
            "{what}: the answer says why: {closed}"
        );
        let again = env.slipway_json_code(&repo, &["worktree", "close", &branch], 3);
        assert_eq!(closed, again, "{what}: closing again gives the same answer");
        assert_eq!(seen(&env), before, "{what}: the change is kept exactly");
    }
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
    let closed = env.slipway_json_code(&repo, &["worktree", "close", "half"], 3);
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
        "set -e\necho 'draft' > draft.txt\necho one > one.txt\ngit add one.txt\ngit commit -qm 'first step'\necho 'thinking...'\nsleep 60\n", // allow-sleep: the agent stalls until the idle timeout ends it
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
        assert_kept_for_slipway(&result, branch);
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

/// A tmpfs for tests that need a full disk; fails (never skips) without root.
fn small_disk(at: &Path, size: &str) -> Tmpfs {
    Tmpfs::mount(at, size).unwrap_or_else(|| {
        panic!(
            "this test needs a small tmpfs: run it as root (CI does), where `mount -t tmpfs` works"
        )
    })
}

#[test]
fn a_merge_that_fills_the_disk_puts_back_every_file_it_wrote() {
    let env = TestEnv::new();
    let disk = env.path().join("disk");
    let _disk = small_disk(&disk, "24m");
    let repo = env.new_repo("disk/repo");
    env.commit_file(&repo, "kept.txt", "the host's\n", "kept");
    // The big file packs small (so the import fits) but checks out at 6 MB;
    // the agent then leaves 2 MB free, so the merge runs out of space midway.
    let agent = env.script(
        "fill-the-disk",
        &format!(
            "set -e\n\
             for i in 1 2 3 4 5; do echo small$i > s$i.txt; done\n\
             echo the agent\\'s > kept.txt\n\
             yes 'a compressible line of text' | head -c 6000000 > big.txt\n\
             for i in 6 7 8; do echo small$i > z$i.txt; done\n\
             git add -A && git commit -qm agent\n\
             free=$(df -k --output=avail {disk} | tail -1)\n\
             head -c $(( (free - 2000) * 1024 )) /dev/zero > {disk}/filler\n",
            disk = disk.display()
        ),
    );
    let before = host_state(&env, &repo);
    let index_before = std::fs::read(repo.join(".git/index")).expect("index");

    let (result, err) =
        env.slipway_fail(&repo, &run_args(&["--strategy", "merge-to-head"], &agent));

    assert_eq!(err["kind"], "io", "{err}");
    let message = s(&err, "message");
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains("put back"), "{message}");
    assert_eq!(
        host_state(&env, &repo),
        before,
        "no file the merge wrote, whole or partial, is left"
    );
    assert_eq!(
        std::fs::read(repo.join(".git/index")).expect("index"),
        index_before
    );
    assert!(!repo.join(".git/MERGE_HEAD").exists());
    let branch = s(&result, "branch");
    assert_eq!(
        env.git(&repo, &["show", &format!("{branch}:kept.txt")]),
        "the agent's",
        "the work is kept on its branch"
    );
}

/// A worktree whose record is made unreadable by `spoil`.
fn spoiled_record(spoil: fn(&[u8]) -> Vec<u8>) {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let made = env.slipway_json(&repo, &["worktree", "create", "--branch", "spoiled"]);
    let record = repo.join(format!(".slipway/state/{}.json", s(&made, "id")));
    let good = std::fs::read(&record).expect("record");
    std::fs::write(&record, spoil(&good)).expect("spoil the record");
    let spoiled = std::fs::read(&record).expect("record");

    let listed = env.slipway_json(&repo, &["worktree", "list"]);
    let entry = listed["worktrees"]
        .as_array()
        .expect("worktrees")
        .iter()
        .find(|w| w["branch"] == "spoiled")
        .unwrap_or_else(|| panic!("the worktree is still listed: {listed}"))
        .clone();
    assert_eq!(entry["health"], "corrupt", "{entry}");
    assert!(s(&entry, "why").contains("cannot be read"), "{entry}");

    for force in [false, true] {
        let mut args = vec!["worktree", "close", "spoiled"];
        if force {
            args.push("--force");
        }
        let (_, err) = env.slipway_fail(&repo, &args);
        assert_eq!(err["kind"], "corruptRecord", "{err}");
    }
    for args in [
        &["discard", "spoiled", "--force"][..],
        &["diff", "spoiled"],
        &["land", "spoiled", "--how", "merge"],
    ] {
        let (_, err) = env.slipway_fail(&repo, args);
        assert_eq!(err["kind"], "corruptRecord", "{args:?}: {err}");
    }
    let (_, err) = env.slipway_fail(&repo, &["run", "--worktree", "spoiled", "--", "true"]);
    assert_eq!(
        err["kind"], "corruptRecord",
        "a run does not start on a record it cannot read: {err}"
    );
    assert_eq!(
        std::fs::read(&record).expect("record"),
        spoiled,
        "the record is left for the user to look at"
    );
    assert!(
        Path::new(s(&made, "path")).join("README.md").exists(),
        "the worktree stays"
    );
}

#[test]
fn a_truncated_record_is_corrupt_and_nothing_rewrites_or_removes_it() {
    spoiled_record(|good| good[..good.len() / 2].to_vec());
}

#[test]
fn a_garbage_record_is_corrupt_and_nothing_rewrites_or_removes_it() {
    spoiled_record(|_| b"\x00\xffnot json at all{{".to_vec());
}

#[test]
fn a_locked_worktree_is_kept_even_with_force_as_git_keeps_it() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let made = env.slipway_json(&repo, &["worktree", "create", "--branch", "locked"]);
    let path = s(&made, "path").to_owned();
    env.git(
        &repo,
        &["worktree", "lock", "--reason", "on a USB disk", &path],
    );
    // What git does: a single --force does not remove a locked worktree.
    assert!(
        !env.git_output(&repo, &["worktree", "remove", "--force", &path])
            .status
            .success()
    );

    let closed = env.slipway_json_code(&repo, &["worktree", "close", "locked", "--force"], 3);
    assert_eq!(closed["outcome"], "preserved", "{closed}");
    assert!(s(&closed, "reason").contains("on a USB disk"), "{closed}");
    assert!(
        closed["commands"]
            .to_string()
            .contains("git worktree unlock"),
        "it says how to unlock: {closed}"
    );
    assert!(Path::new(&path).join("README.md").exists());
    assert!(env.git(&repo, &["worktree", "list"]).contains(&path));
}

#[test]
fn a_commit_on_no_ref_in_a_detached_worktree_survives_its_close() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let made = env.slipway_json(&repo, &["worktree", "create", "--branch", "detached"]);
    let wt = PathBuf::from(s(&made, "path"));
    env.git(&wt, &["switch", "-q", "--detach"]);
    let lonely = env.commit_file(&wt, "lonely.txt", "on no branch\n", "lonely");

    let closed = env.slipway_json(&repo, &["worktree", "close", "detached"]);
    assert_eq!(closed["outcome"], "removed", "{closed}");
    let kept = env.git(
        &repo,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "--contains",
            &lonely,
        ],
    );
    assert_eq!(kept, lonely, "a ref still holds the commit");
    assert!(s(&closed, "keptCommit").contains(&lonely), "{closed}");
    assert_eq!(
        env.git(&repo, &["show", &format!("{lonely}:lonely.txt")]),
        "on no branch"
    );
}

#[test]
fn a_worktree_git_forgot_keeps_its_files_even_with_force() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let made = env.slipway_json(&repo, &["worktree", "create", "--branch", "forgotten"]);
    let wt = PathBuf::from(s(&made, "path"));
    std::fs::write(wt.join("unsaved.txt"), "only copy\n").expect("file");
    let admin = repo
        .join(".git/worktrees")
        .join(wt.file_name().expect("name"));
    std::fs::remove_dir_all(&admin).expect("delete the admin dir");

    let closed = env.slipway_json_code(&repo, &["worktree", "close", "forgotten", "--force"], 3);
    assert_eq!(closed["outcome"], "preserved", "{closed}");
    assert_eq!(
        std::fs::read_to_string(wt.join("unsaved.txt")).expect("kept"),
        "only copy\n"
    );
}

#[test]
fn force_never_deletes_a_repository_that_sits_where_the_worktree_was() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let made = env.slipway_json(&repo, &["worktree", "create", "--branch", "replaced"]);
    let wt = s(&made, "path").to_owned();
    env.git(&repo, &["worktree", "remove", "--force", &wt]);
    let other = env.new_repo(&format!(
        "repo/.slipway/worktrees/{}",
        Path::new(&wt).file_name().expect("name").to_string_lossy()
    ));
    std::fs::write(other.join("precious.txt"), "someone else's\n").expect("file");

    let closed = env.slipway_json_code(&repo, &["worktree", "close", "replaced", "--force"], 3);
    assert_eq!(closed["outcome"], "preserved", "{closed}");
    assert!(
        s(&closed, "reason").contains("repository of its own"),
        "{closed}"
    );
    assert_eq!(
        std::fs::read_to_string(other.join("precious.txt")).expect("kept"),
        "someone else's\n"
    );
    assert_eq!(
        env.rev(&other, "HEAD").len(),
        40,
        "the other repository is whole"
    );
}

/// Puts the host in the middle of rebasing `feature` (a conflict stops it).
fn rebasing(env: &TestEnv, repo: &Path) {
    env.git(repo, &["switch", "-q", "-c", "feature"]);
    env.commit_file(repo, "README.md", "feature\n", "feature");
    env.git(repo, &["switch", "-q", "main"]);
    env.commit_file(repo, "README.md", "main\n", "main");
    env.git(repo, &["switch", "-q", "feature"]);
    assert!(
        !env.git_output(repo, &["rebase", "main"]).status.success(),
        "the rebase stops"
    );
}

/// Puts the host in the middle of bisecting from `feature`.
fn bisecting(env: &TestEnv, repo: &Path) {
    env.git(repo, &["switch", "-q", "-c", "feature"]);
    env.commit_file(repo, "a.txt", "1\n", "one");
    env.commit_file(repo, "a.txt", "2\n", "two");
    env.git(repo, &["bisect", "start", "feature", "main"]);
}

#[test]
fn create_refuses_a_branch_being_rebased_or_bisected_as_git_does() {
    for (what, busy) in [
        ("rebased", rebasing as fn(&TestEnv, &Path)),
        ("bisected", bisecting),
    ] {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        busy(&env, &repo);
        let elsewhere = env.path().join("git-would");
        let git = env.git_output(
            &repo,
            &[
                "worktree",
                "add",
                elsewhere.to_str().expect("utf8"),
                "feature",
            ],
        );
        assert!(!git.status.success(), "git refuses a branch being {what}");

        let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "feature"]);
        assert_eq!(err["kind"], "branchCheckedOut", "{what}: {err}");
        assert!(s(&err, "message").contains(what), "{what}: {err}");
        let listed = env.slipway_json(&repo, &["worktree", "list"]);
        assert_eq!(
            listed["worktrees"],
            serde_json::json!([]),
            "nothing was made"
        );
    }
}

#[test]
fn work_the_agent_left_on_its_own_branches_or_a_detached_head_is_kept() {
    require_docker_image();
    for (sandbox, strategy) in [
        (Sandbox::Host, &["--strategy", "head"][..]),
        (Sandbox::Host, &["--branch", "agent/main-work"][..]),
        (Sandbox::Docker, &["--strategy", "head"][..]),
        (Sandbox::Docker, &["--strategy", "merge-to-head"][..]),
    ] {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        let before = env.rev(&repo, "HEAD");
        // The agent switches to branches of its own (and finally detaches),
        // committing on each: none of it is the run's branch.
        let script = "set -e\n\
            git checkout -q -b side && echo side > side.txt && git add side.txt && git commit -qm 'on side'\n\
            git checkout -q -b 'feat/deep' && echo deep > deep.txt && git add deep.txt && git commit -qm 'on feat/deep'\n\
            git checkout -q --detach && echo loose > loose.txt && git add loose.txt && git commit -qm 'detached'\n\
            echo DONE";
        let mut args = vec!["--json", "run"];
        args.extend_from_slice(strategy);
        args.extend(sandbox.args());
        args.extend(["--", "sh", "-c", script]);
        let (_, result, log) = env.run_result(&repo, &args);
        assert!(
            log.contains("DONE"),
            "{sandbox:?} {strategy:?}: {result}\n{log}"
        );
        let run_id = s(&result, "runId");
        let kept = result["keptRefs"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = kept.iter().map(|k| s(k, "name")).collect();
        for leaf in ["side", "feat/deep", "HEAD"] {
            let name = format!("refs/slipway/kept/{run_id}/{leaf}");
            assert!(
                names.contains(&name.as_str()),
                "{sandbox:?} {strategy:?}: {names:?}\n{log}"
            );
        }
        let subjects = env.git(
            &repo,
            &[
                "log",
                "--format=%s",
                &format!("refs/slipway/kept/{run_id}/HEAD"),
            ],
        );
        assert_eq!(
            subjects.lines().take(3).collect::<Vec<_>>(),
            vec!["detached", "on feat/deep", "on side"],
            "{sandbox:?} {strategy:?}: every commit is reachable on the host"
        );
        let fsck = env.git_output(&repo, &["fsck", "--no-dangling"]);
        assert!(
            fsck.status.success(),
            "{}",
            String::from_utf8_lossy(&fsck.stderr)
        );
        if strategy == ["--strategy", "head"] {
            assert_eq!(
                env.rev(&repo, "HEAD"),
                before,
                "the host's own branch did not move"
            );
        }
    }
}

/// A kept branch is left to slipway's own commands: the result offers to
/// review, land or discard it, and names no git command that goes around
/// slipway's records.
fn assert_kept_for_slipway(result: &serde_json::Value, branch: &str) {
    let kept = s(result, "keptBranch");
    assert!(
        !kept.contains("git merge") && !kept.contains("git branch -D"),
        "{result}"
    );
    let kinds: Vec<&str> = result["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("no actions in {result}"))
        .iter()
        .filter(|a| a["worktree"] == branch)
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["review", "land", "discard"], "{result}");
}
