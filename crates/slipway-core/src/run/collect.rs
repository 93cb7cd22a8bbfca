//! Bringing an isolated sandbox's work back to the host.

use super::*;

/// Brings an isolated sandbox's work back: the results archive is streamed
/// to the host within the collect timeout (a stop request that arrives while
/// collecting ends it too), the container goes, then the archive is applied.
/// When the work cannot be brought back it is saved to `.slipway/rescue/`,
/// or failing that the container is kept; the message says which.
pub(super) async fn collect_isolated(
    ctx: &mut Ctx<'_>,
    host: &HostRepo,
    isolated: &crate::sandbox::isolated::IsolatedSandbox,
    staging: &Path,
) -> Result<returned::Returned, CollectError> {
    let archive = staging.join("results.tar");
    let secs = ctx.timeouts.collect.as_secs();
    let stopped_before = ctx.control.cancel.is_cancelled();
    let stop = ctx.control.clone();
    let stopped = async move {
        if stopped_before {
            stop.abandon.cancelled().await
        } else {
            tokio::select! {
                () = stop.cancel.cancelled() => {},
                () = stop.abandon.cancelled() => {},
            }
        }
    };
    let keep = |why: String| {
        isolated.keep();
        let id = isolated.container_id().to_owned();
        format!(
            "{why}; the container {id} was kept with the work: copy it out with `docker cp {id}:{} .`, then remove it with `docker rm -f {id}`",
            isolated.container_worktree().display()
        )
    };
    let downloaded = async {
        std::fs::create_dir_all(staging).map_err(|e| e.to_string())?;
        isolated
            .download_results(&archive)
            .await
            .map_err(|e| e.to_string())
    };
    let outcome = tokio::select! {
        done = tokio::time::timeout(ctx.timeouts.collect, downloaded) => match done {
            Ok(done) => done,
            Err(_) => return Err(keep(format!("bringing the work back took longer than the collect timeout of {secs} s")).into()),
        },
        () = stopped => return Err(keep("bringing the work back was stopped".into()).into()),
    };
    if let Err(e) = outcome {
        ctx.log
            .line(&format!("[slipway] could not bring the work back: {e}"));
        let dest = host.slipway_dir().join("rescue").join(&ctx.result.run_id);
        let rescued = tokio::time::timeout(ctx.timeouts.collect, isolated.rescue(&dest)).await;
        return Err(CollectError::Other(match rescued {
            Ok(Ok(tar)) => format!(
                "could not bring the sandbox's work back ({e}); the container's whole worktree, commits included, was saved to {}",
                tar.display()
            ),
            Ok(Err(rescue_error)) => keep(format!(
                "could not bring the sandbox's work back ({e}) nor save it ({rescue_error})"
            )),
            Err(_) => keep(format!(
                "could not bring the sandbox's work back ({e}) nor save it within {secs} s"
            )),
        }));
    }
    let (host_root, worktree) = (
        host.root().to_path_buf(),
        isolated.host_worktree().to_path_buf(),
    );
    let (branch, base) = (isolated.branch().to_owned(), isolated.base());
    let (staging, run_id) = (staging.to_path_buf(), ctx.result.run_id.clone());
    let applied = tokio::task::spawn_blocking(move || {
        let host = HostRepo::open(&host_root).map_err(|e| e.to_string())?;
        returned::apply(&host, &worktree, &branch, base, &archive, &staging, &run_id)
    })
    .await
    .map_err(|e| returned::ApplyError::Other(e.to_string()))
    .and_then(|r| r);
    applied.map_err(|e| match e {
        returned::ApplyError::Refused(source) => CollectError::Refused {
            source,
            dir: private_git::run_base(host, &ctx.result.run_id)
                .join("returned")
                .join("git"),
        },
        returned::ApplyError::Other(e) => CollectError::Other(format!(
            "could not apply the sandbox's work ({e}); it is saved in {}",
            staging_archive(host, &ctx.result.run_id).display()
        )),
    })
}

/// Why an isolated sandbox's work did not come back.
#[derive(Debug)]
pub(super) enum CollectError {
    /// Its branch's objects were refused; they stay in `dir` for inspection.
    Refused {
        source: crate::git::import::ImportError,
        dir: PathBuf,
    },
    /// Anything else, said in full (where the work was kept).
    Other(String),
}

impl From<String> for CollectError {
    fn from(message: String) -> CollectError {
        CollectError::Other(message)
    }
}

pub(super) fn staging_archive(host: &HostRepo, run_id: &str) -> PathBuf {
    private_git::run_base(host, run_id)
        .join("returned")
        .join("results.tar")
}
