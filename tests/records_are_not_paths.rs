//! Safety rule 5: nothing read from disk is a path or a process. Every path
//! slipway acts on comes from the repository root and an id it parsed; a
//! journal entry or record naming anything else is refused and left where it
//! is. A `.slipway/` that git tracks (a clone brought it), that another user
//! owns, or that is a symlink is not slipway's: nothing is recovered or
//! removed there. A container is removed only when it carries slipway's labels
//! for that sandbox of this repository, and a process is signalled only when
//! it is the one the record's run started.
//!
//! Each test plants what an attacker could ship in a repository or write into
//! `.slipway/` and then does what a user does next (list, open the folder in
//! an editor, close, discard, cancel); a folder outside the repository, a
//! foreign container and a foreign process must come through untouched.

use crate::common;

use std::path::{Path, PathBuf};

use common::lsp::{Lsp, kind};
use common::*;
use serde_json::{Value, json};

/// A folder beside the repository that planted entries point at.
struct Victim(PathBuf);

impl Victim {
    fn new(env: &TestEnv) -> Victim {
        let dir = env.path().join("victim");
        std::fs::create_dir_all(dir.join("git")).expect("victim");
        std::fs::write(dir.join("precious.txt"), "keep me\n").expect("victim file");
        std::fs::write(dir.join("git/HEAD"), "ref: refs/heads/main\n").expect("victim file");
        Victim(dir)
    }

    fn assert_intact(&self, what: &str) {
        assert_eq!(
            std::fs::read_to_string(self.0.join("precious.txt"))
                .ok()
                .as_deref(),
            Some("keep me\n"),
            "{what}: the folder outside the repository was touched"
        );
        assert!(
            self.0.join("git/HEAD").is_file(),
            "{what}: the victim's git dir went"
        );
    }
}

/// Journal entries that name the victim, as an attacker would write them
/// (with the ids, refs and paths slipway's own entries hold).
fn planted_entries(victim: &Path, base: &str) -> Vec<(&'static str, Value)> {
    let escape = "../../../victim";
    vec![
        (
            "create-x",
            json!({"op": "create", "id": escape, "branch": "x", "createdBranch": true, "base": base}),
        ),
        (
            "close-x",
            json!({"op": "close", "id": escape, "branch": "x"}),
        ),
        (
            "close-y",
            json!({"op": "close", "id": "y-0123456789", "branch": "../../victim"}),
        ),
        (
            "import-legacy",
            json!({"op": "import", "runId": "run-1-abc", "refname": "refs/heads/main", "start": null,
                   "privateDir": victim.join("git"), "checkout": victim, "lockBranch": "main", "keep": false}),
        ),
        (
            "import-bad-id",
            json!({"op": "import", "runId": "../../../victim", "refname": "refs/heads/main", "start": null,
                   "lockBranch": "main", "keep": false}),
        ),
        (
            "import-bad-ref",
            json!({"op": "import", "runId": "run-1-abd", "refname": "refs/../../victim", "start": null,
                   "worktree": "x-0123456789", "lockBranch": "main", "keep": false}),
        ),
        (
            "merge-bad-ref",
            json!({"op": "merge", "target": "../../victim", "ours": base, "new": base}),
        ),
    ]
}

fn plant_journal(slipway_dir: &Path, entries: &[(&str, Value)]) {
    let dir = slipway_dir.join("journal");
    std::fs::create_dir_all(&dir).expect("journal dir");
    for (name, entry) in entries {
        std::fs::write(dir.join(format!("{name}.json")), entry.to_string()).expect("plant");
    }
}

