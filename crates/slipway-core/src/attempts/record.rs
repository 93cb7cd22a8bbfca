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

/// The most characters of the prompt a group record keeps (its first line).
pub const PROMPT_CHARS: usize = 200;

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
    /// The prompt's first line, for telling groups apart (see [`prompt_line`]);
    /// none for a prompt file, and in records older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
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

/// What a group record keeps of a prompt: its first non-empty line, control
/// characters made spaces (it is shown in terminals), at most
/// [`PROMPT_CHARS`] characters.
pub fn prompt_line(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(
        line.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(PROMPT_CHARS)
            .collect(),
    )
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

    /// Every group record under `slipway_dir` that passes [`GroupRecord::load`]'s
    /// checks, newest first; a file that does not is skipped and logged.
    pub fn load_all(slipway_dir: &Path) -> Vec<GroupRecord> {
        let Ok(entries) = std::fs::read_dir(groups_dir(slipway_dir)) else {
            return Vec::new();
        };
        let mut out: Vec<GroupRecord> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                // Atomic writes leave `.tmp` files for a moment; they are no record.
                let stem = name.strip_suffix(".json")?;
                match GroupId::parse(stem) {
                    Ok(id) => {
                        let record = GroupRecord::load(slipway_dir, &id);
                        if record.is_none() {
                            tracing::warn!(
                                "skipping the attempts record {name}: it cannot be read as one"
                            );
                        }
                        record
                    }
                    Err(why) => {
                        tracing::warn!("skipping {name} in the attempts records: {why}");
                        None
                    }
                }
            })
            .collect();
        out.sort_by(|a, b| (b.created, b.group_id.as_str()).cmp(&(a.created, a.group_id.as_str())));
        out
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
        if let Some(prompt) = &self.prompt
            && (prompt.chars().count() > PROMPT_CHARS || prompt.chars().any(char::is_control))
        {
            return Err(format!(
                "its prompt is not one line of at most {PROMPT_CHARS} characters"
            ));
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
            prompt: Some("fix the parser".into()),
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
            |r: &mut GroupRecord| r.prompt = Some("two\nlines".into()),
            |r: &mut GroupRecord| r.prompt = Some("\u{1b}[2Jclear".into()),
            |r: &mut GroupRecord| r.prompt = Some("x".repeat(PROMPT_CHARS + 1)),
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

    #[test]
    fn the_prompt_kept_is_its_first_line_made_safe_and_short() {
        assert_eq!(
            prompt_line("\n  fix it\tnow  \nand more"),
            Some("fix it now".into())
        );
        assert_eq!(prompt_line("a\u{1b}[31mred"), Some("a [31mred".into()));
        assert_eq!(
            prompt_line(&"é".repeat(300)).map(|p| p.chars().count()),
            Some(PROMPT_CHARS)
        );
        assert_eq!(prompt_line(" \n\n"), None);
    }

    #[test]
    fn every_readable_group_is_listed_newest_first_and_a_bad_file_is_skipped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ids = Vec::new();
        for created in [5, 9, 7] {
            let id = GroupId::parse(&format!("att-{created}-ab")).expect("an id");
            let mut record = sample(&id);
            record.created = created;
            record.save(dir.path()).expect("saves");
            ids.push(id);
        }
        let groups = groups_dir(dir.path());
        std::fs::write(groups.join("att-8-cd.json"), b"{not json").expect("write");
        std::fs::write(groups.join("notes.json"), b"{}").expect("write");
        let listed: Vec<String> = GroupRecord::load_all(dir.path())
            .into_iter()
            .map(|g| g.group_id.to_string())
            .collect();
        assert_eq!(listed, vec!["att-9-ab", "att-7-ab", "att-5-ab"]);
    }
}
