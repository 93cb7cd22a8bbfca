//! The check after the agent (`--check CMD`): a command run in the run's
//! sandbox once the agent has ended (tests, a linter), whose exit status and
//! last lines of output go into the result. A failing check does not fail
//! the run: it is what an attempt is compared by.

use super::*;

/// How many of the check's last output lines the result keeps.
pub const CHECK_TAIL_LINES: usize = 20;

/// What the check after the agent found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The command, as given.
    pub command: String,
    /// It exited 0.
    pub passed: bool,
    /// Its exit status; `None` when it ran out of time and was stopped.
    pub exit_code: Option<i32>,
    /// Its last lines of output (stdout and stderr), at most [`CHECK_TAIL_LINES`].
    pub tail: Vec<String>,
}

/// Runs `command` in `sandbox` in the run's checkout, with the hooks' timeout.
pub(super) async fn run_check(
    ctx: &mut Ctx<'_>,
    sandbox: &dyn Sandbox,
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
) -> Result<CheckResult, RunError> {
    ctx.phase("check", command.to_owned());
    let spec = super::process::shell_spec(command, cwd, env, ctx.hold);
    let timeout = ctx.timeouts.hook;
    let cancel = ctx.control.cancel.clone();
    let ended = run_to_end(sandbox, spec, timeout, &cancel).await?;
    let (exit_code, output) = match ended {
        Some((code, output)) => (Some(code), output),
        None => (
            None,
            format!(
                "[slipway] the check ran longer than {} s and was stopped",
                timeout.as_secs()
            ),
        ),
    };
    ctx.log.line(&output);
    let lines: Vec<&str> = output.lines().collect();
    let tail = lines[lines.len().saturating_sub(CHECK_TAIL_LINES)..]
        .iter()
        .map(|l| crate::shown::line(l))
        .collect();
    let passed = exit_code == Some(0);
    ctx.log.line(&format!(
        "[slipway] check {}",
        if passed { "passed" } else { "failed" }
    ));
    Ok(CheckResult {
        command: command.to_owned(),
        passed,
        exit_code,
        tail,
    })
}
