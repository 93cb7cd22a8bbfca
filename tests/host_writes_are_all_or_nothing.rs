//! Safety rule 8: every write into the user's checkout or refs (merge-back,
//! land in each mode, discard, import) is journaled before its first write,
//! and a `kill -9` at any moment leaves the host as it was or as the
//! completed operation leaves it, once the next command has run: HEAD, every
//! ref, the index's entries and every file (bytes and mode) of the checkout,
//! with no lock file or temporary file of slipway's left for the user's git
//! to trip on, and the same operation works when tried again.
//!
//! The fixture has hundreds of changed, added and deleted files, a folder the
//! write makes, a mode change and a symlink, and the host holds staged,
//! unstaged, untracked and ignored files of the user's. Kills come at every
//! step of the write (the journal, each lock, each file, the index, the ref)
//! up to the first few dozen and then at moments spread over the rest (the
//! process alone, or its whole process group). Then git's own refusals: the
//! same fixture in a state `git merge` refuses, as git refuses it.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};

use common::*;

const TRACKED: usize = 300;

/// Everything of the host a user could notice, in terms that do not depend
/// on when a commit was made (a merge commit slipway makes has the time in
/// it): trees instead of commit ids.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostState {
    head: String,
    refs: BTreeMap<String, String>,
    index: String,
    files: BTreeMap<String, (u32, Vec<u8>)>,
}

fn host_state(env: &TestEnv, repo: &Path) -> HostState {
    let head = format!(
        "{} {}",
        env.git(repo, &["symbolic-ref", "-q", "HEAD"]),
        env.rev(repo, "HEAD^{tree}")
    );
    let refs = env
        .git(
            repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(tree)",
                "refs/heads",
                "refs/tags",
            ],
        )
        .lines()
        .filter_map(|l| l.split_once(' '))
        // A merge-to-head worktree's branch has a random name.
        .map(|(n, t)| match n.strip_prefix("refs/heads/slipway/merge-") {
            Some(_) => ("refs/heads/slipway/merge-*".to_owned(), t.to_owned()),
            None => (n.to_owned(), t.to_owned()),
        })
        .collect();
    let index = env.git(repo, &["ls-files", "--stage"]);
    let mut files = BTreeMap::new();
    collect(repo, repo, &mut files);
    HostState {
        head,
        refs,
        index,
        files,
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u32, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read").flatten() {
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .expect("inside")
            .display()
            .to_string();
        if rel == ".git" || rel == ".slipway" {
            continue;
        }
        let meta = path.symlink_metadata().expect("meta");
        if meta.is_dir() {
            out.insert(format!("{rel}/"), (0o40000, Vec::new()));
            collect(root, &path, out);
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("link");
            out.insert(
                rel,
                (0o120000, target.as_os_str().as_encoded_bytes().to_vec()),
            );
        } else {
            out.insert(
                rel,
                (
                    meta.permissions().mode() & 0o777,
                    std::fs::read(&path).expect("read"),
                ),
            );
        }
    }
}

/// Lock files and temporaries that must not outlive any command.
fn leftovers(repo: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![repo.join(".git")];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && !path.is_symlink() {
                if name != "objects" {
                    todo.push(path.clone());
                }
                if name == "slipway-locks"
                    && std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some())
                {
                    found.push(path.display().to_string());
                }
            } else if name.ends_with(".lock") {
                found.push(path.display().to_string());
            }
        }
    }
    let mut files = BTreeMap::new();
    collect(repo, repo, &mut files);
    found.extend(files.into_keys().filter(|p| p.contains(".slipway-")));
    found
}

