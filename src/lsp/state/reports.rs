//! Telling the client about runs: `$/progress` of the runs it follows,
//! `slipway/runActivity` of each running run (a few a second at most), and
//! `slipway/runFinished` for every run that ends while this sidecar listens,
//! or whose news it claims of a run that ended before (`run::heard`); never
//! for a run a person watched end in a terminal.

use super::*;

impl State {
    pub(super) async fn apply(&self, client: &Client, mut refresh: Refresh) {
        let progress = self.progress_supported.load(Ordering::SeqCst);
        let finished = std::mem::take(&mut refresh.finished);
        // The runs that had finished when this sidecar first looked ended
        // before it listened: they are reported only with their news claimed.
        let before = {
            let mut repos = self.repos.lock().await;
            let Some(repo) = repos.get_mut(&refresh.common_dir) else {
                return;
            };
            repo.before
                .get_or_insert_with(|| finished.iter().map(|r| r.run_id.clone()).collect())
                .clone()
        };
        let slipway_dir = refresh.slipway_dir.clone();
        let decided: Vec<(RunRecord, Decision)> = tokio::task::spawn_blocking(move || {
            finished
                .into_iter()
                .map(|r| {
                    let decision = decide(&slipway_dir, &r, before.contains(&r.run_id));
                    (r, decision)
                })
                .collect()
        })
        .await
        .unwrap_or_default();
        let confirms = self.confirms_seen.load(Ordering::SeqCst);
        let mut delivered = Vec::new();
        let mut to_begin = Vec::new();
        let mut reports = Vec::new();
        let mut to_finish = Vec::new();
        let mut activities = Vec::new();
        let root = {
            let mut repos = self.repos.lock().await;
            let Some(repo) = repos.get_mut(&refresh.common_dir) else {
                return;
            };
            for run_id in &refresh.running {
                repo.follows
                    .entry(run_id.clone())
                    .or_insert_with(Follow::new);
            }
            for (run_id, events, offset) in refresh.events {
                if let Some(f) = repo.follows.get_mut(&run_id) {
                    f.offset = offset;
                    let latest = events.iter().rev().find_map(|e| match e {
                        RunEvent::Activity { activity } => Some(activity.clone()),
                        _ => None,
                    });
                    f.activity = latest.or(f.activity.take());
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
            // However much a run prints, its editor hears of it a few times a second.
            let now = std::time::Instant::now();
            for (run_id, f) in repo.follows.iter_mut() {
                if f.activity.is_some()
                    && f.activity_sent
                        .is_none_or(|t| now.duration_since(t) >= ACTIVITY_EVERY)
                    && let Some(activity) = f.activity.take()
                {
                    f.activity_sent = Some(now);
                    activities.push((run_id.clone(), activity));
                }
            }
            for (record, decision) in decided {
                let (tell, news) = match decision {
                    // Another sidecar holds its news; look again next time.
                    Decision::Later => continue,
                    Decision::Silent => (false, None),
                    Decision::Report(news) => (true, news),
                };
                repo.heard.insert(record.run_id.clone());
                let follow = repo.follows.remove(&record.run_id);
                // What it did last is told before its end.
                if let Some(activity) = follow.as_ref().and_then(|f| f.activity.clone()) {
                    activities.push((record.run_id.clone(), activity));
                }
                let had_token = follow.is_some_and(|f| f.progress == ProgressState::Active);
                if let Some(news) = news {
                    if confirms {
                        repo.held.insert(record.run_id.clone(), news);
                    } else {
                        delivered.push(news);
                    }
                }
                to_finish.push((record, had_token, tell, repo.root.clone()));
            }
            repo.snapshot = Some(refresh.snapshot);
            repo.root.clone()
        };
        for (run_id, activity) in activities {
            client
                .send_notification::<RunActivity>(RunActivityParams {
                    root: root.clone(),
                    run_id,
                    activity,
                })
                .await;
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
                let Some(message) = event.describe() else {
                    continue;
                };
                let percentage = match event {
                    RunEvent::Iteration { iteration, of } => {
                        Some(((iteration.saturating_sub(1)) * 100 / of.max(1)).min(100))
                    }
                    _ => None,
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
        for (record, had_token, tell, root) in to_finish {
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
            if tell {
                client
                    .send_notification::<RunFinished>(RunFinishedParams {
                        root: root.clone(),
                        result,
                    })
                    .await;
            }
        }
        // A client that does not confirm what it showed has been told: done.
        if !delivered.is_empty()
            && tokio::task::spawn_blocking(move || {
                delivered.into_iter().for_each(heard::Held::delivered)
            })
            .await
            .is_err()
        {
            tracing::warn!("delivering run news failed");
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

/// What to do about a finished run this sidecar has not told its client of.
enum Decision {
    /// Tell the client, holding the run's news if this sidecar claimed it.
    Report(Option<heard::Held>),
    /// Not this client's news: a person watched it end in a terminal, or it
    /// ended before this sidecar listened and an editor has shown it since.
    Silent,
    /// It ended before this sidecar listened, and another live sidecar holds
    /// its news: that one is telling its editor.
    Later,
}

/// Decides about `record` (blocking: claiming news takes a file lock). A run
/// that ended while this sidecar listened is reported whatever its news says;
/// one that ended `before` only when this sidecar claims its news.
fn decide(slipway_dir: &std::path::Path, record: &RunRecord, before: bool) -> Decision {
    if record.watched {
        return Decision::Silent;
    }
    match (heard::claim(slipway_dir, &record.run_id), before) {
        (heard::Claim::Held(news), _) => Decision::Report(Some(news)),
        (_, false) => Decision::Report(None),
        (heard::Claim::Taken, true) => Decision::Later,
        (heard::Claim::None, true) => Decision::Silent,
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
