//! What the editors' comparison views read (issue 23 item 3): the groups of
//! a repository (`slipway.attemptGroups`, `slipway attempts`), and one
//! attempt's diff against another's tip (`slipway.diff` with `against`),
//! which equals what `git diff -M <againstTip>` says of the same worktree.

use crate::common;
use crate::review_and_land::{git_view, numbers, slipway_view, write};

use std::path::{Path, PathBuf};

use common::lsp::{Lsp, command_agent, wait_until};
use common::*;
use serde_json::{Value, json};

/// A repository with files for attempts to modify, delete and rename.
fn fixture_repo(env: &TestEnv) -> PathBuf {
    let repo = env.new_repo("repo").canonicalize().expect("canonical repo");
    write(&repo, "mod.txt", numbers(20, "mod"));
    write(&repo, "del.txt", numbers(5, "del"));
    write(&repo, "ren.txt", numbers(30, "ren"));
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "fixture"]);
    repo
}

/// An agent whose change depends on its attempt: 1 edits, renames and adds;
/// 2 edits elsewhere, deletes and adds; any other adds one file.
fn diverging_agent(env: &TestEnv) -> PathBuf {
    env.script(
        "diverge",
        "case \"$SLIPWAY_SOURCE_BRANCH\" in\n\
         */1) sed -i 's/^mod line 3$/one/' mod.txt; git mv ren.txt renamed.txt;\n\
              echo more >> renamed.txt; printf 'a\\nb\\n' > one.txt ;;\n\
         */2) sed -i 's/^mod line 7$/two/' mod.txt; git rm -q del.txt; printf 'x\\n' > two.txt ;;\n\
         *) printf 'three\\n' > three.txt ;;\n\
         esac\n\
         git add -A\n\
         git commit -q -m \"attempt $SLIPWAY_SOURCE_BRANCH\"\n",
    )
}

/// The worktree folder of `branch`, as `slipway.list` names it.
fn worktree_of(lsp: &mut Lsp, repo: &Path, branch: &str) -> PathBuf {
    let list = lsp.ok("slipway.list", json!({ "root": repo }));
    list["worktrees"]
        .as_array()
        .expect("worktrees")
        .iter()
        .find(|w| w["branch"] == branch)
        .map(|w| PathBuf::from(s(w, "path")))
        .unwrap_or_else(|| panic!("no worktree of {branch} in {list:#}"))
}

/// Waits for the `slipway/runFinished` of every run of a `slipway.run`
/// with `attempts` answer.
fn wait_group(lsp: &mut Lsp, started: &Value) {
    for id in started["runIds"].as_array().expect("runIds") {
        let finished = lsp
            .wait_for_notification("slipway/runFinished", |p| p["runId"] == *id, EVENT_DEADLINE)
            .unwrap_or_else(|| panic!("no runFinished for {id}:\n{}", lsp.stderr()));
        assert_eq!(finished.msg["params"]["status"], "completed", "{id}");
    }
}

#[test]
fn an_attempt_diffed_against_another_equals_git_diff_between_their_tips() {
    let env = TestEnv::new();
    let repo = fixture_repo(&env);
    let agent = diverging_agent(&env);
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let started = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "branch", "branch": "try",
            "agent": command_agent(&agent), "prompt": "diverge", "attempts": 2,
        }),
    );
    wait_group(&mut lsp, &started);
    let (tip1, tip2) = (env.rev(&repo, "try/1"), env.rev(&repo, "try/2"));
    let wt1 = worktree_of(&mut lsp, &repo, "try/1");
    assert_eq!(env.porcelain(&wt1), "", "attempt 1 committed everything");

    // Committed only: tip against tip.
    let answer = lsp.ok(
        "slipway.diff",
        json!({ "root": repo, "worktree": "try/1", "against": "try/2" }),
    );
    assert_eq!(s(&answer, "base"), tip2);
    assert_eq!(s(&answer, "head"), tip1);
    assert_eq!(s(&answer, "against"), "try/2");
    let ours = slipway_view(&answer);
    let names = env.git(&repo, &["diff", "-M", "--name-status", &tip2, &tip1]);
    let git = git_view(&env, &wt1, &tip2);
    similar_asserts::assert_eq!(ours, git);
    assert_eq!(ours.len(), names.lines().count(), "{names}");
    let status = |p: &str| s(&ours[p], "status").to_owned();
    assert_eq!(status("mod.txt"), "modified");
    assert_eq!(
        (
            ours["mod.txt"]["additions"].clone(),
            ours["mod.txt"]["deletions"].clone()
        ),
        (json!(2), json!(2))
    );
    assert_eq!(status("renamed.txt"), "renamed");
    assert_eq!(status("del.txt"), "added", "2 deleted it, 1 kept it");
    assert_eq!(status("one.txt"), "added");
    assert_eq!(status("two.txt"), "deleted");

    // One file: its base side is the other attempt's tip.
    let file = |lsp: &mut Lsp, path: &str| {
        lsp.ok(
            "slipway.diff",
            json!({ "root": repo, "worktree": "try/1", "against": "try/2", "path": path }),
        )
    };
    let texts = file(&mut lsp, "mod.txt");
    assert_eq!(
        s(&texts, "baseText"),
        env.git(&repo, &["show", &format!("{tip2}:mod.txt")]) + "\n"
    );
    assert_eq!(
        s(&texts, "worktreeText"),
        std::fs::read_to_string(wt1.join("mod.txt")).expect("mod.txt")
    );
    let renamed = file(&mut lsp, "renamed.txt");
    assert_eq!(
        s(&renamed, "baseText"),
        numbers(30, "ren"),
        "from ren.txt at try/2"
    );
    let del = file(&mut lsp, "del.txt");
    assert!(del.get("baseText").is_none(), "{del:#}");
    assert_eq!(s(&del, "worktreeText"), numbers(5, "del"));

    // Uncommitted files count too, as in a diff against the base.
    write(&wt1, "wip.txt", "not yet\n");
    write(
        &wt1,
        "mod.txt",
        numbers(20, "mod").replace("mod line 9\n", ""),
    );
    let answer = lsp.ok(
        "slipway.diff",
        json!({ "root": repo, "worktree": wt1, "against": "try/2" }),
    );
    similar_asserts::assert_eq!(slipway_view(&answer), git_view(&env, &wt1, &tip2));

    // The CLI twin says the same.
    let cli = env.slipway_json(&repo, &["diff", "try/1", "--against", "try/2"]);
    assert_eq!(cli, answer);
    let text = env.slipway(&repo, &["diff", "try/1", "--against", "try/2"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("is the tip of try/2"), "{text}");

    let unknown = lsp.err(
        "slipway.diff",
        json!({ "root": repo, "worktree": "try/1", "against": "nope" }),
    );
    assert_eq!(unknown["data"]["kind"], "worktreeNotFound", "{unknown}");
}

