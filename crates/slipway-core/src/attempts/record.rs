//! A group of attempts on disk: `.slipway/attempts/<group>.json` names its
//! runs and branches. Anything able to write the repository could have
//! written it, so what is read back is checked: ids parse as ids, branches as
//! branch names, attempts are numbered 1…N, and N is bounded.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::git::refname::validate_branch_name;
use crate::ids::{GroupId, RunId};

/// The most attempts one group may hold.
pub const MAX_ATTEMPTS: usize = 64;

/// Where the group's branches come from, and where the winner lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupStrategy {
    /// Each attempt on `<branch>/<n>`, kept.
    Branch,
    /// Each attempt on a temporary branch; nothing lands until a winner is
    /// picked, which lands in `into`.
    MergeToHead,
}

/// One attempt of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptEntry {
    /// 1…N.
    pub index: usize,
    /// Its run.
    pub run_id: RunId,
    /// The agent's name.
    pub agent: String,
    /// Its branch.
    pub branch: String,
}

/// A group of attempts: one prompt, one source commit, N runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRecord {
    /// Its id.
    pub group_id: GroupId,
    /// When it started, seconds since the epoch.
    pub created: u64,
    /// The commit every attempt started from.
    pub source_commit: String,
    /// Branch or merge-to-head.
    pub strategy: GroupStrategy,
    /// Merge-to-head: the host branch the winner lands in.
    #[serde(default)]
    pub into: Option<String>,
    /// The check each attempt ran after its agent.
    #[serde(default)]
    pub check: Option<String>,
    /// The attempts, in order.
    pub attempts: Vec<AttemptEntry>,
}

/// The folder of group records.
pub fn groups_dir(slipway_dir: &Path) -> PathBuf {
    slipway_dir.join("attempts")
}

fn record_path(slipway_dir: &Path, id: &GroupId) -> PathBuf {
    groups_dir(slipway_dir).join(format!("{id}.json"))
}

impl GroupRecord {
    /// Writes the record atomically.
    pub fn save(&self, slipway_dir: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a group record always serialises");
        bytes.push(b'\n');
        crate::util::write_atomic(&record_path(slipway_dir, &self.group_id), &bytes)
    }

    /// Loads and checks the record of `id`; `None` when there is none or it
    /// is not one slipway could have written.
    pub fn load(slipway_dir: &Path, id: &GroupId) -> Option<GroupRecord> {
        let bytes = std::fs::read(record_path(slipway_dir, id)).ok()?;
        let record: GroupRecord = serde_json::from_slice(&bytes).ok()?;
        match record.validate(id) {
            Ok(()) => Some(record),
            Err(why) => {
                tracing::warn!("ignoring the attempts record of {id}: {why}");
                None
            }
        }
    }

    /// Why the record cannot be this group's, if it cannot.
    fn validate(&self, id: &GroupId) -> Result<(), String> {
        if self.group_id != *id {
            return Err(format!("it names group {}", self.group_id));
        }
        if self.attempts.is_empty() || self.attempts.len() > MAX_ATTEMPTS {
            return Err(format!(
                "it holds {} attempts (1 to {MAX_ATTEMPTS} are possible)",
                self.attempts.len()
            ));
        }
        if git2::Oid::from_str(&self.source_commit).is_err() || self.source_commit.len() != 40 {
            return Err("its source is not a commit id".into());
        }
        for (n, attempt) in self.attempts.iter().enumerate() {
            if attempt.index != n + 1 {
                return Err(format!("attempt {} is numbered {}", n + 1, attempt.index));
            }
            validate_branch_name(&attempt.branch).map_err(|e| e.to_string())?;
        }
        if let Some(into) = &self.into {
            validate_branch_name(into).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// The attempt numbered `index`.
    pub fn attempt(&self, index: usize) -> Option<&AttemptEntry> {
        self.attempts.iter().find(|a| a.index == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(id: &GroupId) -> GroupRecord {
        GroupRecord {
            group_id: id.clone(),
            created: 1,
            source_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            strategy: GroupStrategy::Branch,
            into: None,
            check: None,
            attempts: vec![AttemptEntry {
                index: 1,
                run_id: RunId::new(),
                agent: "command".into(),
                branch: "feat/1".into(),
            }],
        }
    }

    #[test]
    fn a_record_reads_back_and_a_tampered_one_does_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let id = GroupId::new();
        let record = sample(&id);
        record.save(dir.path()).expect("saves");
        assert_eq!(GroupRecord::load(dir.path(), &id), Some(record.clone()));

        let path = record_path(dir.path(), &id);
        for tamper in [
            |r: &mut GroupRecord| r.attempts[0].branch = "../x..".into(),
            |r: &mut GroupRecord| r.attempts[0].index = 2,
            |r: &mut GroupRecord| r.group_id = GroupId::parse("att-1-ab").expect("an id"),
            |r: &mut GroupRecord| r.source_commit = "HEAD".into(),
            |r: &mut GroupRecord| r.attempts.clear(),
        ] {
            let mut bad = record.clone();
            tamper(&mut bad);
            std::fs::write(&path, serde_json::to_vec(&bad).expect("serialises")).expect("write");
            assert_eq!(GroupRecord::load(dir.path(), &id), None);
        }
        let text = String::from_utf8(serde_json::to_vec(&record).expect("serialises"))
            .expect("utf-8")
            .replace(record.attempts[0].run_id.as_str(), "../../etc");
        std::fs::write(&path, text).expect("write");
        assert_eq!(GroupRecord::load(dir.path(), &id), None);
    }
}
