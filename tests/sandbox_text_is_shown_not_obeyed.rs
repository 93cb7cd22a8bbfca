//! Text that comes out of a sandbox — an agent's question and final answer,
//! its current step, a check's output, a run log's last line — reaches the
//! user's terminal (the CLI) and editor (the sidecar) as text to read, never
//! as escape sequences for the terminal to obey: an agent cannot retitle the
//! window, clear the screen, hide words or set the clipboard (OSC 52), and
//! characters that reorder text as shown are marked.

use crate::common;

use serde_json::Value;

use common::*;

/// What a hostile agent prints: a step that clears the screen and retitles
/// the window, then a question that writes the clipboard, reorders its text
/// and colours it.
const HOSTILE: &str = r#"printf 'step one \033]0;pwned\007\033[2J\n'
echo
printf 'Should I \033]52;c;cHduZWQ=\033\\delete it \342\200\256, or do you want \033[8mhidden\033[0m?\n'
"#;

/// The sequences and characters nothing shown may hold.
fn obeyable(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{202A}'..='\u{202E}').contains(&c)
        })
        .collect()
}

fn field<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .fold(value, |v, key| &v[*key])
        .as_str()
        .unwrap_or_else(|| panic!("no {path:?} in {value}"))
}

#[test]
fn an_agents_escape_sequences_reach_no_terminal_or_editor() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script("hostile", HOSTILE);
    let agent = agent.to_str().expect("utf-8 path");
    let check = "printf '\\033[32mok\\033]0;pwned\\007\\n'";
    let (_, result, log) = env.run_result(
        &repo,
        &[
            "--json", "run", "--branch", "hostile", "--check", check, "--prompt", "work", "--",
            agent,
        ],
    );
    assert_eq!(result["status"], "needsInput", "{result}\n{log}");
    // The log keeps what the agent printed, byte for byte: it is the record.
    assert!(log.contains("\u{1b}]52;"), "{log:?}");

    let question = field(&result, &["question", "text"]);
    assert_eq!(
        question, "Should I delete it \u{FFFD}, or do you want hidden?",
        "the words stay, the sequences go, the reordering mark is shown"
    );
    let tail = result["check"]["tail"].to_string();
    assert!(tail.contains("ok"), "{tail}");
    for (what, text) in [
        ("question", question.to_owned()),
        ("check output", tail),
        ("final answer", field(&result, &["finalText"]).to_owned()),
    ] {
        assert_eq!(obeyable(&text), Vec::<char>::new(), "{what}: {text:?}");
    }

    // `slipway runs`, as a person reads it and as an editor gets it.
    let listed = env.slipway(&repo, &["runs"]);
    assert!(listed.status.success(), "{listed:?}");
    let shown = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(shown.contains("asks: Should I delete it"), "{shown}");
    assert_eq!(obeyable(&shown), Vec::<char>::new(), "{shown:?}");
    let runs = env.slipway_json(&repo, &["runs"]);
    let run = &runs["runs"][0];
    for key in ["lastLine"] {
        if let Some(text) = run[key].as_str() {
            assert_eq!(obeyable(text), Vec::<char>::new(), "{key}: {text:?}");
        }
    }
    let step = run["activity"]["step"].as_str().unwrap_or_default();
    assert_eq!(obeyable(step), Vec::<char>::new(), "{step:?}");
}

/// What a repository holds is shown as text too: a commit subject and file
/// names an agent (or whoever made a cloned repository) wrote cannot command
/// the terminal of `slipway branches`, `diff`, `worktree list` or a close's
/// dry run; nor can an agent's output lines as `slipway run` shows them.
#[test]
fn a_repositorys_names_and_subjects_reach_no_terminal() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let created = env.slipway_json(&repo, &["worktree", "create", "--branch", "hostile"]);
    let wt = std::path::Path::new(field(&created, &["path"])).to_path_buf();
    let named = "notes \u{1b}]0;pwned\u{7}\u{202E}txt.md";
    std::fs::write(wt.join(named), "x\n").expect("write the committed file");
    env.git(&wt, &["add", "-A"]);
    env.git(
        &wt,
        &[
            "commit",
            "-q",
            "-m",
            "fix \u{1b}]52;c;cHduZWQ=\u{7}the \u{1b}[8mbuild\u{1b}[0m \u{9b}2J",
        ],
    );
    std::fs::write(wt.join("left \u{1b}[2Jover"), "y\n").expect("write the uncommitted file");

    for args in [
        &["branches"][..],
        &["diff", "hostile"],
        &["worktree", "list"],
        &["worktree", "close", "hostile", "--dry-run"],
        &["discard", "hostile", "--dry-run"],
    ] {
        let out = env.slipway(&repo, args);
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(obeyable(&shown), Vec::<char>::new(), "{args:?}: {shown:?}");
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            obeyable(&said),
            Vec::<char>::new(),
            "{args:?} stderr: {said:?}"
        );
    }
    let agent = env.script("hostile", HOSTILE);
    let agent = agent.to_str().expect("utf-8 path");
    let out = env.slipway(
        &repo,
        &["run", "--branch", "loud", "--prompt", "work", "--", agent],
    );
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        said.contains("step one"),
        "the output lines are shown: {said}"
    );
    assert_eq!(
        obeyable(&said),
        Vec::<char>::new(),
        "run's output: {said:?}"
    );

    let diff = env.slipway(&repo, &["diff", "hostile"]);
    let diff = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert!(
        diff.contains("notes ") && diff.contains("txt.md"),
        "the name's words stay: {diff}"
    );
    let preview = env.slipway(&repo, &["discard", "hostile", "--dry-run"]);
    let preview = String::from_utf8_lossy(&preview.stdout).into_owned();
    assert!(
        preview.contains("fix the build"),
        "the subject's words stay: {preview}"
    );
    assert!(preview.contains("left over"), "{preview}");

    // What the editors get (the sidecar answers from the same core): the
    // subjects in a branch listing and in what a discard would lose.
    let listed = env.slipway_json(&repo, &["branches"]);
    let subject = listed["branches"]
        .as_array()
        .and_then(|all| all.iter().find(|b| b["name"] == "hostile"))
        .and_then(|b| b["subject"].as_str())
        .unwrap_or_else(|| panic!("no hostile branch: {listed}"));
    assert!(subject.starts_with("fix the build"), "{subject:?}");
    assert_eq!(obeyable(subject), Vec::<char>::new(), "{subject:?}");
    let at_risk = env.slipway_json(&repo, &["discard", "hostile", "--dry-run"]);
    let subject = at_risk["atRisk"]["commits"][0]["subject"]
        .as_str()
        .unwrap_or_else(|| panic!("no commit at risk: {at_risk}"));
    assert_eq!(obeyable(subject), Vec::<char>::new(), "{subject:?}");
}
