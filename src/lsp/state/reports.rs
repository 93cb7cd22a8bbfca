//! Telling the client about runs: `$/progress` of the runs it follows, and
//! `slipway/runFinished` for every run that ends while this sidecar listens,
//! or that nobody heard end before it started (`run::heard`).

use super::*;

impl State {
    pub(super) async fn apply(&self, client: &Client, mut refresh: Refresh) {
        let progress = self.progress_supported.load(Ordering::SeqCst);
        // A run that ended since this sidecar started is its to report; one that
        // ended before is, only when no sidecar heard it end (one claimant wins).
        let started_at = self.started_at;
        let slipway_dir = refresh.slipway_dir.clone();
        let finished = std::mem::take(&mut refresh.finished);
        let decided: Vec<(RunRecord, bool)> = tokio::task::spawn_blocking(move || {
            finished
                .into_iter()
                .map(|r| {
                    // Claimed first: a report takes what was left for the next sidecar.
                    let claimed = heard::claim_unheard(&slipway_dir, &r.run_id);
                    let ours = claimed || r.finished.unwrap_or(0) >= started_at;
                    (r, ours)
                })
                .collect()
        })
        .await
        .unwrap_or_default();
        let mut to_begin = Vec::new();
        let mut reports = Vec::new();
        let mut to_finish = Vec::new();
        {
            let mut repos = self.repos.lock().await;
            let Some(repo) = repos.get_mut(&refresh.common_dir) else {
                return;
            };
            for run_id in &refresh.running {
                if !repo.follows.contains_key(run_id) {
                    repo.follows.insert(
                        run_id.clone(),
                        Follow {
                            offset: 0,
                            progress: ProgressState::None,
                        },
                    );
                }
            }
            for (run_id, events, offset) in refresh.events {
                if let Some(f) = repo.follows.get_mut(&run_id) {
                    f.offset = offset;
                    if progress && f.progress == ProgressState::None {
                        f.progress = ProgressState::Requested;
                        to_begin.push(run_id.clone());
                    }
                    if !events.is_empty() {
                        let active = f.progress == ProgressState::Active;
                        reports.push((run_id, events, active));
                    }
                }
            }
            for run_id in &refresh.running {
                if let Some(f) = repo.follows.get_mut(run_id)
                    && progress
                    && f.progress == ProgressState::None
                {
                    f.progress = ProgressState::Requested;
                    to_begin.push(run_id.clone());
                }
            }
            for (record, ours) in decided {
                repo.heard.insert(record.run_id.clone());
                let had_token = repo
                    .follows
                    .remove(&record.run_id)
                    .is_some_and(|f| f.progress == ProgressState::Active);
                if ours {
                    to_finish.push((record, had_token, repo.root.clone()));
                }
            }
            repo.snapshot = Some(refresh.snapshot);
        }
        to_begin.sort();
        to_begin.dedup();
        let mut begun_now = HashSet::new();
        for run_id in to_begin {
            let token = token_for(&run_id);
            let created = tokio::time::timeout(
                Duration::from_secs(2),
                client.send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams {
                    token: token.clone(),
                }),
            )
            .await;
            if !matches!(created, Ok(Ok(()))) {
                continue;
            }
            self.set_progress(&run_id, ProgressState::Active).await;
            begun_now.insert(run_id.clone());
            send_progress(
                client,
                &token,
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: "slipway: agent run".into(),
                    cancellable: Some(true),
                    message: Some(run_id.to_string()),
                    percentage: None,
                }),
            )
            .await;
        }
        for (run_id, events, active) in reports {
            // The follow of a run that finished in this refresh is already gone,
            // so whether to report was decided when the events were collected.
            if !(active || begun_now.contains(&run_id)) {
                continue;
            }
            let token = token_for(&run_id);
            for event in events {
                let (message, percentage) = match event {
                    RunEvent::Phase { phase, message } => (format!("{phase}: {message}"), None),
                    RunEvent::Iteration { iteration, of } => (
                        format!("iteration {iteration} of {of}"),
                        Some(((iteration.saturating_sub(1)) * 100 / of.max(1)).min(100)),
                    ),
                    RunEvent::Output { .. } => continue,
                };
                if progress {
                    send_progress(
                        client,
                        &token,
                        WorkDoneProgress::Report(WorkDoneProgressReport {
                            cancellable: Some(true),
                            message: Some(message),
                            percentage,
                        }),
                    )
                    .await;
                }
            }
        }
        for (record, had_token, root) in to_finish {
            let Some(result) = record.result.clone() else {
                continue;
            };
            if had_token || begun_now.contains(&record.run_id) {
                send_progress(
                    client,
                    &token_for(&record.run_id),
                    WorkDoneProgress::End(WorkDoneProgressEnd {
                        message: serde_json::to_value(result.status)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned)),
                    }),
                )
                .await;
            }
            client
                .send_notification::<RunFinished>(RunFinishedParams {
                    root: root.clone(),
                    result,
                })
                .await;
        }
    }

    pub(super) async fn set_progress(&self, run_id: &str, state: ProgressState) {
        let mut repos = self.repos.lock().await;
        for repo in repos.values_mut() {
            if let Some(f) = repo.follows.get_mut(run_id) {
                f.progress = state;
            }
        }
    }
}

async fn send_progress(client: &Client, token: &NumberOrString, value: WorkDoneProgress) {
    client
        .send_notification::<Progress>(ProgressParams {
            token: token.clone(),
            value: ProgressParamsValue::WorkDone(value),
        })
        .await;
}
