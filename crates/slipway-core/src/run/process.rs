//! Supervising processes in a sandbox: output, idle and hook timeouts, the
//! completion signal and its grace, cancellation, and stray processes.

use super::question::Question;
use super::*;
use crate::agent::session::TokenTotals;

pub(super) enum IterationEnd {
    Exited,
    Signalled(String),
    /// The agent ended asking the user (see [`super::question`]).
    Asked(super::question::Question),
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
pub(super) fn later(from: Instant, wait: Duration) -> Instant {
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

/// `sh -c COMMAND` in `cwd`, as hooks, prompt commands and the check run.
pub(super) fn shell_spec(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    hold: Option<std::os::fd::RawFd>,
) -> ExecSpec {
    ExecSpec {
        argv: vec!["sh".into(), "-c".into(), command.to_owned()],
        cwd: cwd.to_path_buf(),
        env: env.to_vec(),
        stdin: None,
        hold,
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
        let spec = shell_spec(command, cwd, env, ctx.hold);
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

/// What one agent iteration is matched against, and the running session total
/// its usage is measured from.
pub(super) struct StreamRules<'a> {
    /// Completion signals, matched in the assistant's text only.
    pub signals: &'a [String],
    /// The session this invocation resumes, if any.
    pub resume_id: Option<&'a str>,
    /// The session's running token total before this invocation (agents that
    /// report usage as a running total); updated to the last total seen.
    pub session_total: &'a mut TokenTotals,
}

/// What the agent said about how it went, gathered while its output streams.
#[derive(Default)]
struct Outcome {
    signal: Option<String>,
    /// The last error the agent reported, cleared by a later result.
    error: Option<String>,
    /// The stream itself carried token counts.
    stream_usage: bool,
    /// The session id this invocation named.
    session: Option<String>,
    /// Permissions the agent was refused, as `tool: target`.
    denials: Vec<String>,
    /// What the agent asked through its tool for asking the user.
    asked: Option<String>,
    /// What the agent said when its session had another writer.
    busy: Option<String>,
}

/// What Codex says when another process holds the session it resumes
/// (`thread/resume failed: … already has an active writer`), and Claude Code
/// when a session id it is to start is taken (`Session ID … is already in use`).
const BUSY_MARKS: &[&str] = &["already has an active writer", "is already in use"];

/// The tool Claude Code asks the user with; unattended, nobody answers.
const ASK_TOOL: &str = "AskUserQuestion";

impl Outcome {
    /// Folds one parsed event into the result and this outcome.
    fn take(&mut self, result: &mut RunResult, rules: &mut StreamRules<'_>, event: AgentEvent) {
        match event {
            AgentEvent::Text { text } => {
                self.match_signal(rules.signals, &text);
                if !text.trim().is_empty() {
                    result.final_text = Some(crate::shown::lines(&text));
                }
            }
            AgentEvent::Result { text } => {
                self.match_signal(rules.signals, &text);
                self.error = None;
                result.final_text = Some(crate::shown::lines(&text));
            }
            AgentEvent::SessionId { id } => {
                self.session = Some(id.clone());
                result.session_id = Some(id);
            }
            AgentEvent::Usage {
                input_tokens,
                output_tokens,
                cached_input_tokens,
                cost_usd,
            } => {
                self.stream_usage = true;
                add_usage(
                    result,
                    input_tokens,
                    output_tokens,
                    cached_input_tokens,
                    cost_usd,
                );
            }
            AgentEvent::SessionUsage {
                input_tokens,
                output_tokens,
                cached_input_tokens,
            } => {
                self.stream_usage = true;
                let before = *rules.session_total;
                add_usage(
                    result,
                    input_tokens.saturating_sub(before.input_tokens),
                    output_tokens.saturating_sub(before.output_tokens),
                    cached_input_tokens.saturating_sub(before.cached_input_tokens),
                    None,
                );
                *rules.session_total = TokenTotals {
                    input_tokens,
                    output_tokens,
                    cached_input_tokens,
                };
            }
            AgentEvent::Error { message } => {
                self.note_busy(&message);
                self.error = Some(message);
            }
            AgentEvent::Notice { text } => self.note_busy(&text),
            AgentEvent::ToolCall { name, input } if name == ASK_TOOL => {
                let questions = input.get("questions").and_then(serde_json::Value::as_array);
                let text: Vec<&str> = questions
                    .into_iter()
                    .flatten()
                    .filter_map(|q| q.get("question").and_then(serde_json::Value::as_str))
                    .collect();
                if !text.is_empty() {
                    self.asked = Some(text.join("\n"));
                }
            }
            AgentEvent::PermissionDenied { tool, target } => self.denials.push(match target {
                Some(target) => format!("{tool}: {target}"),
                None => tool,
            }),
            AgentEvent::ToolCall { .. } => {}
        }
    }

    fn note_busy(&mut self, text: &str) {
        if self.busy.is_none() && BUSY_MARKS.iter().any(|m| text.contains(m)) {
            self.busy = Some(text.trim().to_owned());
        }
    }

    /// The question the invocation ended with, if it ended asking (its
    /// final answer `final_text`).
    fn question(&self, final_text: Option<&str>, session: Option<&str>) -> Option<Question> {
        use super::question::{QuestionReason, asks_user};
        let (text, reason) = if !self.denials.is_empty() {
            let mut text = format!(
                "the agent was refused permission for {}",
                self.denials.join("; ")
            );
            if let Some(words) = final_text.and_then(asks_user) {
                text = format!("{words}\n({text})");
            }
            (text, QuestionReason::PermissionDenied)
        } else if let Some(asked) = &self.asked {
            (asked.clone(), QuestionReason::WaitingForInput)
        } else {
            (asks_user(final_text?)?, QuestionReason::Asked)
        };
        Some(Question {
            text: crate::shown::lines(&text),
            reason,
            session_id: session.map(str::to_owned),
        })
    }

    fn match_signal(&mut self, signals: &[String], text: &str) {
        if self.signal.is_none() {
            self.signal = signals.iter().find(|s| text.contains(s.as_str())).cloned();
        }
    }
}

fn add_usage(result: &mut RunResult, input: u64, output: u64, cached: u64, cost: Option<f64>) {
    let u = result.usage.get_or_insert_with(Usage::default);
    u.input_tokens += input;
    u.output_tokens += output;
    u.cached_input_tokens += cached;
    if let Some(cost) = cost {
        *u.cost_usd.get_or_insert(0.0) += cost;
    }
}

/// One agent iteration: stream output, watch idle time, the completion signal and cancellation.
pub(super) async fn run_iteration(
    ctx: &mut Ctx<'_>,
    sandbox: &dyn Sandbox,
    agent: &dyn Agent,
    spec: ExecSpec,
    iteration: u32,
    rules: &mut StreamRules<'_>,
) -> Result<IterationEnd, RunError> {
    let timeouts = ctx.timeouts;
    let cancel = ctx.control.cancel.clone();
    // A resumed session's log already holds earlier runs: only what this run adds counts.
    let log_start = match rules.resume_id {
        Some(id) => session_log_size(sandbox, agent, id, &spec, &cancel).await,
        None => 0,
    };
    let (cwd, env) = (spec.cwd.clone(), spec.env.clone());
    let program = spec.argv.first().cloned().unwrap_or_default();
    let mut exec = sandbox.exec(spec).await.map_err(|e| match e {
        SandboxError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            RunError::AgentNotInstalled {
                agent: agent.name(),
                install: crate::agent::install_command(agent.name()),
                program: program.clone(),
            }
        }
        other => other.into(),
    })?;
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
    let mut outcome = Outcome::default();
    let mut exit: Option<i32> = None;
    let mut open = true;
    let mut strays = StrayWatch::new(sandbox);
    let end = loop {
        let idle_deadline = later(last_output, timeouts.idle);
        let grace_deadline = later(last_output, timeouts.completion_grace);
        // An agent that goes quiet after a burst still shows its last step.
        let activity_at = ctx.activity_due();
        tokio::select! {
            () = tokio::time::sleep_until(activity_at.unwrap_or(idle_deadline)), if activity_at.is_some() => {
                ctx.send_activity(false);
            },
            ev = exec.output.recv(), if open => match ev {
                Some(OutputEvent::Line(line)) => {
                    last_output = Instant::now();
                    ctx.log.output(&line);
                    let known = ctx.result.session_id.clone();
                    let events = agent.parse_line(&line);
                    for event in &events {
                        outcome.take(&mut ctx.result, rules, event.clone());
                    }
                    ctx.price_usage();
                    ctx.watch(&events);
                    if let Some(stop) = ctx.budgets.exceeded(ctx.result.usage.as_ref()) {
                        exec.killer.kill().await;
                        ctx.send_activity(true);
                        ctx.log.line(&format!("[slipway] budget reached ({stop}): agent stopped"));
                        return Err(RunError::BudgetReached(stop));
                    }
                    if let Some(id) = &ctx.result.session_id
                        && known.as_ref() != Some(id)
                    {
                        ctx.phase("session", format!("{} session {id}", agent.name()));
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
            () = tokio::time::sleep_until(idle_deadline), if exit.is_none() && outcome.signal.is_none() => {
                exec.killer.kill().await;
                ctx.log.line(&format!("[slipway] idle for {} s: agent killed", timeouts.idle.as_secs()));
                return Err(RunError::IdleTimeout { secs: timeouts.idle.as_secs() });
            },
            () = tokio::time::sleep_until(grace_deadline), if exit.is_none() && outcome.signal.is_some() => {
                exec.killer.kill().await;
                ctx.log.line("[slipway] completion signal followed by silence: agent stopped");
                break IterationEnd::Signalled(outcome.signal.clone().unwrap_or_default());
            },
            () = tokio::time::sleep_until(ctx.deadline.unwrap_or(idle_deadline)), if ctx.deadline.is_some() && exit.is_none() => {
                exec.killer.kill().await;
                let secs = ctx.budgets.max_duration_secs.unwrap_or_default() as f64;
                let stop = BudgetStop { budget: BudgetKind::Duration, limit: secs, used: secs };
                ctx.log.line(&format!("[slipway] budget reached ({stop}): agent stopped"));
                return Err(RunError::BudgetReached(stop));
            },
            () = cancel.cancelled() => {
                exec.killer.kill().await;
                ctx.log.line("[slipway] cancelled: agent killed");
                return Err(RunError::Cancelled);
            },
        }
        if let (Some(code), false) = (exit, open) {
            if let Some(s) = outcome.signal.clone() {
                if code != 0 {
                    ctx.result.warnings.push(format!(
                        "the agent exited with code {code} after printing the completion signal"
                    ));
                }
                break IterationEnd::Signalled(s);
            }
            if let Some(said) = outcome.busy.clone()
                && (code != 0 || outcome.error.is_some())
            {
                return Err(RunError::SessionBusy {
                    agent: agent.name(),
                    said: crate::shown::line(&said),
                });
            }
            if code != 0 || outcome.error.is_some() {
                return Err(RunError::AgentFailed {
                    code,
                    iteration,
                    reason: outcome.error.as_deref().map(crate::shown::lines),
                });
            }
            let session = ctx.result.session_id.clone();
            if let Some(question) =
                outcome.question(ctx.result.final_text.as_deref(), session.as_deref())
            {
                break IterationEnd::Asked(question);
            }
            break IterationEnd::Exited;
        }
    };
    let session = outcome
        .session
        .clone()
        .or_else(|| rules.resume_id.map(str::to_owned));
    if !outcome.stream_usage
        && let Some(id) = session
    {
        for event in read_session_log(sandbox, agent, &id, log_start, &cwd, &env, &cancel).await {
            outcome.take(&mut ctx.result, rules, event);
        }
    }
    Ok(end)
}

/// Runs a small shell script in the sandbox, in the agent's directory and
/// environment (so `$HOME` is the agent's), and returns its output.
async fn sandbox_sh(
    sandbox: &dyn Sandbox,
    script: String,
    cwd: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
) -> Option<String> {
    let spec = ExecSpec {
        argv: vec!["sh".into(), "-c".into(), script],
        cwd: cwd.to_path_buf(),
        env: env.to_vec(),
        stdin: None,
        hold: None,
    };
    match run_to_end(sandbox, spec, Duration::from_secs(30), cancel).await {
        Ok(Some((0, out))) => Some(out),
        _ => None,
    }
}

/// The size of the agent's session log (0 when it has none yet).
async fn session_log_size(
    sandbox: &dyn Sandbox,
    agent: &dyn Agent,
    session_id: &str,
    spec: &ExecSpec,
    cancel: &CancellationToken,
) -> u64 {
    let Some(path) = agent.session_log(session_id) else {
        return 0;
    };
    let script = format!("wc -c < \"{path}\" 2>/dev/null || echo 0");
    sandbox_sh(sandbox, script, &spec.cwd, &spec.env, cancel)
        .await
        .and_then(|out| out.trim().parse().ok())
        .unwrap_or(0)
}

/// The usage the agent's session log recorded after byte `from`.
async fn read_session_log(
    sandbox: &dyn Sandbox,
    agent: &dyn Agent,
    session_id: &str,
    from: u64,
    cwd: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
) -> Vec<AgentEvent> {
    let Some(path) = agent.session_log(session_id) else {
        return Vec::new();
    };
    let script = format!("tail -c +{} \"{path}\"", from + 1);
    let Some(text) = sandbox_sh(sandbox, script, cwd, env, cancel).await else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| agent.parse_session_log_line(line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::question::QuestionReason;

    fn taken(events: Vec<AgentEvent>) -> Outcome {
        let mut outcome = Outcome::default();
        let mut result =
            RunRecord::starting(&RunId::new()).failed_result(Path::new("/x"), String::new());
        let mut total = TokenTotals::default();
        let mut rules = StreamRules {
            signals: &[],
            resume_id: None,
            session_total: &mut total,
        };
        for event in events {
            outcome.take(&mut result, &mut rules, event);
        }
        outcome
    }

    #[test]
    fn a_second_writer_on_the_session_is_recognised_in_what_the_agent_printed() {
        let outcome = taken(vec![AgentEvent::Notice {
            text: "Error: thread/resume failed: thread 0199a213 already has an active writer"
                .into(),
        }]);
        assert!(
            outcome
                .busy
                .as_deref()
                .is_some_and(|b| b.contains("active writer"))
        );
        assert!(
            taken(vec![AgentEvent::Notice {
                text: "Reconnecting… 1/5".into()
            }])
            .busy
            .is_none()
        );
    }

    #[test]
    fn a_denied_permission_or_the_ask_tool_is_a_question() {
        let denied = taken(vec![AgentEvent::PermissionDenied {
            tool: "Bash".into(),
            target: Some("rm -rf build".into()),
        }]);
        let q = denied
            .question(Some("I could not clean up."), Some("s1"))
            .expect("asks");
        assert_eq!(q.reason, QuestionReason::PermissionDenied);
        assert!(q.text.contains("Bash: rm -rf build"), "{}", q.text);
        assert_eq!(q.session_id.as_deref(), Some("s1"));
        let asked = taken(vec![AgentEvent::ToolCall {
            name: ASK_TOOL.into(),
            input: serde_json::json!({"questions": [{"question": "Which port?"}]}),
        }]);
        let q = asked.question(None, None).expect("asks");
        assert_eq!(
            (q.reason, q.text.as_str()),
            (QuestionReason::WaitingForInput, "Which port?")
        );
        assert!(taken(vec![]).question(Some("All done."), None).is_none());
    }
}
