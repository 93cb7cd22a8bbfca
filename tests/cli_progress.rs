//! Long CLI steps show a spinner on stderr when it is a terminal, and nothing
//! when stderr is a pipe or `--json` is given. The terminal is a real pty from
//! util-linux `script`. The spinner is drawn as its step starts (indicatif
//! draws its first updates at once, however fast the step), so nothing here
//! depends on how long a step takes.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// Runs `slipway ARGS` with a pty for stdin/stdout/stderr; returns what the
/// terminal showed.
fn on_a_terminal(env: &TestEnv, dir: &Path, args: &str) -> String {
    let line = format!("{} {args}", env!("CARGO_BIN_EXE_slipway"));
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(dir)
        .env("TERM", "xterm")
        .stdin(Stdio::null());
    for (k, v) in env.envs() {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .expect("util-linux `script` runs (apt install bsdutils)");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "slipway {args} failed:\n{shown}");
    shown
}

/// A repository with an ignored folder to copy in.
fn repo_with_an_ignored_folder(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.new_repo("repo");
    std::fs::write(repo.join(".gitignore"), "big/\n").expect("write");
    env.git(&repo, &["add", ".gitignore"]);
    env.git(&repo, &["commit", "-qm", "ignore big"]);
    std::fs::create_dir_all(repo.join("big/d0")).expect("mkdir");
    std::fs::write(repo.join("big/d0/f0.txt"), "x\n").expect("write");
    repo
}

#[test]
fn worktree_create_and_close_show_a_spinner_on_a_terminal() {
    let env = TestEnv::new();
    let repo = repo_with_an_ignored_folder(&env);
    let shown = on_a_terminal(&env, &repo, "worktree create --branch spin --copy big");
    assert!(
        shown.contains("creating a worktree for 'spin' and copying big"),
        "no spinner on the terminal:\n{shown}"
    );
    // The result still reaches the person.
    assert!(shown.contains("spin"), "{shown}");
    let shown = on_a_terminal(&env, &repo, "worktree close spin");
    assert!(shown.contains("closing worktree 'spin'"), "{shown}");
}

#[test]
fn no_spinner_on_a_pipe_or_with_json() {
    let env = TestEnv::new();
    let repo = repo_with_an_ignored_folder(&env);
    let out = env.slipway(
        &repo,
        &["worktree", "create", "--branch", "quiet", "--copy", "big"],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("creating a worktree"), "{stderr}");
    let shown = on_a_terminal(&env, &repo, "--json worktree close quiet");
    assert!(!shown.contains("closing worktree"), "{shown}");
    assert!(shown.contains("\"removed\""), "the JSON answer: {shown}");
}

#[test]
fn a_run_shows_its_phase_on_a_terminal() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script("quick", "echo done-working\n");
    let shown = on_a_terminal(
        &env,
        &repo,
        &format!("run --strategy branch --branch spun -- {}", agent.display()),
    );
    assert!(shown.contains("iteration 1 of 1"), "{shown}");
    assert!(
        shown.contains("  │ done-working"),
        "the agent's output: {shown}"
    );
    // The spinner's line follows the agent: its latest output is the step
    // (a braille spinner frame, then the line), not `command started` throughout.
    let spun = shown.match_indices(" done-working").any(|(i, _)| {
        shown[..i]
            .chars()
            .next_back()
            .is_some_and(|c| ('\u{2800}'..='\u{28ff}').contains(&c))
    });
    assert!(
        spun,
        "the step line never showed the agent's output: {shown}"
    );
    assert!(
        !shown.contains("agentStarted"),
        "an event key shown: {shown}"
    );
}