#[test]
fn the_groups_are_listed_newest_first_with_their_prompt_and_running_attempts() {
    let env = TestEnv::new();
    let repo = fixture_repo(&env);
    let agent = diverging_agent(&env);
    // An older group, made by the CLI, whose prompt has two lines.
    let older = env.slipway_json(
        &repo,
        &[
            "run",
            "--attempts",
            "3",
            "--branch",
            "old",
            "--check",
            "true",
            "--prompt",
            "\n  rename the\tthings  \nsecond line",
            "--",
            agent.to_str().expect("utf8"),
        ],
    );
    let older_id = s(&older, "groupId").to_owned();
    // Made earlier than the next one, which may start in the same second.
    let record = repo
        .join(".slipway/attempts")
        .join(format!("{older_id}.json"));
    let mut on_disk: Value =
        serde_json::from_slice(&std::fs::read(&record).expect("record")).expect("json");
    on_disk["created"] = json!(on_disk["created"].as_u64().expect("created") - 100);
    std::fs::write(&record, serde_json::to_vec(&on_disk).expect("json")).expect("write");
    // Records slipway cannot have written are skipped.
    std::fs::write(repo.join(".slipway/attempts/att-1-ff.json"), b"{not json").expect("write");
    let mut tampered = on_disk.clone();
    tampered["groupId"] = json!("att-2-ee");
    tampered["attempts"][0]["branch"] = json!("../x..");
    std::fs::write(
        repo.join(".slipway/attempts/att-2-ee.json"),
        serde_json::to_vec(&tampered).expect("json"),
    )
    .expect("write");

    // A newer group whose two attempts wait at a gate.
    let gate = Gate::new(&env, "hold");
    let gated = env.script(
        "gated",
        &format!(
            "{}{}printf 'g\\n' > gated.txt\ngit add gated.txt\ngit commit -q -m gated\n",
            gate.open_line(),
            gate.wait_line()
        ),
    );
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let started = lsp.ok(
        "slipway.run",
        json!({
            "root": repo, "strategy": "merge-to-head", "agent": command_agent(&gated),
            "prompt": "hold on", "attempts": 2,
        }),
    );
    let newer_id = s(&started, "groupId").to_owned();
    let mut groups = Value::Null;
    let both_running = wait_until(EVENT_DEADLINE, || {
        groups = lsp.ok("slipway.attemptGroups", json!({ "root": repo }));
        groups["groups"][0]["running"] == 2
    });
    assert!(both_running, "{groups:#}\n{}", lsp.stderr());
    let list = groups["groups"].as_array().expect("groups");
    assert_eq!(list.len(), 2, "the bad records are skipped: {groups:#}");
    let (newer, old) = (&list[0], &list[1]);
    assert_eq!(s(newer, "groupId"), newer_id);
    assert_eq!(s(newer, "strategy"), "merge-to-head");
    assert_eq!(s(newer, "into"), "main");
    assert_eq!(s(newer, "prompt"), "hold on");
    assert_eq!(newer["attempts"], 2);
    assert_eq!(newer["check"], Value::Null);
    assert_eq!(s(old, "groupId"), older_id);
    assert_eq!(s(old, "strategy"), "branch");
    assert_eq!(s(old, "prompt"), "rename the things");
    assert_eq!(s(old, "check"), "true");
    assert_eq!(
        (old["attempts"].clone(), old["running"].clone()),
        (json!(3), json!(0))
    );
    assert_eq!(s(old, "sourceCommit"), env.rev(&repo, "main"));

    // The CLI lists the same.
    assert_eq!(env.slipway_json(&repo, &["attempts"]), groups);
    let text = env.slipway(&repo, &["attempts"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("{newer_id}  2 attempts, 2 running")),
        "{text}"
    );
    assert!(text.contains("merge-to-head into main"), "{text}");
    assert!(
        text.contains(&format!("{older_id}  3 attempts  ")),
        "{text}"
    );
    assert!(text.contains("    rename the things\n"), "{text}");

    gate.go();
    gate.go();
    wait_group(&mut lsp, &started);
    let after = lsp.ok("slipway.attemptGroups", json!({ "root": repo }));
    assert_eq!(after["groups"][0]["running"], 0, "{after:#}");
}

#[test]
fn a_repository_without_groups_lists_none() {
    let env = TestEnv::new();
    let repo = fixture_repo(&env);
    let mut lsp = Lsp::start(&env, Some(&repo), false);
    let groups = lsp.ok("slipway.attemptGroups", json!({ "root": repo }));
    assert_eq!(groups, json!({ "groups": [] }));
    let text = env.slipway(&repo, &["attempts"]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("No groups of attempts"));
}