fn journal_names(slipway_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(slipway_dir.join("journal"))
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Opens `repo` in a real sidecar and waits until it answered a request on
/// it (so it has looked at the repository, recovery included).
fn open_in_editor(env: &TestEnv, repo: &Path) -> Lsp {
    let mut lsp = Lsp::start(env, Some(repo), false);
    let listed = lsp.execute("slipway.list", json!({"root": repo}));
    assert!(listed.is_ok(), "{listed:?}");
    lsp
}

#[test]
fn a_cloned_repository_that_ships_a_journal_gets_nothing_recovered_or_written() {
    let env = TestEnv::new();
    let origin = env.new_repo("origin");
    let victim = Victim::new(&env);
    let base = env.rev(&origin, "HEAD");
    let entries = planted_entries(&victim.0, &base);
    plant_journal(&origin.join(".slipway"), &entries);
    // The attacker also ships a record of a worktree in the victim.
    let state = origin.join(".slipway/state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(
        state.join("x-0123456789.json"),
        json!({"id": "x-0123456789", "path": victim.0, "branch": "x"}).to_string(),
    )
    .expect("record");
    env.git(&origin, &["add", "-f", ".slipway"]);
    env.git(&origin, &["commit", "-qm", "ship a journal"]);
    let clone = env.path().join("clone");
    env.git(
        env.path(),
        &["clone", "-q", origin.to_str().expect("utf8"), "clone"],
    );
    let before = journal_names(&clone.join(".slipway"));
    assert_eq!(before.len(), entries.len());

    let out = env.slipway(&clone, &["worktree", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nothing was recovered") && stderr.contains("tracked by git"),
        "the user is told why: {stderr}"
    );
    victim.assert_intact("worktree list");
    let _lsp = open_in_editor(&env, &clone);
    victim.assert_intact("the editor opening the folder");
    assert_eq!(
        journal_names(&clone.join(".slipway")),
        before,
        "left in place"
    );

    // Nothing is written into it, and nothing destructive runs there.
    let (_, err) = env.slipway_fail(&clone, &["worktree", "create", "--branch", "feat"]);
    assert_eq!(err["kind"], "untrustedState", "{err}");
    assert!(!clone.join(".slipway/worktrees").exists());
    for args in [
        &["worktree", "close", "x-0123456789", "--force"][..],
        &["discard", "x", "--force"],
        &["run", "--branch", "agent", "--", "true"],
    ] {
        let out = env.slipway(
            &clone,
            &args
                .iter()
                .chain(["--json"].iter())
                .copied()
                .collect::<Vec<_>>(),
        );
        assert!(!out.status.success(), "{args:?} must refuse");
        victim.assert_intact(&format!("{args:?}"));
    }
    assert_eq!(env.local_branches(&clone), vec!["main".to_owned()]);
    assert_eq!(
        env.porcelain(&clone),
        "",
        "the clone's checkout is as cloned"
    );
}

#[test]
fn journal_entries_naming_paths_ids_or_refs_slipway_never_writes_are_left_alone() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let victim = Victim::new(&env);
    // A real worktree first: `.slipway/` is slipway's own.
    env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    let base = env.rev(&repo, "HEAD");
    let entries = planted_entries(&victim.0, &base);
    plant_journal(&repo.join(".slipway"), &entries);
    let before = journal_names(&repo.join(".slipway"));

    let out = env.slipway(&repo, &["worktree", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    victim.assert_intact("worktree list");
    for (name, _) in &entries {
        assert!(
            stderr.contains(&format!("{name}.json was left as it is")),
            "{name} is reported: {stderr}"
        );
    }
    let _lsp = open_in_editor(&env, &repo);
    victim.assert_intact("the editor opening the folder");
    assert_eq!(
        journal_names(&repo.join(".slipway")),
        before,
        "left in place"
    );
    // The real worktree is untouched by any of it.
    let listed = env.slipway_json(&repo, &["worktree", "list"]);
    assert_eq!(listed["worktrees"][0]["branch"], "feat", "{listed}");
    assert_eq!(listed["worktrees"][0]["health"], "ok", "{listed}");
}

#[test]
fn a_record_that_names_another_folder_is_neither_closed_nor_discarded() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let victim = Victim::new(&env);
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    let id = s(&created, "id").to_owned();
    let record_file = repo.join(".slipway/state").join(format!("{id}.json"));
    let mut record: Value =
        serde_json::from_slice(&std::fs::read(&record_file).expect("record")).expect("json");
    record["path"] = json!(victim.0);
    std::fs::write(&record_file, record.to_string()).expect("alter");

    for args in [
        vec!["worktree", "close", id.as_str(), "--force"],
        vec!["discard", "feat", "--force"],
    ] {
        let (_, err) = env.slipway_fail(&repo, &args);
        assert_eq!(err["kind"], "corruptRecord", "{args:?}: {err}");
        assert!(
            err["message"]
                .as_str()
                .unwrap_or_default()
                .contains("not where slipway puts it"),
            "{err}"
        );
        victim.assert_intact(&format!("{args:?}"));
    }
    assert!(
        Path::new(s(&created, "path")).join(".git").is_file(),
        "the worktree stays"
    );
    // A record filed under another worktree's name is not that worktree's.
    let other = repo.join(".slipway/state/other-0123456789.json");
    std::fs::copy(&record_file, &other).expect("copy");
    let (_, err) = env.slipway_fail(&repo, &["worktree", "close", "other-0123456789", "--force"]);
    assert_eq!(err["kind"], "corruptRecord", "{err}");
    victim.assert_intact("a record under another name");
    assert_eq!(
        std::fs::read(&record_file).expect("still there"),
        record.to_string().into_bytes(),
        "the altered record is left as it is"
    );
}

/// A `sleep` with SIGTERM blocked, so a SIGTERM sent to it stays pending (allow-sleep: a bystander that stalls on purpose)
/// where `/proc/<pid>/status` shows it.
fn bystander() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sleep"); // allow-sleep: the bystander stalls until the test kills it
    cmd.arg("600");
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    cmd.spawn().expect("sleep starts") // allow-sleep: the bystander stalls until the test kills it
}

fn got_sigterm(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let pending = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .expect("pending mask")
    };
    let bit = 1u64 << (libc::SIGTERM - 1);
    (pending("SigPnd:") | pending("ShdPnd:")) & bit != 0
}

