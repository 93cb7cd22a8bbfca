//! The user keeps working while a run goes on: commits on the host's branch,
//! fetches, tags, switches branches, edits files. Whatever the user did is left
//! exactly as the user left it, and the run's work is on its branch or merged
//! on top of the user's, as git itself would merge it (or not at all, with the
//! branch kept). Each run here waits at a gate inside its worktree, so the
//! user's actions happen while the agent is alive, in the host sandbox and in
//! a docker container alike.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::common::lsp;

/// The agent: says it started, waits for the gate, then writes what `work`
/// says and commits it. The gate files live in the worktree (the only host
/// path a container sees) and are removed before the commit.
fn gated_agent(work: &str) -> String {
    let wait_for_go = "while [ ! -e .go ]; do sleep 0.05; done"; // allow-sleep: the agent polls for the test's gate file (a file, so a container sees it too)
    format!(
        "set -e\n\
         touch .started\n\
         {wait_for_go}\n\
         rm -f .started .go\n\
         {work}\n\
         git commit -qm 'agent: work'\n"
    )
}

/// A run started in the background on a worktree made first, so the test knows
/// its path and can open the gate.
struct GatedRun {
    child: Child,
    worktree: PathBuf,
}

impl GatedRun {
    /// Creates the worktree (`create` are the `worktree create` flags) and
    /// starts the run in it; returns once the agent is waiting at the gate.
    fn start(
        env: &TestEnv,
        repo: &Path,
        create: &[&str],
        sandbox: Sandbox,
        work: &str,
    ) -> GatedRun {
        let mut args = vec!["worktree", "create"];
        args.extend_from_slice(create);
        let made = env.slipway_json(repo, &args);
        let id = s(&made, "id").to_owned();
        let worktree = PathBuf::from(s(&made, "path"));
        let script = gated_agent(work);
        let mut run = vec!["--json", "run", "--worktree", id.as_str()];
        run.extend(sandbox.args());
        run.extend(["--", "sh", "-c", script.as_str()]);
        let child = env
            .slipway_cmd(repo)
            .args(&run)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("slipway run starts");
        let mut child = child;
        let mut ended = None;
        let started = lsp::wait_until(EVENT_DEADLINE, || {
            ended = child.try_wait().ok().flatten();
            ended.is_some() || worktree.join(".started").exists()
        });
        if let Some(status) = ended {
            let out = child.wait_with_output().expect("run output");
            panic!(
                "the run ended ({status}) before its agent started:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(started, "the agent never started");
        GatedRun { child, worktree }
    }

    /// Opens the gate and waits for the run's end: (succeeded, result, stderr).
    fn finish(self) -> (bool, serde_json::Value, String) {
        std::fs::write(self.worktree.join(".go"), "").expect("open the gate");
        let out = self.child.wait_with_output().expect("run ends");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let result = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("no result JSON ({e}): {stderr}"));
        (out.status.success(), result, stderr)
    }
}

/// The error kind of a failed run's stderr (`{"error": {...}}` line).
fn error_kind(stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"error\""))
        .unwrap_or_else(|| panic!("no JSON error on stderr:\n{stderr}"));
    let v: serde_json::Value = serde_json::from_str(line).expect("error JSON");
    v["error"]["kind"].as_str().expect("kind").to_owned()
}

/// HEAD, index bytes, refs, and each checkout file with its bytes.
type HostBytes = (String, Vec<u8>, String, Vec<(PathBuf, Vec<u8>)>);

/// Every byte of the host a user could notice: HEAD, the index file, every
/// ref, and every file of the checkout outside `.git` and `.slipway`.
fn host_bytes(env: &TestEnv, repo: &Path) -> HostBytes {
    let head = std::fs::read_to_string(repo.join(".git/HEAD")).expect("HEAD");
    let index = std::fs::read(repo.join(".git/index")).expect("index");
    let refs = env.git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let mut files = Vec::new();
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let entry = entry.expect("entry");
            let name = entry.file_name();
            if dir == repo && (name == ".git" || name == ".slipway") {
                continue;
            }
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).expect("read")));
            }
        }
    }
    files.sort();
    (head, index, refs, files)
}

