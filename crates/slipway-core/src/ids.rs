//! The ids slipway names things by on disk: runs, worktrees and long-lived
//! sandboxes (DESIGN §2 "Git safety" 5). An id arrives from the editor, the
//! command line, or a file under `.slipway/` that anything able to write the
//! repository could have planted; it becomes a path only after it parsed as
//! one of these types, whose every value is a single plain file name. Paths
//! are derived from the repository root and an id, never read from a record.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a string is not an id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{}' is not a {kind} id ({why})", shown(value))]
pub struct IdError {
    /// What kind of id was expected (`run`, `worktree`, `sandbox`).
    pub kind: &'static str,
    /// The text as given.
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl IdError {
    /// Stable machine-readable kind: a malformed argument.
    pub fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::InvalidParams
    }
}

fn shown(value: &str) -> String {
    let mut text: String = value.chars().take(80).collect();
    if value.chars().count() > 80 {
        text.push('…');
    }
    text.escape_debug().to_string()
}

fn is_hex(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks the `<seconds>-<hex>` of a time-sorted id; `shape` says the whole form.
fn seconds_hex(rest: &str, shape: &'static str) -> Result<(), &'static str> {
    let (secs, hex) = rest.split_once('-').ok_or(shape)?;
    if secs.is_empty() || secs.len() > 20 || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return Err("its seconds are not a number");
    }
    if hex.len() > 32 || !is_hex(hex) {
        return Err("its suffix is not lowercase hex");
    }
    Ok(())
}

/// `<prefix>-<seconds>-<hex>` for now, whose hex starts with the milliseconds
/// within the second (three digits, zero-padded) before five random digits (eight
/// in all, as long as the ids before, so one-line messages naming a run keep their
/// room): ids started in one second then sort in the order they were made, as
/// `slipway runs` lists them, where random digits alone put them in any order.
fn timed_id(prefix: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    timed_id_at(prefix, now)
}

/// [`timed_id`] for the time `now` since the epoch.
fn timed_id_at(prefix: &str, now: std::time::Duration) -> String {
    format!(
        "{prefix}-{}-{:03x}{}",
        now.as_secs(),
        now.subsec_millis(),
        &crate::util::random_hex(3)[..5]
    )
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Parses `text`, refusing anything that is not such an id.
            pub fn parse(text: &str) -> Result<$name, IdError> {
                let check: fn(&str) -> Result<(), &'static str> = $check;
                match check(text) {
                    Ok(()) => Ok($name(text.to_owned())),
                    Err(why) => Err(IdError {
                        kind: $kind,
                        value: text.to_owned(),
                        why,
                    }),
                }
            }

            /// The id as text (a plain file name).
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        // An id reads as the plain text it is wherever text is wanted; only
        // building a path needs the type itself.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        // Hashes and compares as its text, so maps keyed by ids are
        // looked up by text.
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<std::path::Path> for $name {
            fn as_ref(&self) -> &std::path::Path {
                std::path::Path::new(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(text: &str) -> Result<$name, IdError> {
                $name::parse(text)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let text = String::deserialize(deserializer)?;
                $name::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

id_type!(
    /// A run's id: `run-<seconds>-<hex>`, as [`RunId::new`] makes them; a
    /// run of a workspace mount adds `-<index>` for its private git dirs.
    RunId,
    "run",
    |text| {
        let rest = text.strip_prefix("run-").ok_or("it must start with 'run-'")?;
        seconds_hex(rest, "it must be run-<seconds>-<hex>")
    }
);

id_type!(
    /// A worktree's id: its folder under the worktrees folder and its
    /// libgit2 name, the readable slug plus hash of its branch that
    /// [`crate::worktree::naming::dir_name`] makes.
    WorktreeId,
    "worktree",
    |text| {
        if text.is_empty() || text.len() > 64 {
            return Err("it must be 1 to 64 characters");
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        {
            return Err("it may hold only letters, digits, '.', '_' and '-'");
        }
        if text.starts_with(['.', '-']) {
            return Err("it may not start with '.' or '-'");
        }
        let hash = text.rsplit('-').next().unwrap_or_default();
        if hash.len() != 10 || !is_hex(hash) {
            return Err("it must end in '-' and 10 hex digits");
        }
        Ok(())
    }
);

id_type!(
    /// A long-lived sandbox's id: `sbx-<hex>`.
    SandboxId,
    "sandbox",
    |text| {
        let hex = text.strip_prefix("sbx-").ok_or("it must start with 'sbx-'")?;
        if hex.len() > 32 || !is_hex(hex) {
            return Err("its suffix is not lowercase hex");
        }
        Ok(())
    }
);

id_type!(
    /// A group of attempts' id: `att-<seconds>-<hex>`.
    GroupId,
    "attempts group",
    |text| {
        let rest = text.strip_prefix("att-").ok_or("it must start with 'att-'")?;
        seconds_hex(rest, "it must be att-<seconds>-<hex>")
    }
);

impl GroupId {
    /// A new group id: time plus randomness, sortable.
    pub fn new() -> GroupId {
        GroupId(timed_id("att"))
    }
}

impl Default for GroupId {
    fn default() -> GroupId {
        GroupId::new()
    }
}

impl RunId {
    /// A new run id: time plus randomness, sortable.
    pub fn new() -> RunId {
        RunId(timed_id("run"))
    }

    /// The id of mount `index`'s part of this run (its private git dir).
    pub fn part(&self, index: usize) -> String {
        format!("{}-{index}", self.0)
    }
}

impl Default for RunId {
    fn default() -> RunId {
        RunId::new()
    }
}

impl WorktreeId {
    /// The id of the worktree for `branch` (which need not be valid: the
    /// encoding is a plain file name whatever the input).
    pub fn of_branch(branch: &str) -> WorktreeId {
        WorktreeId(crate::worktree::naming::dir_name(branch))
    }
}

impl SandboxId {
    /// A new sandbox id.
    pub fn new() -> SandboxId {
        SandboxId(format!("sbx-{}", crate::util::random_hex(4)))
    }
}

impl Default for SandboxId {
    fn default() -> SandboxId {
        SandboxId::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_file_names_or_refused() {
        for bad in [
            "",
            "..",
            "../../etc/passwd",
            "/abs",
            "run-1-../x",
            "run-1-abc/def",
            "run-12-ABC",
            "run--ab",
            "run-1-",
            "run-1-ab\0",
            "x",
        ] {
            assert!(RunId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(RunId::parse("run-1767225600-a1b2c3").is_ok());
        assert!(RunId::parse(RunId::new().as_str()).is_ok());
        for bad in [
            "",
            ".x-0123456789",
            "-a-0123456789",
            "a/b-0123456789",
            "a-012345678",
            "a b-0123456789",
            "..",
            "a-0123456789abcdef",
        ] {
            assert!(WorktreeId::parse(bad).is_err(), "{bad:?}");
        }
        for branch in ["feat/x", "..", "../../x", "a b", "ünï", ""] {
            let id = WorktreeId::of_branch(branch);
            assert_eq!(WorktreeId::parse(id.as_str()).as_ref(), Ok(&id), "{branch}");
        }
        assert!(SandboxId::parse("sbx-0a1b2c3d").is_ok());
        assert!(SandboxId::parse("sbx-../x").is_err());
        assert!(SandboxId::parse(SandboxId::new().as_str()).is_ok());
        assert!(GroupId::parse(GroupId::new().as_str()).is_ok());
        for bad in ["", "att-", "att-1-../x", "att-x-ab", "run-1-ab", "att-1-AB"] {
            assert!(GroupId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_made_in_one_second_sort_in_the_order_they_were_made() {
        use std::time::Duration;
        let times = [
            Duration::from_millis(1_767_225_600_000),
            Duration::from_millis(1_767_225_600_009),
            Duration::from_millis(1_767_225_600_010),
            Duration::from_millis(1_767_225_600_500),
            Duration::from_millis(1_767_225_600_999),
        ];
        // Many rounds: one random suffix may happen to sort right, not all of them.
        for _ in 0..50 {
            let ids: Vec<RunId> = times
                .iter()
                .map(|t| RunId::parse(&timed_id_at("run", *t)).expect("a run id"))
                .collect();
            let mut sorted = ids.clone();
            sorted.sort();
            assert_eq!(sorted, ids);
            for id in &ids {
                assert!(id.as_str().starts_with("run-1767225600-"), "{id:?}");
                assert_eq!(id.as_str().len(), "run-1767225600-".len() + 8, "{id:?}");
            }
        }
        assert!(GroupId::parse(&timed_id_at("att", times[4])).is_ok());
    }

    #[test]
    fn a_record_naming_a_bad_id_does_not_deserialise() {
        let bad: Result<RunId, _> = serde_json::from_str("\"../../x\"");
        assert!(bad.is_err());
        let good: RunId = serde_json::from_str("\"run-1-ab\"").expect("parses");
        assert_eq!(good.as_str(), "run-1-ab");
    }
}