/// A repository of `TRACKED` files and a branch `feat/many` (in a slipway
/// worktree) that changes 200 of them, deletes 20, adds 60 in folders that do
/// not exist yet, makes one executable and adds a symlink. `moved`: main
/// gains a commit of the user's after the branch left it (so a merge makes a
/// commit). `staged`: the user has a staged change the operation does not
/// touch. Both fixtures built with the same arguments are identical.
fn fixture(env: &TestEnv, strategy: &str, moved: bool, staged: bool) -> (PathBuf, String) {
    let repo = env.new_repo("repo");
    for i in 0..TRACKED {
        let path = repo.join(format!("src/d{}/f{i:03}.txt", i % 10));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, format!("tracked {i}\n")).expect("write");
    }
    std::fs::create_dir_all(repo.join("user")).expect("user");
    std::fs::write(repo.join("user/tracked.txt"), "the user's tracked file\n").expect("w");
    std::fs::write(repo.join(".gitignore"), "ignored/\n*.log\n").expect("w");
    env.git(&repo, &["add", "."]);
    env.git(&repo, &["commit", "-qm", "fixture"]);
    let args: Vec<&str> = match strategy {
        "merge-to-head" => vec!["worktree", "create", "--merge-to-head"],
        _ => vec!["worktree", "create", "--branch", "feat/many"],
    };
    let created = env.slipway_json(&repo, &args);
    let (id, wt) = (
        s(&created, "id").to_owned(),
        PathBuf::from(s(&created, "path")),
    );
    for i in 0..200 {
        let path = wt.join(format!("src/d{}/f{i:03}.txt", i % 10));
        std::fs::write(path, format!("changed by the branch {i}\n")).expect("write");
    }
    for i in 280..TRACKED {
        std::fs::remove_file(wt.join(format!("src/d{}/f{i:03}.txt", i % 10))).expect("rm");
    }
    for i in 0..60 {
        let path = wt.join(format!("added/deep{}/n{i:02}.txt", i % 3));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(path, format!("added {i}\n")).expect("write");
    }
    std::fs::set_permissions(
        wt.join("src/d0/f000.txt"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::os::unix::fs::symlink("src/d1/f001.txt", wt.join("link")).expect("symlink");
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-qm", "the branch's many changes"]);
    if moved {
        env.commit_file(
            &repo,
            "main-only.txt",
            "the user's commit\n",
            "meanwhile on main",
        );
    }
    // The user's own state in the host checkout.
    std::fs::write(repo.join("user/tracked.txt"), "edited, not staged\n").expect("w");
    std::fs::write(repo.join("user/untracked.txt"), "untracked\n").expect("w");
    std::fs::create_dir_all(repo.join("ignored")).expect("ignored");
    std::fs::write(repo.join("ignored/cache.bin"), [0u8, 1, 2, 3]).expect("w");
    std::fs::write(repo.join("debug.log"), "ignored log\n").expect("w");
    if staged {
        std::fs::write(repo.join("user/staged.txt"), "staged\n").expect("w");
        env.git(&repo, &["add", "user/staged.txt"]);
    }
    (repo, id)
}

/// The points a trial kills at: every one of the first `steps`, then a
/// spread of later ones (different in each run: the seed is printed).
fn points(steps: u64) -> Vec<u64> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(7);
    eprintln!("crash point seed {seed}");
    let mut out: Vec<u64> = (1..=steps).collect();
    let mut x = seed | 1;
    let mut at = steps;
    while at < 2000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at += 1 + x % 40;
        out.push(at);
    }
    out
}

/// Kills `args` at every point of `step` until it completes; after each
/// kill the next command settles, and the host must be `before` or `after`
/// with nothing of slipway's left. Returns how many kills there were.
fn kill_everywhere(
    env: &TestEnv,
    repo: &Path,
    step: &str,
    args: &[&str],
    before: &HostState,
    after: &HostState,
) -> usize {
    let mut kills = 0;
    for n in points(40) {
        let group = if n % 3 == 0 { ":group" } else { "" };
        let what = format!("{args:?} killed at {step}:{n}{group}");
        let (killed, out) = env.crashing(repo, &format!("{step}:{n}{group}"), args);
        if !killed {
            assert!(
                out.status.success(),
                "{what}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(host_state(env, repo), *after, "{what}: not as after");
            assert_eq!(leftovers(repo), Vec::<String>::new(), "{what}");
            return kills;
        }
        kills += 1;
        let next = env.slipway(repo, &["worktree", "list"]);
        assert!(
            next.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&next.stderr)
        );
        let now = host_state(env, repo);
        assert_eq!(leftovers(repo), Vec::<String>::new(), "{what}: left behind");
        if now == *after {
            // Killed after the point of no return: the next command finished it.
            let again = env.slipway(repo, args);
            assert!(
                again.status.success(),
                "{what}: trying again: {}",
                String::from_utf8_lossy(&again.stderr)
            );
            assert_eq!(
                host_state(env, repo),
                *after,
                "{what}: trying again changed it"
            );
            return kills;
        }
        assert!(
            now == *before,
            "{what}: the host is neither as before nor as after: {}",
            diff(before, after, &now)
        );
    }
    panic!("{args:?} was killed at every point");
}

fn diff(before: &HostState, after: &HostState, now: &HostState) -> String {
    let mut out = Vec::new();
    if now.head != before.head {
        out.push(format!(
            "head {} (before {}, after {})",
            now.head, before.head, after.head
        ));
    }
    if now.index != before.index && now.index != after.index {
        out.push("the index is neither".to_owned());
    }
    for (path, content) in &now.files {
        if before.files.get(path) != Some(content) && after.files.get(path) != Some(content) {
            out.push(format!("{path} is neither"));
        }
    }
    for path in before.files.keys().filter(|p| !now.files.contains_key(*p)) {
        out.push(format!("{path} is missing"));
    }
    out.truncate(12);
    out.join("; ")
}