fn user_commits_fetches_and_tags_during_a_run(sandbox: Sandbox) {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let start = env.rev(&repo, "HEAD");
    let run = GatedRun::start(
        &env,
        &repo,
        &["--branch", "agent/feature"],
        sandbox,
        "echo agent > agent.txt; git add agent.txt",
    );

    // The user, meanwhile: a commit on the host's branch, a fetch that moves
    // the remote-tracking branch, a tag.
    let user_commit = env.commit_file(&repo, "user.txt", "mine\n", "user: own work");
    let fetched = env.commit_file(&repo, "fetched.txt", "upstream\n", "upstream work");
    env.git(&repo, &["reset", "-q", "--hard", &user_commit]);
    env.git(&repo, &["update-ref", "refs/remotes/origin/main", &fetched]);
    env.git(&repo, &["tag", "-a", "-m", "release", "v1.0", &user_commit]);
    let tag_object = env.rev(&repo, "refs/tags/v1.0");

    let (ok, result, stderr) = run.finish();
    assert!(ok, "{sandbox:?}: the run failed: {stderr}\n{result}");

    assert_eq!(
        env.rev(&repo, "main"),
        user_commit,
        "the user's commit stays on main"
    );
    assert_eq!(
        env.rev(&repo, "refs/remotes/origin/main"),
        fetched,
        "the fetch stays"
    );
    assert_eq!(
        env.rev(&repo, "refs/tags/v1.0"),
        tag_object,
        "the tag stays"
    );
    assert_eq!(
        env.porcelain(&repo),
        "",
        "nothing shows as staged or changed"
    );
    let commits = commit_shas(&result);
    assert_eq!(commits.len(), 1, "{result}");
    assert_eq!(
        env.rev(&repo, "agent/feature"),
        commits[0],
        "the run's commit is on its branch"
    );
    assert_eq!(
        env.rev(&repo, "agent/feature^"),
        start,
        "and it starts where the run started"
    );
    assert_eq!(env.git(&repo, &["fsck", "--no-progress"]), "");
}

#[test]
fn a_commit_a_fetch_and_a_tag_made_during_a_host_run_are_kept() {
    user_commits_fetches_and_tags_during_a_run(Sandbox::Host);
}

#[test]
fn a_commit_a_fetch_and_a_tag_made_during_a_docker_run_are_kept() {
    require_docker_image();
    user_commits_fetches_and_tags_during_a_run(Sandbox::Docker);
}

fn merge_to_head_lands_on_the_users_new_tip(sandbox: Sandbox) {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let run = GatedRun::start(
        &env,
        &repo,
        &["--merge-to-head"],
        sandbox,
        "echo agent > agent.txt; git add agent.txt",
    );
    let user_commit = env.commit_file(&repo, "user.txt", "mine\n", "user: own work");
    let run_worktree = run.worktree.clone();
    let (ok, result, stderr) = run.finish();
    assert!(ok, "{sandbox:?}: the run failed: {stderr}\n{result}");

    let agent_commit = commit_shas(&result).pop().expect("one commit");
    let tip = env.rev(&repo, "main");
    assert_eq!(
        env.git(&repo, &["rev-list", "--parents", "-1", &tip]),
        format!("{tip} {user_commit} {agent_commit}"),
        "a merge commit of the user's tip and the agent's commit, as git merge makes"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("user.txt")).expect("user file"),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("agent.txt")).expect("agent file"),
        "agent\n"
    );
    assert_eq!(env.porcelain(&repo), "");
    // A worktree handle keeps its branch for the next run (it goes with the worktree).
    assert!(run_worktree.exists());
}

#[test]
fn merge_to_head_lands_on_the_commit_the_user_made_during_a_host_run() {
    merge_to_head_lands_on_the_users_new_tip(Sandbox::Host);
}

#[test]
fn merge_to_head_lands_on_the_commit_the_user_made_during_a_docker_run() {
    require_docker_image();
    merge_to_head_lands_on_the_users_new_tip(Sandbox::Docker);
}

#[test]
fn a_host_switched_to_another_branch_gets_nothing_and_the_branch_is_kept() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "other"]);
    let run = GatedRun::start(
        &env,
        &repo,
        &["--merge-to-head"],
        Sandbox::Host,
        "echo agent > agent.txt; git add agent.txt",
    );
    env.git(&repo, &["switch", "-q", "other"]);
    let before = host_bytes(&env, &repo);
    let main_before = env.rev(&repo, "main");

    let (ok, result, stderr) = run.finish();
    assert!(
        !ok,
        "a merge into a branch the host left must not happen: {result}"
    );
    assert_eq!(error_kind(&stderr), "hostSwitched", "{stderr}");
    let branch = s(&result, "branch").to_owned();
    let agent_commit = commit_shas(&result).pop().expect("one commit");
    assert_eq!(
        env.rev(&repo, &branch),
        agent_commit,
        "the run's branch is kept"
    );
    assert_eq!(
        env.rev(&repo, "main"),
        main_before,
        "main is not merged into either"
    );
    assert_host_unchanged(&env, &repo, before, &branch, "the host (now on `other`)");
    // What to do is slipway's: land the kept branch (no git command around it).
    assert!(
        !s(&result["error"], "message").contains("git merge"),
        "{result}"
    );
    assert!(
        result["actions"].as_array().is_some_and(|a| a
            .iter()
            .any(|a| a["kind"] == "land" && a["worktree"] == branch.as_str())),
        "the result says how to land it: {result}"
    );
}

