//! Safety rule 3: after a run, every ref other than the run's own branch is
//! compared with the snapshot taken before it; any that moved is restored and
//! reported.

use crate::common;

use std::path::Path;

use common::*;

fn refs(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn refs_moved_by_the_agent_are_restored_and_reported() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.commit_file(&repo, "a.txt", "a\n", "second commit");
    env.git(&repo, &["branch", "keep"]);
    env.git(&repo, &["tag", "v1"]);
    let main_before = env.rev(&repo, "main");
    let agent = env.script(
        "rogue",
        "set -e\necho work > work.txt\ngit add work.txt\ngit commit -qm 'own work'\n\
         git update-ref refs/heads/main HEAD\n\
         git tag v9\n\
         git update-ref -d refs/heads/keep\n\
         git branch stray\n\
         git update-ref refs/tags/v1 HEAD\n",
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "agent/task",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(env.rev(&repo, "main"), main_before, "main is put back");
    assert_eq!(
        env.rev(&repo, "keep"),
        main_before,
        "a deleted branch is recreated"
    );
    assert!(
        env.git_output(&repo, &["rev-parse", "--verify", "-q", "refs/tags/v9"])
            .stdout
            .is_empty(),
        "a created tag is removed"
    );
    assert!(!env.local_branches(&repo).contains(&"stray".to_owned()));
    assert_eq!(env.rev(&repo, "v1^{commit}"), main_before);
    // The run's own branch keeps the agent's commit.
    assert_eq!(env.rev(&repo, "agent/task"), commit_shas(&result)[0]);

    let mut reported: Vec<String> = result["refsRestored"]
        .as_array()
        .expect("refsRestored")
        .iter()
        .map(|c| {
            assert_eq!(c["restored"], true, "{c}");
            c["name"].as_str().expect("name").to_owned()
        })
        .collect();
    reported.sort();
    assert_eq!(
        reported,
        vec![
            "refs/heads/keep",
            "refs/heads/main",
            "refs/heads/stray",
            "refs/tags/v1",
            "refs/tags/v9"
        ]
    );
}

#[test]
fn the_head_strategy_guards_every_other_ref() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "release"]);
    let release = env.rev(&repo, "release");
    let agent = env.script(
        "head-rogue",
        "set -e\necho x > x.txt\ngit add x.txt\ngit commit -qm 'agent on HEAD'\ngit update-ref refs/heads/release HEAD\n",
    );
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
    assert_eq!(env.rev(&repo, "release"), release);
    assert_eq!(
        env.rev(&repo, "main"),
        commit_shas(&result)[0],
        "the host branch is the run's own"
    );
    assert_eq!(result["refsRestored"][0]["name"], "refs/heads/release");
}

#[test]
fn a_well_behaved_run_reports_nothing_and_changes_no_other_ref() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.git(&repo, &["branch", "other"]);
    let before = refs(&env, &repo);
    let agent = env.script(
        "polite",
        "set -e\necho y > y.txt\ngit add y.txt\ngit commit -qm polite\n",
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "polite",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    assert_eq!(result["refsRestored"], serde_json::json!([]));
    let after: Vec<String> = refs(&env, &repo)
        .into_iter()
        .filter(|r| !r.starts_with("refs/heads/polite "))
        .collect();
    assert_eq!(after, before);
}
