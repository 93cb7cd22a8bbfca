//! `slipway/status` and the dirty-preserved-worktree diagnostics, sent when they change.

use super::*;

impl State {
    /// Pushes `slipway/status` and diagnostics when they changed.
    pub(super) async fn publish(&self, client: &Client) {
        let snapshots: Vec<Snapshot> = {
            let repos = self.repos.lock().await;
            repos.values().filter_map(|r| r.snapshot.clone()).collect()
        };
        let status = json!({ "repositories": snapshots });
        let changed = {
            let mut last = self.last_status.lock().await;
            if *last == status {
                false
            } else {
                *last = status.clone();
                true
            }
        };
        if !changed {
            return;
        }
        client.send_notification::<SlipwayStatus>(status).await;

        let mut wanted: HashMap<Uri, Vec<Diagnostic>> = HashMap::new();
        for snapshot in &snapshots {
            for w in snapshot
                .worktrees
                .iter()
                .filter(|w| w.state == WorktreeState::Preserved && w.dirty)
            {
                for changed in &w.changed_paths {
                    let Some(uri) = Uri::from_file_path(w.path.join(changed)) else {
                        continue;
                    };
                    wanted
                        .entry(uri)
                        .or_default()
                        .push(dirty_diagnostic(w, changed));
                }
            }
        }
        let mut published = self.published.lock().await;
        let stale: HashSet<Uri> = published
            .keys()
            .filter(|u| !wanted.contains_key(*u))
            .cloned()
            .collect();
        for uri in stale {
            published.remove(&uri);
            client.publish_diagnostics(uri, Vec::new(), None).await;
        }
        for (uri, diags) in wanted {
            if published.get(&uri) != Some(&diags) {
                client
                    .publish_diagnostics(uri.clone(), diags.clone(), None)
                    .await;
                published.insert(uri, diags);
            }
        }
    }
}

fn dirty_diagnostic(w: &WorktreeStatus, file: &str) -> Diagnostic {
    Diagnostic {
        range: Range::new(Position::new(0, 0), Position::new(0, 0)),
        severity: Some(DiagnosticSeverity::WARNING),
        code: Some(NumberOrString::String("dirty-preserved-worktree".into())),
        source: Some("slipway".into()),
        message: format!(
            "'{file}' has uncommitted changes in the preserved worktree {} (branch {}) at {}; review them, commit them there, or close the worktree with force to lose them",
            w.id,
            w.branch,
            w.path.display()
        ),
        // What to do, for the editor's code actions.
        data: Some(serde_json::json!({ "actions": slipway_core::actions::uncommitted(&w.branch) })),
        ..Diagnostic::default()
    }
}