#[test]
fn an_unrelated_edit_is_kept_byte_for_byte_while_the_work_merges() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "notes.txt", "one\n", "notes");
    let run = GatedRun::start(
        &env,
        &repo,
        &["--merge-to-head"],
        Sandbox::Host,
        "echo agent > agent.txt; git add agent.txt",
    );
    // Unstaged edit, a staged new file and an untracked file the merge never touches.
    std::fs::write(repo.join("notes.txt"), b"one\r\ntwo without newline").expect("edit");
    std::fs::write(repo.join("staged.txt"), b"staged\n").expect("staged");
    env.git(&repo, &["add", "staged.txt"]);
    std::fs::write(repo.join("scratch.txt"), b"\x00binary scratch").expect("scratch");

    let (ok, result, stderr) = run.finish();
    assert!(ok, "the run failed: {stderr}\n{result}");
    assert_eq!(
        std::fs::read(repo.join("notes.txt")).expect("notes"),
        b"one\r\ntwo without newline"
    );
    assert_eq!(
        std::fs::read(repo.join("scratch.txt")).expect("scratch"),
        b"\x00binary scratch"
    );
    assert_eq!(
        env.porcelain(&repo),
        // (the helper trims, so the first line's leading blank is gone)
        "M notes.txt\nA  staged.txt\n?? scratch.txt",
        "the user's changes are exactly as they were, staged stays staged"
    );
    assert_eq!(env.git(&repo, &["show", "HEAD:agent.txt"]), "agent");
}

#[test]
fn an_overlapping_edit_stops_the_merge_and_nothing_changes() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "shared.txt", "base\n", "shared");
    let run = GatedRun::start(
        &env,
        &repo,
        &["--merge-to-head"],
        Sandbox::Host,
        "echo agent > shared.txt; git add shared.txt",
    );
    std::fs::write(repo.join("shared.txt"), b"the user's unsaved thought\n").expect("edit");
    let before = host_bytes(&env, &repo);

    let (ok, result, stderr) = run.finish();
    assert!(!ok, "{result}");
    assert_eq!(error_kind(&stderr), "hostDirty", "{stderr}");
    let branch = s(&result, "branch").to_owned();
    assert_host_unchanged(&env, &repo, before, &branch, "HEAD, index, refs and files");
    assert!(!repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(
        env.git(&repo, &["show", &format!("{branch}:shared.txt")]),
        "agent",
        "the agent's work is kept on its branch"
    );
}

#[test]
fn an_ignored_file_in_the_way_is_never_overwritten() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, ".gitignore", ".env\n", "ignore .env");
    std::fs::write(repo.join(".env"), b"SECRET=the user's own\n").expect("env file");
    let run = GatedRun::start(
        &env,
        &repo,
        &["--merge-to-head"],
        Sandbox::Host,
        "echo SECRET=agent > .env; git add -f .env",
    );
    let before = host_bytes(&env, &repo);

    let (ok, result, stderr) = run.finish();
    assert!(!ok, "{result}");
    assert_eq!(error_kind(&stderr), "hostDirty", "{stderr}");
    let branch = s(&result, "branch").to_owned();
    assert_host_unchanged(&env, &repo, before, &branch, "the host");
    assert_eq!(
        std::fs::read(repo.join(".env")).expect(".env"),
        b"SECRET=the user's own\n"
    );
}

/// The host is byte for byte as `before`, but for the run's own branch (the
/// one ref a run moves).
fn assert_host_unchanged(
    env: &TestEnv,
    repo: &Path,
    mut before: HostBytes,
    branch: &str,
    what: &str,
) {
    let mut after = host_bytes(env, repo);
    before.2 = strip_ref(&before.2, branch);
    after.2 = strip_ref(&after.2, branch);
    assert_eq!(after, before, "{what} must be byte-identical");
}

/// A `for-each-ref` listing without the line of `branch`.
fn strip_ref(refs: &str, branch: &str) -> String {
    let prefix = format!("refs/heads/{branch} ");
    refs.lines()
        .filter(|l| !l.starts_with(&prefix))
        .collect::<Vec<_>>()
        .join("\n")
}
