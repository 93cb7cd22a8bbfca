//! `slipway demo`: the embedded default. It needs nothing but this binary, `sh`
//! and `git`: a fresh repository, a scripted agent that edits a file and
//! commits, a merge-to-head run on the host sandbox.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use slipway_core::agent::AgentSpec;
use slipway_core::agent::prompt::PromptSource;
use slipway_core::git::HostRepo;
use slipway_core::git::policy::SourcePolicy;
use slipway_core::run::{Hooks, RunRequest, RunStrategy, SandboxSpec, Timeouts};

use super::CliError;

const AGENT_SCRIPT: &str = r#"set -e
echo "agent: iteration $SLIPWAY_ITERATION on $SLIPWAY_SOURCE_BRANCH (lands on $SLIPWAY_TARGET_BRANCH)"
echo "agent: prompt was: $SLIPWAY_PROMPT"
printf '%s\n' "- a note written by the demo agent" >> NOTES.md
git add NOTES.md
git commit -q -m "demo: the agent adds a note"
echo "<promise>COMPLETE</promise>"
"#;

pub fn run_demo(dir: Option<PathBuf>, json: bool) -> Result<ExitCode, CliError> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!(
            "slipway-demo-{}",
            slipway_core::util::random_hex(4)
        )),
    };
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("NOTES.md"), "# Notes\n")?;
    slipway_core::git::init_with_first_commit(
        &dir,
        ("slipway demo", "demo@slipway.invalid"),
        &["NOTES.md"],
        "initial commit",
    )?;
    if !json {
        stderrln!("slipway demo: repository at {}", dir.display());
    }
    let host = HostRepo::open(&dir)?;
    let request = RunRequest {
        run_id: None,
        strategy: RunStrategy::MergeToHead,
        worktree: None,
        source: SourcePolicy::CurrentBranch,
        copy: Vec::new(),
        agent: AgentSpec::Command {
            command: vec!["sh".into(), "-c".into(), AGENT_SCRIPT.into()],
        },
        sandbox: SandboxSpec::None,
        sandbox_id: None,
        workspace: None,
        prompt: PromptSource::Inline("Add a note to NOTES.md and commit it.".into()),
        prompt_args: Default::default(),
        max_iterations: 1,
        budgets: Default::default(),
        completion_signals: Vec::new(),
        timeouts: Timeouts {
            idle: Duration::from_secs(60),
            hook: Duration::from_secs(60),
            completion_grace: Duration::from_secs(2),
            merge: Duration::from_secs(60),
            ..Timeouts::default()
        },
        hooks: Hooks::default(),
        check: None,
        reply: None,
        engine: None,
    };
    let code = super::run_cli(&host, request, json, false)?;
    if !json {
        let notes = std::fs::read_to_string(dir.join("NOTES.md")).unwrap_or_default();
        stderrln!("slipway demo: NOTES.md in the host checkout now reads:\n{notes}");
    }
    Ok(code)
}
