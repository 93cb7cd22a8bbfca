//! Several attempts at one prompt (issue 23): a group of runs from one
//! source commit, each on its own branch and worktree, their host git
//! writes queued per repository; checks after the agent; comparing the
//! attempts and landing one.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// An agent that commits a file naming its run.
fn committing_agent(env: &TestEnv) -> String {
    env.script(
        "commit-attempt",
        "printf '%s\\n' \"$SLIPWAY_RUN_ID\" > attempt.txt\n\
         git add attempt.txt\n\
         git commit -q -m \"attempt $SLIPWAY_RUN_ID\"\n",
    )
    .to_str()
    .expect("utf8 path")
    .to_owned()
}

/// Registered worktree paths, the host's included.
fn worktree_paths(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(str::to_owned)
        .collect()
}

fn attempts_of(outcome: &Value) -> Vec<Value> {
    outcome["attempts"].as_array().expect("attempts").clone()
}

#[test]
fn sixteen_attempts_at_once_each_get_a_branch_with_only_their_commit_and_discarding_fifteen_leaves_nothing_behind()
 {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let source = env.rev(&repo, "HEAD");
    let agent = committing_agent(&env);
    let outcome = env.slipway_json(
        &repo,
        &[
            "run",
            "--attempts",
            "16",
            "--branch",
            "try",
            "--prompt",
            "commit",
            "--",
            &agent,
        ],
    );
    assert_eq!(s(&outcome, "sourceCommit"), source);
    let attempts = attempts_of(&outcome);
    let results = outcome["results"].as_array().expect("results");
    assert_eq!(attempts.len(), 16);
    for (n, (attempt, result)) in attempts.iter().zip(results).enumerate() {
        let branch = format!("try/{}", n + 1);
        assert_eq!(s(attempt, "branch"), branch);
        assert_eq!(
            s(result, "status"),
            "completed",
            "attempt {}: {result:#}",
            n + 1
        );
        assert!(
            !result.to_string().contains(".lock"),
            "no lock error or warning: {result:#}"
        );
        // Only its own commit, on the one source commit.
        let log = env.git(
            &repo,
            &["log", "--format=%s", &format!("{source}..{branch}")],
        );
        assert_eq!(log, format!("attempt {}", s(attempt, "runId")), "{branch}");
        assert_eq!(env.rev(&repo, &format!("{branch}~1")), source, "{branch}");
    }
    assert_eq!(worktree_paths(&env, &repo).len(), 17);

    for n in 1..=15 {
        env.slipway_json(&repo, &["discard", &format!("try/{n}"), "--force"]);
    }
    let mut branches = env.local_branches(&repo);
    branches.sort();
    assert_eq!(branches, vec!["main".to_owned(), "try/16".to_owned()]);
    let worktrees = worktree_paths(&env, &repo);
    assert_eq!(worktrees.len(), 2, "{worktrees:?}");
    let kept = slipway_core::worktree::naming::dir_name("try/16");
    assert!(
        worktrees.iter().any(|p| p.ends_with(&kept)),
        "{worktrees:?}"
    );
    let folders: Vec<String> = std::fs::read_dir(repo.join(".slipway/worktrees"))
        .expect("worktrees folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(
        folders,
        vec![kept],
        "only the kept attempt's worktree folder is left"
    );
}
