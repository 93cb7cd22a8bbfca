//! Containers are hardened (DESIGN §2 "Sandboxes"): the agent runs with
//! `no-new-privileges` and only the capabilities an agent needs, so root in
//! the container (the host's uid, which is root on CI machines and in
//! devcontainers) cannot make device nodes, change uids or set file
//! capabilities, and a set-uid helper in the image (`sudo`) gives a non-root
//! user nothing. After every run, device nodes, fifos, sockets and set-id
//! bits the run left in the checkout are removed and reported; what the user
//! had before a `head` run stays.

use crate::common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// Linux capability numbers of what the container keeps (see
/// `AGENT_CAPABILITIES` in the docker sandbox).
const KEPT: &[(u32, &str)] = &[
    (0, "CHOWN"),
    (1, "DAC_OVERRIDE"),
    (3, "FOWNER"),
    (5, "KILL"),
    (10, "NET_BIND_SERVICE"),
];

fn kept_mask() -> u64 {
    KEPT.iter().fold(0, |m, (bit, _)| m | (1u64 << bit))
}

/// What the attacking agent does as root in its container.
const ATTACK: &str = "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status\n\
    mknod blk b 7 0 && echo MADE-BLOCK || echo REFUSED-BLOCK\n\
    mknod chr c 1 3 && echo MADE-CHAR || echo REFUSED-CHAR\n\
    mkfifo fifo && echo MADE-FIFO\n\
    cp \"$(command -v id)\" suid-id && chmod 4755 suid-id && echo MADE-SUID\n\
    mkdir -p sgid/inner && chmod 2775 sgid && echo MADE-SGID\n";

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
}

fn findings(result: &Value) -> Vec<(String, String)> {
    result["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .map(|q| (s(q, "path").to_owned(), s(q, "finding").to_owned()))
        .collect()
}

fn status_field(log: &str, field: &str) -> String {
    log.lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("{field} not in the log:\n{log}"))
        .trim()
        .to_owned()
}

#[test]
fn root_in_a_container_keeps_only_what_an_agent_needs_and_leaves_no_special_files() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let mut args = vec!["--json", "run", "--branch", "agent/root"];
    args.extend(Sandbox::Docker.args());
    args.extend(["--", "sh", "-c", ATTACK]);
    let (ok, result, log) = env.run_result(&repo, &args);
    assert!(ok, "{result}\n{log}");
    assert_eq!(status_field(&log, "NoNewPrivs:"), "1", "{log}");
    for field in ["CapEff:", "CapBnd:"] {
        let mask = u64::from_str_radix(&status_field(&log, field), 16).expect("hex");
        assert_eq!(
            mask,
            kept_mask(),
            "{field} {mask:#x}: only {:?} are kept",
            KEPT.iter().map(|(_, n)| *n).collect::<Vec<_>>()
        );
    }
    assert!(
        log.contains("REFUSED-BLOCK") && log.contains("REFUSED-CHAR"),
        "{log}"
    );
    assert!(
        log.contains("MADE-FIFO") && log.contains("MADE-SUID") && log.contains("MADE-SGID"),
        "{log}"
    );

    let worktree = PathBuf::from(s(&result, "worktreePath"));
    assert!(!worktree.join("fifo").exists(), "the fifo is removed");
    assert!(!worktree.join("blk").exists() && !worktree.join("chr").exists());
    assert_eq!(
        mode(&worktree.join("suid-id")) & 0o7777,
        0o755,
        "set-uid cleared"
    );
    assert_eq!(
        mode(&worktree.join("sgid")) & 0o7777,
        0o775,
        "set-gid cleared"
    );
    let found = findings(&result);
    for (path, finding) in [
        ("fifo", "specialFile"),
        ("suid-id", "setIdBits"),
        ("sgid", "setIdBits"),
    ] {
        assert!(
            found.contains(&(path.to_owned(), finding.to_owned())),
            "{path} is reported as {finding}: {found:?}"
        );
    }
}