/// The state an operation leaves, from a twin fixture where it is not killed.
fn after_of(strategy: &str, moved: bool, staged: bool, args: &[&str]) -> HostState {
    let env = TestEnv::new();
    let (repo, _) = fixture(&env, strategy, moved, staged);
    let out = env.slipway(&repo, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    host_state(&env, &repo)
}

fn land_killed_everywhere(how: &str, moved: bool, staged: bool) {
    let args = ["--json", "land", "feat/many", "--how", how];
    let after = after_of("branch", moved, staged, &args);
    let env = TestEnv::new();
    let (repo, _) = fixture(&env, "branch", moved, staged);
    let before = host_state(&env, &repo);
    assert_ne!(before, after, "the land changes the host");
    let kills = kill_everywhere(&env, &repo, "hostwrite", &args, &before, &after);
    assert!(kills >= 40, "{how}: only {kills} kills");
    assert_eq!(
        env.porcelain(&repo)
            .lines()
            .filter(|l| l.contains("user/"))
            .count(),
        if staged { 3 } else { 2 }
    );
}

#[test]
fn a_land_merge_killed_anywhere_leaves_the_host_before_or_after() {
    land_killed_everywhere("merge", true, false);
}

#[test]
fn a_fast_forward_land_killed_anywhere_keeps_the_users_staged_change() {
    land_killed_everywhere("merge", false, true);
}

#[test]
fn a_land_squash_killed_anywhere_leaves_the_host_before_or_after() {
    land_killed_everywhere("squash", true, false);
}

#[test]
fn a_land_rebase_killed_anywhere_leaves_the_host_before_or_after() {
    land_killed_everywhere("rebase", true, true);
}

#[test]
fn a_merge_to_head_killed_anywhere_leaves_the_host_before_or_after() {
    let twin = TestEnv::new();
    let (twin_repo, twin_id) = fixture(&twin, "merge-to-head", false, true);
    let out = twin.slipway(
        &twin_repo,
        &["--json", "run", "--worktree", &twin_id, "--", "true"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = host_state(&twin, &twin_repo);
    let env = TestEnv::new();
    let (repo, id) = fixture(&env, "merge-to-head", false, true);
    let before = host_state(&env, &repo);
    let args = ["--json", "run", "--worktree", &id, "--", "true"];
    let kills = kill_everywhere(&env, &repo, "hostwrite", &args, &before, &after);
    assert!(kills >= 40, "only {kills} kills");
}

#[test]
fn a_discard_killed_anywhere_removes_both_worktree_and_branch_or_neither() {
    let args = ["--json", "discard", "feat/many", "--force"];
    let mut kills = 0;
    for step in ["discard", "close", "hostwrite"] {
        for n in 1..=4 {
            let env = TestEnv::new();
            let (repo, _) = fixture(&env, "branch", false, true);
            let before = host_state(&env, &repo);
            let what = format!("discard killed at {step}:{n}");
            let (killed, out) = env.crashing(&repo, &format!("{step}:{n}"), &args);
            if !killed {
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                break;
            }
            kills += 1;
            let listed = env.slipway_json(&repo, &["worktree", "list"]);
            let worktrees = listed["worktrees"].as_array().expect("list").len();
            let branch = env.local_branches(&repo).contains(&"feat/many".to_owned());
            assert_eq!(leftovers(&repo), Vec::<String>::new(), "{what}");
            assert_eq!(
                (worktrees, branch),
                if branch { (1, true) } else { (0, false) },
                "{what}: the worktree and its branch go together"
            );
            let mut expected = before.clone();
            if !branch {
                expected.refs.remove("refs/heads/feat/many");
            } else {
                // Not decided yet when killed: trying again discards.
                let again = env.slipway(&repo, &args);
                assert!(
                    again.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&again.stderr)
                );
                expected.refs.remove("refs/heads/feat/many");
            }
            assert_eq!(host_state(&env, &repo), expected, "{what}");
        }
    }
    assert!(kills >= 5, "only {kills} kills");
}

#[test]
fn an_import_killed_anywhere_lands_the_runs_commits_once_the_next_command_ran() {
    let script = "set -e\nfor i in $(seq 1 120); do echo \"agent $i\" > \"a$i.txt\"; done\n\
                  git add -A\ngit commit -qm 'the agent files'\n";
    let twin = TestEnv::new();
    let twin_repo = twin.new_repo("repo");
    let run = |env: &TestEnv, repo: &Path, crash: Option<String>| {
        let mut cmd = env.slipway_cmd(repo);
        if let Some(crash) = crash {
            cmd.env("SLIPWAY_TEST_CRASH", crash);
        }
        cmd.args([
            "--json",
            "run",
            "--strategy",
            "head",
            "--",
            "sh",
            "-c",
            script,
        ])
        .process_group(0)
        .output()
        .expect("slipway runs")
    };
    let out = run(&twin, &twin_repo, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = host_state(&twin, &twin_repo);
    for n in 1..=4 {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        let before = host_state(&env, &repo);
        let out = run(&env, &repo, Some(format!("hostwrite:{n}")));
        if out.status.signal() != Some(libc::SIGKILL) {
            assert_eq!(host_state(&env, &repo), after);
            break;
        }
        let next = env.slipway(&repo, &["worktree", "list"]);
        assert!(next.status.success());
        let now = host_state(&env, &repo);
        assert_eq!(
            leftovers(&repo),
            Vec::<String>::new(),
            "import killed at {n}"
        );
        assert!(
            now == after || now == before,
            "import killed at {n}: {}",
            diff(&before, &after, &now)
        );
        assert_eq!(
            now, after,
            "import killed at {n}: the next command brought the work in"
        );
    }
}

// ------------------------------------------------------------ git's refusals

/// A copy of `repo` for git to act on, and whether `git merge feat/many`
/// refused there (leaving HEAD as it was).
fn git_refuses(env: &TestEnv, repo: &Path) -> bool {
    let copy = env.path().join("copy-for-git");
    let status = std::process::Command::new("cp")
        .args(["-a"])
        .arg(repo)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success());
    let head = env.rev(&copy, "HEAD");
    let out = env.git_output(&copy, &["merge", "--no-edit", "feat/many"]);
    let refused = !out.status.success() && env.rev(&copy, "HEAD") == head;
    std::fs::remove_dir_all(&copy).expect("rm copy");
    refused
}

/// Asserts slipway's land refuses the fixture (as git does, when
/// `git_too`), changing nothing.
fn refused(env: &TestEnv, repo: &Path, what: &str, git_too: bool, kinds: &[&str]) {
    if git_too {
        assert!(git_refuses(env, repo), "{what}: git itself merges this");
    }
    let before = host_state(env, repo);
    let (_, err) = env.slipway_fail(repo, &["land", "feat/many", "--how", "merge"]);
    assert!(
        kinds.contains(&err["kind"].as_str().unwrap_or_default()),
        "{what}: {err}"
    );
    assert_eq!(
        host_state(env, repo),
        before,
        "{what}: slipway changed something"
    );
    assert_eq!(leftovers(repo), Vec::<String>::new(), "{what}");
}

#[test]
fn a_merge_commit_is_refused_with_any_staged_change_as_git_refuses_it() {
    let env = TestEnv::new();
    let (repo, _) = fixture(&env, "branch", true, true);
    refused(&env, &repo, "a staged change", true, &["hostDirty"]);
}

#[test]
fn a_host_in_the_middle_of_a_git_operation_is_refused_as_git_refuses_it() {
    type Setup = fn(&TestEnv, &Path);
    // git merges during a bisect or a stopped `git am`; slipway does not
    // move a branch either is working on (DESIGN §2 rule 8), so there only
    // slipway's refusal is checked.
    let cases: [(&str, Setup); 6] = [
        ("a merge", |env, repo| {
            env.git(repo, &["checkout", "-q", "-b", "side"]);
            env.commit_file(repo, "user/tracked.txt", "side\n", "side");
            env.git(repo, &["checkout", "-q", "main"]);
            env.commit_file(repo, "user/tracked.txt", "main\n", "main");
            assert!(!env.git_output(repo, &["merge", "side"]).status.success());
        }),
        ("a cherry-pick", |env, repo| {
            env.git(repo, &["checkout", "-q", "-b", "side"]);
            let pick = env.commit_file(repo, "user/tracked.txt", "side\n", "side");
            env.git(repo, &["checkout", "-q", "main"]);
            env.commit_file(repo, "user/tracked.txt", "main\n", "main");
            assert!(
                !env.git_output(repo, &["cherry-pick", &pick])
                    .status
                    .success()
            );
        }),
        ("a revert", |env, repo| {
            let first = env.commit_file(repo, "user/tracked.txt", "one\n", "one");
            env.commit_file(repo, "user/tracked.txt", "two\n", "two");
            assert!(
                !env.git_output(repo, &["revert", "--no-edit", &first])
                    .status
                    .success()
            );
        }),
        ("a bisect", |env, repo| {
            env.git(repo, &["bisect", "start"]);
        }),
        ("git am", |env, repo| {
            env.git(repo, &["checkout", "-q", "-b", "side"]);
            env.commit_file(repo, "user/tracked.txt", "side\n", "side");
            let patches = env.path().join("patches");
            env.git(
                repo,
                &[
                    "format-patch",
                    "-q",
                    "-1",
                    "-o",
                    patches.to_str().expect("utf8"),
                ],
            );
            env.git(repo, &["checkout", "-q", "main"]);
            env.commit_file(repo, "user/tracked.txt", "main\n", "main");
            let patch = std::fs::read_dir(&patches)
                .expect("patches")
                .flatten()
                .next()
                .expect("one")
                .path();
            assert!(
                !env.git_output(repo, &["am", patch.to_str().expect("utf8")])
                    .status
                    .success()
            );
            assert!(
                repo.join(".git/rebase-apply").is_dir(),
                "git am stopped half way"
            );
        }),
        ("unresolved conflicts", |env, repo| {
            // Conflict entries without any operation file.
            let blob = env.git(repo, &["hash-object", "-w", "user/tracked.txt"]);
            let info = format!(
                "0 0000000000000000000000000000000000000000\tuser/tracked.txt\n\
                 100644 {blob} 1\tuser/tracked.txt\n100644 {blob} 2\tuser/tracked.txt\n100644 {blob} 3\tuser/tracked.txt\n"
            );
            let mut child = std::process::Command::new("git")
                .args(["update-index", "--index-info"])
                .current_dir(repo)
                .envs(env.envs())
                .stdin(std::process::Stdio::piped())
                .spawn()
                .expect("git");
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(info.as_bytes())
                .expect("write");
            assert!(child.wait().expect("wait").success());
        }),
    ];
    for (what, setup) in cases {
        let env = TestEnv::new();
        let (repo, _) = fixture(&env, "branch", false, false);
        // The user's edit is committed first, so only the operation stands in the way.
        env.git(&repo, &["commit", "-qam", "the user's edit"]);
        setup(&env, &repo);
        let git_too = !matches!(what, "a bisect" | "git am");
        refused(&env, &repo, what, git_too, &["hostRepoBusy", "hostDirty"]);
    }
}

#[test]
fn a_sparse_entry_in_the_way_is_refused_and_nothing_changes() {
    let env = TestEnv::new();
    let (repo, _) = fixture(&env, "branch", false, false);
    // src/d3 is outside the sparse checkout: its entries skip the worktree.
    env.git(
        &repo,
        &["update-index", "--skip-worktree", "src/d3/f003.txt"],
    );
    let before = host_state(&env, &repo);
    let (_, err) = env.slipway_fail(&repo, &["land", "feat/many", "--how", "merge"]);
    assert_eq!(err["kind"], "hostDirty", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains("src/d3/f003.txt"),
        "{err}"
    );
    assert_eq!(host_state(&env, &repo), before);
}

#[test]
fn a_folder_that_becomes_a_file_and_a_file_that_becomes_a_folder_land_as_git_lands_them() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "was-dir/a.txt", "a\n", "a folder");
    env.commit_file(&repo, "was-file", "a file\n", "a file");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "swap"]);
    let wt = PathBuf::from(s(&created, "path"));
    env.git(&wt, &["rm", "-q", "-r", "was-dir", "was-file"]);
    std::fs::write(wt.join("was-dir"), "now a file\n").expect("w");
    std::fs::create_dir_all(wt.join("was-file")).expect("dir");
    std::fs::write(wt.join("was-file/inside.txt"), "now a folder\n").expect("w");
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-qm", "swap"]);
    // git's answer on a copy of the same repository.
    let copy = env.path().join("copy");
    assert!(
        std::process::Command::new("cp")
            .arg("-a")
            .arg(&repo)
            .arg(&copy)
            .status()
            .expect("cp")
            .success()
    );
    env.git(&copy, &["merge", "-q", "--ff-only", "swap"]);
    env.slipway_json(&repo, &["land", "swap", "--how", "merge"]);
    let mut ours = host_state(&env, &repo);
    let mut git = host_state(&env, &copy);
    // The copy has no worktree of slipway's: compare the checkout itself.
    ours.refs.clear();
    git.refs.clear();
    assert_eq!(ours, git, "slipway's land differs from git's merge");
    assert_eq!(leftovers(&repo), Vec::<String>::new());
}
