//! The `ask` policy on a terminal: the CLI shows the branches and reads a
//! choice. Without a terminal the run stops with `sourceBranchRequired`.

use slipway_core::error::ErrorKind;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

use slipway_core::git::HostRepo;
use slipway_core::git::policy::{SourcePolicy, branch_choices};

use super::CliError;

/// Whether a person can answer.
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Shows `choices` for `what` on stderr and reads a number (or a name) from stdin.
pub fn choose(what: &str, choices: &[String]) -> Result<SourcePolicy, CliError> {
    if choices.is_empty() {
        return Err(CliError::new(
            ErrorKind::SourceBranchRequired,
            format!("{what}: there are no branches to choose from"),
        ));
    }
    let mut err = std::io::stderr();
    let _ = writeln!(err, "Source branch for {what}:");
    for (i, c) in choices.iter().enumerate() {
        let _ = writeln!(err, "  {:>2}) {c}", i + 1);
    }
    let stdin = std::io::stdin();
    loop {
        let _ = write!(err, "choose 1-{} (or type a branch): ", choices.len());
        let _ = err.flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Err(CliError::new(
                ErrorKind::SourceBranchRequired,
                format!("no source branch chosen for {what}"),
            ));
        }
        let answer = line.trim();
        let picked = match answer.parse::<usize>() {
            Ok(n) if (1..=choices.len()).contains(&n) => Some(choices[n - 1].clone()),
            _ if choices.iter().any(|c| c == answer) => Some(answer.to_owned()),
            _ => None,
        };
        if let Some(reference) = picked {
            return Ok(SourcePolicy::Named { reference });
        }
        let _ = writeln!(err, "'{answer}' is not one of the choices");
    }
}

/// Replaces an `ask` policy by the user's choice when a person is there.
pub fn resolve_ask(policy: SourcePolicy, repo: &Path) -> Result<SourcePolicy, CliError> {
    if policy != SourcePolicy::Ask || !interactive() {
        return Ok(policy);
    }
    let host = HostRepo::open(repo)?;
    choose("the new worktree", &branch_choices(host.git())?)
}