#[test]
fn special_files_in_the_host_checkout_before_a_head_run_stay_and_the_runs_go() {
    require_docker_image();
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    std::fs::write(repo.join(".gitignore"), "mine.fifo\ntools/\n").expect("ignore");
    env.git(&repo, &["add", ".gitignore"]);
    env.git(&repo, &["commit", "-qm", "ignore the user's fifo"]);
    let mkfifo = std::process::Command::new("mkfifo")
        .arg(repo.join("mine.fifo"))
        .status()
        .expect("mkfifo");
    assert!(mkfifo.success());
    std::fs::create_dir_all(repo.join("tools")).expect("tools");
    std::fs::copy("/usr/bin/id", repo.join("tools/helper")).expect("copy");
    std::fs::set_permissions(
        repo.join("tools/helper"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .expect("chmod");
    for sandbox in [Sandbox::Host, Sandbox::Docker] {
        let mut args = vec!["--json", "run", "--strategy", "head"];
        args.extend(sandbox.args());
        args.extend(["--", "sh", "-c", "mkfifo theirs.fifo && echo MADE"]);
        let (ok, result, log) = env.run_result(&repo, &args);
        assert!(ok && log.contains("MADE"), "{sandbox:?}: {result}\n{log}");
        assert!(
            std::fs::symlink_metadata(repo.join("mine.fifo"))
                .expect("mine")
                .file_type()
                .is_fifo(),
            "{sandbox:?}: the user's fifo stays"
        );
        assert_eq!(
            mode(&repo.join("tools/helper")) & 0o7777,
            0o4755,
            "the user's set-uid file stays"
        );
        assert!(
            !repo.join("theirs.fifo").exists(),
            "{sandbox:?}: the run's fifo goes"
        );
        assert_eq!(
            findings(&result),
            vec![("theirs.fifo".to_owned(), "specialFile".to_owned())]
        );
    }
}

#[test]
fn a_set_uid_helper_in_the_image_gives_a_non_root_user_no_root() {
    // As a user who is not root (uid 4321), on the loopback engine (the
    // default socket is root's): the image has a set-uid-root `id`, as an
    // image with `sudo` has a set-uid-root `sudo`.
    let docker_host = crate::docker_isolated::remote();
    let docker = |args: &[&str]| docker(Some(&docker_host), args);
    let name = format!("slipway-suid-{}", std::process::id());
    docker(&[
        "run",
        "--name",
        &name,
        "--network",
        "none",
        TEST_IMAGE,
        "sh",
        "-c",
        "cp \"$(command -v id)\" /bin/suid-id && chmod 4755 /bin/suid-id",
    ]);
    let image = format!("slipway-test:suid-{}", std::process::id());
    docker(&["commit", &name, &image]);
    docker(&["rm", "-f", &name]);

    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let chown = std::process::Command::new("chown")
        .args(["-R", "4321:4321"])
        .arg(env.path())
        .status()
        .expect("chown");
    assert!(
        chown.success(),
        "the test gives its folder to another user: it needs root"
    );
    let mut cmd = env.slipway_cmd(&repo);
    let program = cmd.get_program().to_owned();
    let mut as_user = std::process::Command::new("setpriv");
    as_user
        .args(["--reuid=4321", "--regid=4321", "--clear-groups", "--"])
        .arg(program)
        .current_dir(&repo)
        .env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            as_user.env(k, v);
        }
    }
    cmd = as_user;
    cmd.env("DOCKER_HOST", &docker_host).args([
        "--json", "run", "--branch", "agent/suid", "--sandbox", "docker", "--image", &image,
        "--network", "none", "--", "sh", "-c",
        "/bin/suid-id; /bin/suid-id -u > euid.txt; git add euid.txt; git commit -qm euid; cat euid.txt",
    ]);
    let out = cmd.output().expect("slipway runs as the user");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no result ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(out.status.success(), "{result}\n{log}");
    assert!(log.contains("uid=4321"), "the helper ran: {log}");
    assert!(
        !log.contains("euid=0"),
        "the set-uid helper made the agent root: {log}"
    );
    assert_eq!(
        env.git(
            &repo,
            &["-c", "safe.directory=*", "show", "agent/suid:euid.txt"]
        ),
        "4321",
        "the agent stayed the user"
    );
    docker(&["rmi", &image]);
}
