//! Removing containers whose runs are gone.

use super::*;

/// Removes every container labelled `slipway.managed=true` (and, when `scope`
/// is given, `slipway.scope=<scope>`) whose `slipway.run` is not in
/// `live_run_ids`. Returns the ids removed. Call it at start-up with the runs
/// known to be alive; a container of a live run is never touched.
pub async fn reap_orphans(
    docker: &Docker,
    scope: Option<&str>,
    live_run_ids: &[String],
) -> Result<Vec<String>, SandboxError> {
    let mut labels = vec![format!("{LABEL_MANAGED}=true")];
    if let Some(scope) = scope {
        labels.push(format!("{LABEL_SCOPE}={scope}"));
    }
    let options = ListContainersOptions {
        all: true,
        filters: Some(HashMap::from([("label".to_owned(), labels)])),
        ..Default::default()
    };
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| engine_error("cannot list containers", e))?;
    let mut removed = Vec::new();
    for c in containers {
        let (Some(id), Some(labels)) = (c.id, c.labels) else {
            continue;
        };
        // The engine filters by label already; checking again keeps a
        // filter the engine ignored from widening what gets removed.
        if labels.get(LABEL_MANAGED).map(String::as_str) != Some("true") {
            continue;
        }
        if let Some(scope) = scope
            && labels.get(LABEL_SCOPE).map(String::as_str) != Some(scope)
        {
            continue;
        }
        let run = labels.get(LABEL_RUN).map(String::as_str).unwrap_or("");
        if live_run_ids.iter().any(|live| live == run) {
            continue;
        }
        remove_forced(docker, &id).await;
        removed.push(id);
    }
    Ok(removed)
}