#[test]
fn cancel_signals_only_the_process_its_run_started() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    let mut victim = bystander();
    let runs = repo.join(".slipway/runs");
    std::fs::create_dir_all(&runs).expect("runs");
    let record = |run_id: &str, process: Value| {
        json!({"runId": run_id, "pid": victim.id(), "state": "running", "started": 1,
               "finished": null, "branch": "feat", "worktreePath": null, "result": null,
               "process": process})
    };
    // A pid alone (an older slipway's record, or a planted one).
    let mut bare = record("run-1-aaaaaa", Value::Null);
    bare.as_object_mut().expect("object").remove("process");
    std::fs::write(runs.join("run-1-aaaaaa.json"), bare.to_string()).expect("plant");
    // A forged identity: right pid, wrong start time.
    let forged = record(
        "run-1-bbbbbb",
        json!({"pid": victim.id(), "startTicks": 1, "bootId": "x"}),
    );
    std::fs::write(runs.join("run-1-bbbbbb.json"), forged.to_string()).expect("plant");
    // A record filed under another run's name.
    std::fs::write(runs.join("run-1-cccccc.json"), bare.to_string()).expect("plant");

    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let root = json!(repo);
    let err = lsp.err(
        "slipway.cancel",
        json!({"runId": "run-1-aaaaaa", "root": root}),
    );
    assert_eq!(kind(&err), "untrustedState", "{err}");
    let answer = lsp.ok(
        "slipway.cancel",
        json!({"runId": "run-1-bbbbbb", "root": root}),
    );
    assert_eq!(
        answer["status"], "finished",
        "a forged process is no live run: {answer}"
    );
    let err = lsp.err(
        "slipway.cancel",
        json!({"runId": "run-1-cccccc", "root": root}),
    );
    assert_eq!(kind(&err), "unknownRun", "{err}");
    for bad in ["../../victim", "/etc/passwd", "run-1-ab/../../x", ""] {
        let err = lsp.err("slipway.cancel", json!({"runId": bad, "root": root}));
        assert_eq!(kind(&err), "invalidParams", "{bad}: {err}");
        let err = lsp.err("slipway.log", json!({"runId": bad, "root": root}));
        assert_eq!(kind(&err), "invalidParams", "{bad}: {err}");
    }
    // Every answer is in: a signal, had one been sent, is pending now.
    assert!(
        !got_sigterm(victim.id()),
        "a process no run of slipway started was signalled"
    );
    victim.kill().expect("kill");
    victim.wait().expect("reaped");
}

