//! Supervising processes in a sandbox: output, idle and hook timeouts, the
//! completion signal and its grace, cancellation, and stray processes.

use super::*;

pub(super) enum IterationEnd {
    Exited,
    Signalled(String),
}

/// What to do about processes a finished process left behind. On the host
/// they are killed at once (nothing else would). A sandbox that kills
/// everything when it closes only needs them killed when they hold the
/// output open, which saves a round trip per process.
pub(super) struct StrayWatch {
    lazy: bool,
    at: Option<Instant>,
}

impl StrayWatch {
    /// How long strays may hold the output of a finished process open.
    const GRACE: Duration = Duration::from_millis(150);

    fn new(sandbox: &dyn Sandbox) -> StrayWatch {
        StrayWatch {
            lazy: sandbox.reaps_strays_on_close(),
            at: None,
        }
    }

    async fn exited(&mut self, exec: &crate::sandbox::Execution) {
        if self.lazy {
            self.at = Some(Instant::now() + Self::GRACE);
        } else {
            exec.killer.kill().await;
        }
    }

    async fn deadline(&self) {
        match self.at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    fn killed(&mut self) {
        self.at = None;
    }
}

/// `from + wait`, or thirty years on when a timeout is too large for the clock
/// (a user asking for "never" must not crash the run half way).
fn later(from: Instant, wait: Duration) -> Instant {
    const NEVER: Duration = Duration::from_secs(30 * 365 * 24 * 3600);
    from.checked_add(wait).unwrap_or(from + NEVER)
}

/// Runs a command to completion in a sandbox, with a timeout; returns (code, output).
pub(super) async fn run_to_end(
    sandbox: &dyn Sandbox,
    spec: ExecSpec,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Option<(i32, String)>, RunError> {
    let mut exec = sandbox.exec(spec).await?;
    let mut output = String::new();
    let deadline = later(Instant::now(), timeout);
    let mut exit = None;
    let mut open = true;
    let mut strays = StrayWatch::new(sandbox);
    loop {
        tokio::select! {
            ev = exec.output.recv(), if open => match ev {
                Some(OutputEvent::Line(l)) => { output.push_str(&l); output.push('\n'); }
                Some(OutputEvent::Activity) => {}
                None => open = false,
            },
            code = &mut exec.exit, if exit.is_none() => {
                exit = Some(code.unwrap_or(Ok(-1))?);
                strays.exited(&exec).await;
            },
            () = strays.deadline(), if exit.is_some() && open => {
                exec.killer.kill().await;
                strays.killed();
            },
            () = tokio::time::sleep_until(deadline) => {
                exec.killer.kill().await;
                return Ok(None);
            },
            () = cancel.cancelled() => {
                exec.killer.kill().await;
                return Err(RunError::Cancelled);
            },
        }
        if let (Some(code), false) = (exit, open) {
            return Ok(Some((code, output)));
        }
    }
}

pub(super) async fn run_hooks(
    ctx: &mut Ctx<'_>,
    sandbox: &dyn Sandbox,
    stage: &'static str,
    commands: &[String],
    cwd: &Path,
    env: &[(String, String)],
) -> Result<(), RunError> {
    let timeout = ctx.timeouts.hook;
    let cancel = ctx.control.cancel.clone();
    for command in commands {
        ctx.phase("hooks", format!("{stage}: {command}"));
        let spec = ExecSpec {
            argv: vec!["sh".into(), "-c".into(), command.clone()],
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            stdin: None,
        };
        match run_to_end(sandbox, spec, timeout, &cancel).await? {
            None => {
                return Err(RunError::HookTimeout {
                    stage,
                    command: command.clone(),
                    secs: timeout.as_secs(),
                });
            }
            Some((code, output)) => {
                ctx.log.line(&output);
                if code != 0 {
                    return Err(RunError::Hook {
                        stage,
                        command: command.clone(),
                        code,
                        output,
                    });
                }
            }
        }
    }
    Ok(())
}

/// One agent iteration: stream output, watch idle time, the completion signal and cancellation.
pub(super) async fn run_iteration(
    ctx: &mut Ctx<'_>,
    sandbox: &dyn Sandbox,
    agent: &dyn Agent,
    spec: ExecSpec,
    iteration: u32,
    signals: &[String],
) -> Result<IterationEnd, RunError> {
    let timeouts = ctx.timeouts;
    let cancel = ctx.control.cancel.clone();
    let mut exec = sandbox.exec(spec).await?;
    ctx.phase(
        "agentStarted",
        format!(
            "{} started (pid {})",
            agent.name(),
            exec.pid
                .map(|p| p.to_string())
                .unwrap_or_else(|| "?".into())
        ),
    );
    let mut last_output = Instant::now();
    let mut signal: Option<String> = None;
    let mut exit: Option<i32> = None;
    let mut open = true;
    let mut strays = StrayWatch::new(sandbox);
    loop {
        let idle_deadline = later(last_output, timeouts.idle);
        let grace_deadline = later(last_output, timeouts.completion_grace);
        tokio::select! {
            ev = exec.output.recv(), if open => match ev {
                Some(OutputEvent::Line(line)) => {
                    last_output = Instant::now();
                    ctx.log.line(&line);
                    if signal.is_none() {
                        signal = signals.iter().find(|s| line.contains(s.as_str())).cloned();
                    }
                    for event in agent.parse_line(&line) {
                        match event {
                            AgentEvent::SessionId { id } => ctx.result.session_id = Some(id),
                            AgentEvent::Usage { input_tokens, output_tokens, .. } => {
                                let u = ctx.result.usage.get_or_insert_with(Usage::default);
                                u.input_tokens += input_tokens;
                                u.output_tokens += output_tokens;
                            }
                            _ => {}
                        }
                    }
                    (ctx.events)(&RunEvent::Output { line });
                }
                Some(OutputEvent::Activity) => last_output = Instant::now(),
                None => open = false,
            },
            code = &mut exec.exit, if exit.is_none() => {
                exit = Some(code.unwrap_or(Ok(-1))?);
                strays.exited(&exec).await;
            },
            () = strays.deadline(), if exit.is_some() && open => {
                exec.killer.kill().await;
                strays.killed();
            },
            () = tokio::time::sleep_until(idle_deadline), if exit.is_none() && signal.is_none() => {
                exec.killer.kill().await;
                ctx.log.line(&format!("[slipway] idle for {} s: agent killed", timeouts.idle.as_secs()));
                return Err(RunError::IdleTimeout { secs: timeouts.idle.as_secs() });
            },
            () = tokio::time::sleep_until(grace_deadline), if exit.is_none() && signal.is_some() => {
                exec.killer.kill().await;
                ctx.log.line("[slipway] completion signal followed by silence: agent stopped");
                return Ok(IterationEnd::Signalled(signal.unwrap_or_default()));
            },
            () = cancel.cancelled() => {
                exec.killer.kill().await;
                ctx.log.line("[slipway] cancelled: agent killed");
                return Err(RunError::Cancelled);
            },
        }
        if let (Some(code), false) = (exit, open) {
            if let Some(s) = signal {
                if code != 0 {
                    ctx.result.warnings.push(format!(
                        "the agent exited with code {code} after printing the completion signal"
                    ));
                }
                return Ok(IterationEnd::Signalled(s));
            }
            if code != 0 {
                return Err(RunError::AgentFailed { code, iteration });
            }
            return Ok(IterationEnd::Exited);
        }
    }
}
