//! Driving a run: hooks, prompt commands and iterations.

use super::*;

/// Hooks, prompt commands and iterations.
pub(super) async fn drive(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    request: &RunRequest,
    place: &mut Place,
    prompt: &Prompt,
    agent: &dyn Agent,
    cancel: &CancellationToken,
) -> Result<(), RunError> {
    let target_branch = match place.record.as_ref().map(|r| r.strategy) {
        Some(WorktreeStrategy::MergeToHead) => {
            host.current_branch().unwrap_or_else(|| "HEAD".into())
        }
        _ => place.branch.clone(),
    };
    let mut env = identity_env(host);
    env.push(("SLIPWAY_SOURCE_BRANCH".into(), place.branch.clone()));
    env.push(("SLIPWAY_TARGET_BRANCH".into(), target_branch.clone()));
    env.push(("SLIPWAY_RUN_ID".into(), ctx.result.run_id.to_string()));
    env.push(("SLIPWAY_WORKTREE".into(), place.cwd.display().to_string()));

    let host_sandbox = HostSandbox;
    run_hooks(
        ctx,
        &host_sandbox,
        "host.on_worktree_ready",
        &request.hooks.host_on_worktree_ready,
        &place.cwd,
        &env,
    )
    .await?;
    // After the host's hooks (their commits are the run's starting point),
    // before the sandbox: the agent's git works in a private git dir.
    // Isolated sandboxes build theirs inside the container, workspaces one
    // per isolated mount.
    let reach = match &request.sandbox {
        SandboxSpec::None if place.record.is_some() => Some(private_git::Reach::GitFile),
        SandboxSpec::None => Some(private_git::Reach::Environment),
        SandboxSpec::Docker { .. } => Some(private_git::Reach::Mounts { slot: 0 }),
        SandboxSpec::DockerIsolated { .. } => None,
    };
    if let Some(reach) = reach
        && place.workspace.is_none()
    {
        let (base, keep) = match &request.sandbox_id {
            Some(id) => (sandboxes::private_base(host, id), true),
            None => (private_git::run_base(host, &ctx.result.run_id), false),
        };
        let mut git = private_git::RunGit::prepare(
            host,
            &place.cwd,
            &base,
            place.record.is_none(),
            reach,
            keep,
        )?;
        let worktree = place
            .record
            .as_ref()
            .map(|r| crate::ids::WorktreeId::parse(&r.id))
            .transpose()
            .map_err(|e| RunError::Invalid(e.to_string()))?;
        git.begin_journal(
            host,
            &ctx.result.run_id,
            place.lock.branch(),
            private_git::JournalIds {
                sandbox: request.sandbox_id.as_ref(),
                worktree: worktree.as_ref(),
            },
        )?;
        env.extend(git.env());
        place.git = Some(git);
    }
    if let Some(mounts) = &place.workspace {
        env.extend(workspace::git_env(mounts));
    } else {
        place.baseline = Some(quarantine::Baseline::take(&place.cwd));
    }
    if let Some(git) = &place.git {
        git.point_checkout().map_err(|e| {
            RunError::Io(format!(
                "cannot point the worktree at its private git dir: {e}"
            ))
        })?;
    }
    let place: &Place = place;
    ctx.phase(
        "sandbox",
        format!("starting the {} sandbox", sandbox_name(&request.sandbox)),
    );
    let active = match &request.sandbox_id {
        Some(id) => attach_sandbox(ctx, host, place, id).await?,
        None => {
            // Nothing but the agent, once: it can be the container's own process.
            let one_process = request.max_iterations == 1
                && request.hooks.sandbox_on_sandbox_ready.is_empty()
                && request.check.is_none()
                && prompt.shell_blocks().is_empty()
                && request
                    .agent
                    .options()
                    .and_then(|o| o.resume.as_ref())
                    .is_none();
            start_sandbox(
                &request.sandbox,
                host,
                place,
                &ctx.result.run_id,
                one_process,
                ctx.engine.as_ref().map(|p| (p.docker.clone(), p.kind)),
            )
            .await?
        }
    };
    let sandbox = active.as_dyn();
    let staging = host
        .slipway_dir()
        .join("runs")
        .join(format!("{}.session", ctx.result.run_id));
    let handed = match active
        .hand_in_session(&request.agent, &place.cwd, &staging)
        .await
    {
        Ok(handed) => handed,
        Err(e) => {
            sandbox.close().await;
            return Err(e);
        }
    };
    if let Some(note) = &handed.note {
        ctx.phase("session", note.clone());
    }
    // A container gets only declared environment: what the agent's CLI needs
    // for its endpoint and credentials is declared by its provider.
    let mut agent_env = Vec::new();
    if active.is_container() {
        for name in agent.passthrough_env() {
            if let Ok(value) = std::env::var(name) {
                agent_env.push(((*name).to_owned(), value));
            }
        }
        agent_env.extend(agent.container_env());
    }
    let result = async {
        run_hooks(
            ctx,
            sandbox,
            "sandbox.on_sandbox_ready",
            &request.hooks.sandbox_on_sandbox_ready,
            &place.cwd,
            &env,
        )
        .await?;

        let mut outputs = Vec::new();
        for command in prompt.shell_blocks() {
            ctx.phase("promptCommand", command.clone());
            let spec = process::shell_spec(&command, &place.cwd, &env, ctx.hold);
            match run_to_end(sandbox, spec, request.timeouts.hook, cancel).await? {
                None => {
                    return Err(RunError::HookTimeout {
                        stage: "prompt command",
                        command,
                        secs: request.timeouts.hook.as_secs(),
                    });
                }
                Some((0, out)) => outputs.push(out),
                Some((code, output)) => {
                    return Err(RunError::Hook {
                        stage: "prompt command",
                        command,
                        code,
                        output,
                    });
                }
            }
        }
        let mut values = request.prompt_args.clone();
        values.insert("SOURCE_BRANCH".into(), place.branch.clone());
        values.insert("TARGET_BRANCH".into(), target_branch.clone());
        let text = prompt.render(&values, &outputs);

        let signals: Vec<String> = if request.completion_signals.is_empty() {
            vec![DEFAULT_COMPLETION_SIGNAL.to_owned()]
        } else {
            request.completion_signals.clone()
        };
        let resume = request.agent.options().and_then(|o| o.resume.as_ref());
        let mut running_total = handed.usage_total;
        ctx.watcher = Some(crate::agent::activity::Watcher::new(
            agent.name(),
            &place.cwd,
        ));
        for iteration in 1..=request.max_iterations {
            // Usage an agent reports only as it exits (Claude Code, Copilot)
            // is checked before it starts again.
            if let Some(stop) = ctx.budgets.exceeded(ctx.result.usage.as_ref()) {
                return Err(RunError::BudgetReached(stop));
            }
            ctx.result.iterations = iteration;
            ctx.emit(RunEvent::Iteration {
                iteration,
                of: request.max_iterations,
            });
            ctx.log.line(&format!(
                "[slipway] iteration {iteration} of {}",
                request.max_iterations
            ));
            let invocation = agent.unattended(&text)?;
            let mut iter_env = env.clone();
            iter_env.extend(agent_env.iter().cloned());
            iter_env.extend(invocation.env.iter().cloned());
            iter_env.push(("SLIPWAY_ITERATION".into(), iteration.to_string()));
            let spec = ExecSpec {
                argv: invocation.argv.clone(),
                cwd: place.cwd.clone(),
                env: iter_env,
                stdin: invocation.stdin.map(String::into_bytes),
                hold: ctx.hold,
            };
            // A running total (Codex) counts from where the session stood before
            // this invocation: zero for a new session, the source's total for a
            // fork, where the previous iteration left it when resuming.
            let mut session_total = match resume {
                None => TokenTotals::default(),
                Some(r) if r.fork => handed.usage_total,
                Some(_) => running_total,
            };
            let mut rules = StreamRules {
                signals: &signals,
                resume_id: resume.filter(|r| !r.fork).map(|r| r.session_id.as_str()),
                session_total: &mut session_total,
            };
            let end = run_iteration(ctx, sandbox, agent, spec, iteration, &mut rules).await;
            // Usage read as the agent exited (Copilot's session log) is priced too.
            ctx.price_usage();
            ctx.send_activity(true);
            running_total = session_total;
            match end? {
                IterationEnd::Signalled(signal) => {
                    ctx.result.completion_signal = Some(signal);
                    break;
                }
                IterationEnd::Asked(question) => {
                    ctx.log
                        .line(&format!("[slipway] the agent asks: {}", question.text));
                    ctx.result.question = Some(question);
                    break;
                }
                IterationEnd::Exited => {}
            }
        }
        if let Some(command) = &request.check {
            ctx.result.check =
                Some(check::run_check(ctx, sandbox, command, &place.cwd, &env).await?);
        }
        Ok(())
    }
    .await;
    if let ActiveSandbox::Isolated(isolated) = &active {
        // Whatever happened, the work comes back before the container goes.
        ctx.phase(
            "collecting",
            "bringing commits and files back from the sandbox".into(),
        );
        let staging = private_git::run_base(host, &ctx.result.run_id).join("returned");
        let returned = collect_isolated(ctx, host, isolated, &staging).await;
        match returned {
            Ok(returned) => {
                if let Some(id) = &request.sandbox_id {
                    let tip = host
                        .git()
                        .refname_to_id(&format!("refs/heads/{}", place.branch))
                        .ok();
                    if let Err(e) = sandboxes::SandboxRecord::set_synced(host, id, tip) {
                        ctx.result.warnings.push(e.to_string());
                    }
                }
                if !returned.files.is_empty() || !returned.deleted.is_empty() {
                    ctx.log.line(&format!(
                        "[slipway] from the sandbox: {} changed, {} deleted",
                        crate::util::count(returned.files.len(), "file", "files"),
                        returned.deleted.len()
                    ));
                }
                ctx.record_import(host, returned.imported);
                ctx.result.quarantined.extend(returned.refused);
                if let Err(e) = std::fs::remove_dir_all(&staging) {
                    tracing::warn!("could not remove {}: {e}", staging.display());
                }
            }
            Err(collect::CollectError::Refused { source, dir }) => {
                sandbox.close().await;
                return Err(RunError::PrivateGit(private_git::RunGitError::Import {
                    source,
                    dir,
                }));
            }
            Err(collect::CollectError::Other(message)) => {
                sandbox.close().await;
                return Err(RunError::Sandbox(SandboxError::Other(message)));
            }
        }
    }
    sandbox.close().await;
    result
}