#[test]
fn a_sandbox_record_naming_a_container_slipway_did_not_make_removes_nothing() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.slipway_json(&repo, &["worktree", "create", "--branch", "feat"]);
    let mut create = vec!["sandbox", "create", "--worktree", "feat"];
    create.extend(Sandbox::Docker.args());
    let made = env.slipway_json(&repo, &create);
    let sandbox_id = s(&made, "id").to_owned();
    let docker = |args: &[&str]| docker(None, args);
    let name = format!("bystander-{}", std::process::id());
    // One with no labels, one that claims to be slipway's for another repository.
    let plain = docker(&[
        "run",
        "-d",
        "--network",
        "none",
        "--name",
        &name,
        TEST_IMAGE,
        "sleep", // allow-sleep: a container that stalls until the test removes it
        "600",
    ]);
    let lookalike = docker(&[
        "run",
        "-d",
        "--network",
        "none",
        "--name",
        &format!("{name}-2"),
        "--label",
        "slipway.managed=true",
        "--label",
        "slipway.scope=/elsewhere/.git",
        "--label",
        &format!("slipway.run={sandbox_id}"),
        TEST_IMAGE,
        "sleep", // allow-sleep: a container that stalls until the test removes it
        "600",
    ]);
    let record_file = repo
        .join(".slipway/sandboxes")
        .join(format!("{sandbox_id}.json"));
    let original = std::fs::read(&record_file).expect("record");
    for container in [&plain, &lookalike] {
        let mut record: Value = serde_json::from_slice(&original).expect("json");
        record["containerId"] = json!(container);
        std::fs::write(&record_file, record.to_string()).expect("alter");
        let out = env.slipway(&repo, &["--json", "sandbox", "close", &sandbox_id]);
        assert!(
            !out.status.success(),
            "closing must refuse: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(
            docker(&["inspect", "-f", "{{.State.Running}}", container]),
            "true",
            "a container slipway did not make was removed"
        );
    }
    // The sandbox's own container is removed as before.
    std::fs::write(&record_file, &original).expect("restore");
    env.slipway_json(&repo, &["sandbox", "close", &sandbox_id]);
    docker(&["rm", "-f", &plain, &lookalike]);
}

#[test]
fn a_slipway_folder_owned_by_another_user_or_symlinked_elsewhere_is_not_used() {
    let env = TestEnv::new();
    let victim = Victim::new(&env);
    // Owned by someone else (as root here, as in CI; git's safe.directory rule).
    let repo = env.new_repo("foreign");
    std::fs::create_dir_all(repo.join(".slipway/journal")).expect("folder");
    let base = env.rev(&repo, "HEAD");
    plant_journal(
        &repo.join(".slipway"),
        &planted_entries(&victim.0, &base)[..1],
    );
    let chown = std::process::Command::new("chown")
        .args(["-R", "12345:12345"])
        .arg(repo.join(".slipway"))
        .status()
        .expect("chown");
    assert!(
        chown.success(),
        "the test needs root to give a folder to another user"
    );
    let out = env.slipway(&repo, &["worktree", "list"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("belongs to user 12345"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.assert_intact("a foreign .slipway");
    let (_, err) = env.slipway_fail(&repo, &["worktree", "create", "--branch", "feat"]);
    assert_eq!(err["kind"], "untrustedState", "{err}");

    // A symlink to another disk: refused for create and close alike.
    let linked = env.new_repo("linked");
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, linked.join(".slipway")).expect("symlink");
    let (_, err) = env.slipway_fail(&linked, &["worktree", "create", "--branch", "feat"]);
    assert_eq!(err["kind"], "untrustedState", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains("worktree root"),
        "the error says what to use instead: {err}"
    );
    let (_, err) = env.slipway_fail(&linked, &["worktree", "close", "feat"]);
    assert_eq!(err["kind"], "untrustedState", "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).expect("elsewhere").count(), 0);
}
