//! The ref guard: snapshot every ref before a run, and after it restore any
//! ref other than the run's own branch that moved, appeared or vanished.

use std::collections::BTreeMap;

use git2::Repository;
use serde::Serialize;

/// What a ref pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RefValue {
    Direct(git2::Oid),
    Symbolic(String),
}

impl RefValue {
    fn describe(&self) -> String {
        match self {
            RefValue::Direct(oid) => oid.to_string(),
            RefValue::Symbolic(target) => format!("-> {target}"),
        }
    }
}

/// Every ref of a repository at one moment.
#[derive(Debug, Clone)]
pub struct RefSnapshot {
    refs: BTreeMap<String, RefValue>,
}

/// One ref the guard found changed, and what it did about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefChange {
    /// Full ref name.
    pub name: String,
    /// Value before the run (`None`: the ref did not exist).
    pub before: Option<String>,
    /// Value after the run (`None`: the ref was deleted).
    pub after: Option<String>,
    /// Whether the original value was put back.
    pub restored: bool,
}

fn read_all(repo: &Repository) -> Result<BTreeMap<String, RefValue>, git2::Error> {
    let mut refs = BTreeMap::new();
    for r in repo.references()? {
        let r = r?;
        let Some(name) = r.name().ok().map(str::to_owned) else {
            continue;
        };
        let value = match (r.symbolic_target().ok().flatten(), r.target()) {
            (Some(t), _) => RefValue::Symbolic(t.to_owned()),
            (None, Some(oid)) => RefValue::Direct(oid),
            (None, None) => continue,
        };
        refs.insert(name, value);
    }
    Ok(refs)
}

impl RefSnapshot {
    /// Reads every ref.
    pub fn take(repo: &Repository) -> Result<RefSnapshot, git2::Error> {
        Ok(RefSnapshot {
            refs: read_all(repo)?,
        })
    }

    /// Restores every ref except `own` (full names the run may move) to its
    /// snapshot value and reports what changed.
    pub fn restore_except(
        &self,
        repo: &Repository,
        own: &[String],
    ) -> Result<Vec<RefChange>, git2::Error> {
        let now = read_all(repo)?;
        let mut changes = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            self.refs.keys().chain(now.keys()).collect();
        for name in names {
            if own.iter().any(|o| o == name) {
                continue;
            }
            let before = self.refs.get(name);
            let after = now.get(name);
            if before == after {
                continue;
            }
            let restored = match before {
                Some(RefValue::Direct(oid)) => repo
                    .reference(name, *oid, true, "slipway: ref guard restore")
                    .is_ok(),
                Some(RefValue::Symbolic(target)) => repo
                    .reference_symbolic(name, target, true, "slipway: ref guard restore")
                    .is_ok(),
                None => repo
                    .find_reference(name)
                    .and_then(|mut r| r.delete())
                    .is_ok(),
            };
            changes.push(RefChange {
                name: name.clone(),
                before: before.map(RefValue::describe),
                after: after.map(RefValue::describe),
                restored,
            });
        }
        Ok(changes)
    }
}
