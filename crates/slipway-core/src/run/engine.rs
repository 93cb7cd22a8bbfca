//! Giving a run one of the user's Docker engines (see [`crate::engines`]):
//! the slot it holds for its life, the isolated sandbox where the engine
//! cannot see the host's files, the image checked there first, and a
//! failure that names the engine when it goes away during the run.

use super::*;
use crate::engines::{self, EngineError};

/// Gives a docker run an engine with a free slot (waiting while all are
/// full), when the user lists engines or the request names one; the run's
/// record names it. Runs in a long-lived sandbox stay where it is.
pub(super) async fn give_engine(
    ctx: &mut Ctx<'_>,
    request: &mut RunRequest,
    record: &mut RunRecord,
    slipway_dir: &Path,
) -> Result<(), RunError> {
    let image = match &request.sandbox {
        SandboxSpec::Docker { image, .. } | SandboxSpec::DockerIsolated { image, .. }
            if request.sandbox_id.is_none() =>
        {
            image.clone()
        }
        _ => {
            return match &request.engine {
                Some(name) if request.sandbox_id.is_none() => {
                    Err(EngineError::NeedsDocker { name: name.clone() }.into())
                }
                _ => Ok(()),
            };
        }
    };
    let run_id = ctx.result.run_id.to_string();
    let cancel = ctx.control.cancel.clone();
    let placement = {
        let mut waiting = |message: String| ctx.phase("engine", message);
        // A run waiting for a slot can be stopped like any other.
        tokio::select! {
            placed = engines::place(&run_id, request.engine.as_deref(), &mut waiting) => placed?,
            () = cancel.cancelled() => return Err(RunError::Cancelled),
        }
    };
    let Some(placement) = placement else {
        return Ok(());
    };
    if placement.engine.isolated
        && let SandboxSpec::Docker {
            image,
            network,
            limits,
        } = &request.sandbox
    {
        if request.workspace.is_some() {
            return Err(EngineError::IsolatedWorkspace {
                engine: placement.engine.name.clone(),
            }
            .into());
        }
        request.sandbox = SandboxSpec::DockerIsolated {
            image: image.clone(),
            network: network.clone(),
            limits: *limits,
        };
        record.sandbox = Some(request.sandbox.kind_name().to_owned());
    }
    placement.check_image(&image).await?;
    ctx.phase(
        "engine",
        format!(
            "on engine {} ({}), slot {} of {}{}",
            placement.engine.name,
            placement.engine.url,
            placement.slot.index() + 1,
            placement.engine.limit,
            if placement.engine.isolated {
                "; it cannot see this machine's files, so the code goes in as a bundle"
            } else {
                ""
            }
        ),
    );
    record.engine = Some(placement.engine.name.clone());
    record
        .save(slipway_dir)
        .map_err(|e| RunError::Io(format!("cannot write the run record: {e}")))?;
    ctx.engine = Some(placement);
    Ok(())
}

/// The error of a run whose engine stopped answering: that, naming the
/// engine, rather than whatever the sandbox made of it.
pub(super) async fn name_lost_engine(ctx: &Ctx<'_>, error: RunError) -> RunError {
    let Some(placement) = &ctx.engine else {
        return error;
    };
    if matches!(error, RunError::Cancelled | RunError::Engine(_)) || placement.answers().await {
        return error;
    }
    placement.lost(error.to_string()).into()
}
