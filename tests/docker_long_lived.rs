//! Long-lived sandboxes: create once, run several times, exec a command, close
//! (the container only; the worktree follows its own close rules). Real engine.

use crate::common;

use std::path::Path;

use common::*;

const IMAGE: &str = "slipway-test:latest";

fn container_exists(id: &str) -> bool {
    std::process::Command::new("docker")
        .args(["inspect", id])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn commit_script(name: &str) -> String {
    format!(
        "set -e; echo {name} >> runs.txt; git add runs.txt; git commit -qm 'run {name}'; echo seen-{name} >> /tmp/container-memory"
    )
}

#[test]
fn one_container_serves_several_runs_and_closing_it_keeps_the_worktree() {
    for kind in ["docker", "docker-isolated"] {
        require_docker_image();
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        let branch = format!("long/{kind}");
        env.slipway_json(&repo, &["worktree", "create", "--branch", &branch]);
        let sandbox = env.slipway_json(
            &repo,
            &[
                "sandbox",
                "create",
                "--worktree",
                &branch,
                "--sandbox",
                kind,
                "--image",
                IMAGE,
                "--network",
                "none",
            ],
        );
        let id = s(&sandbox, "id").to_owned();
        let container = s(&sandbox, "containerId").to_owned();
        assert!(container_exists(&container));

        let mut shas = Vec::new();
        for round in ["one", "two"] {
            let result = env.slipway_json(
                &repo,
                &[
                    "run",
                    "--in-sandbox",
                    &id,
                    "--",
                    "bash",
                    "-c",
                    &commit_script(round),
                ],
            );
            let got = commit_shas(&result);
            assert_eq!(got.len(), 1, "{kind} {round}: {result}");
            assert_eq!(
                env.rev(&repo, &branch),
                got[0],
                "{kind}: commits land on the branch"
            );
            assert!(
                container_exists(&container),
                "{kind}: the container outlives the run"
            );
            shas.extend(got);
            if kind == "docker-isolated" && round == "two" {
                let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
                assert!(
                    log.contains("only what is new since"),
                    "{kind}: the second run ships only news:\n{log}"
                );
            }
        }
        // Same container both times: what run one left in it, run two saw.
        let out = env.slipway(
            &repo,
            &["sandbox", "exec", &id, "--", "cat", "/tmp/container-memory"],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "seen-one\nseen-two\n",
            "{kind}"
        );
        let out = env.slipway(
            &repo,
            &["--json", "sandbox", "exec", &id, "--", "sh", "-c", "exit 4"],
        );
        assert!(!out.status.success(), "a failing command fails the exec");
        let exec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(exec["exitCode"], 4);

        let closed = env.slipway_json(&repo, &["sandbox", "close", &id]);
        assert_eq!(closed["closed"], id.as_str());
        assert!(
            !container_exists(&container),
            "{kind}: close removes the container"
        );
        let wt = Path::new(s(&closed, "worktreePath"));
        assert!(wt.is_dir(), "{kind}: the worktree stays");
        assert_eq!(
            env.git(&repo, &["rev-list", "--count", &format!("main..{branch}")]),
            "2"
        );
        let (_, err) = env.slipway_fail(&repo, &["sandbox", "exec", &id, "--", "true"]);
        assert_eq!(err["kind"], "unknownSandbox");
    }
}
