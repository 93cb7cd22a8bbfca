//! Schema versions and the steps between them.
//!
//! - **Version 1** (the first public shape): mounts with `src`, `dst`,
//!   `readonly` and a boolean `isolated` (a private worktree, or the host folder
//!   itself); no source branch policy, so isolated checkouts started at host
//!   HEAD. A file without a `version` key is version 1.
//! - **Version 2** (current): `isolation = "shared" | "worktree" | "clone"`
//!   replaces `isolated`, and mounts gain `source_branch_policy` and
//!   `source_branch` (missing policy = `host_head`, so migrated files keep
//!   their behaviour).
//!
//! Each step edits the `toml_edit` document in place: comments, order,
//! formatting and unknown keys survive; running the migration on a migrated
//! file changes nothing. A file newer than this binary is refused.

use std::path::Path;

use toml_edit::{DocumentMut, InlineTable, Item, Key, Table, Value};

use super::validate::ValidationError;

use super::CURRENT_VERSION;

/// One migration step, from `from` to `from + 1`.
pub struct Step {
    /// The version it reads.
    pub from: u32,
    /// The version it writes.
    pub to: u32,
    /// What it changes, for people.
    pub summary: &'static str,
    apply: fn(&mut DocumentMut, &Path) -> Result<(), ValidationError>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("summary", &self.summary)
            .finish()
    }
}

const STEPS: &[Step] = &[Step {
    from: 1,
    to: 2,
    summary: "mounts: `isolated = true` becomes `isolation = \"worktree\"`, `isolated = false` becomes `isolation = \"shared\"`; version = 2",
    apply: v1_to_v2,
}];

/// Every migration step, oldest first (each has fixtures under
/// `tests/fixtures/workspace/migrations/v{from}-to-v{to}/`).
pub fn steps() -> &'static [Step] {
    STEPS
}

/// The `version` a document declares (1 when the key is missing).
pub fn file_version(doc: &DocumentMut, file: &Path) -> Result<u32, ValidationError> {
    match doc.get("version") {
        None => Ok(1),
        Some(item) => item
            .as_integer()
            .and_then(|v| u32::try_from(v).ok())
            .filter(|v| *v >= 1)
            .ok_or_else(|| ValidationError::BadVersion {
                file: file.to_path_buf(),
                found: item.to_string().trim().to_owned(),
            }),
    }
}

/// Migrates `doc` to [`CURRENT_VERSION`] in place. Returns the version it
/// started from when it changed anything, `None` when it was current.
pub fn migrate(doc: &mut DocumentMut, file: &Path) -> Result<Option<u32>, ValidationError> {
    let start = file_version(doc, file)?;
    if start > CURRENT_VERSION {
        return Err(ValidationError::VersionTooNew {
            file: file.to_path_buf(),
            version: start,
            supported: CURRENT_VERSION,
        });
    }
    if start == CURRENT_VERSION {
        return Ok(None);
    }
    let mut version = start;
    for step in STEPS.iter().filter(|s| s.from >= start) {
        debug_assert_eq!(step.from, version, "migration steps must be contiguous");
        (step.apply)(doc, file)?;
        version = step.to;
    }
    debug_assert_eq!(version, CURRENT_VERSION);
    Ok(Some(start))
}

/// Migrates a file's text to the current version; text already current comes
/// back unchanged, byte for byte.
pub fn migrate_text(text: &str, file: &Path) -> Result<String, super::WorkspaceError> {
    let mut doc: DocumentMut =
        text.parse()
            .map_err(|e: toml_edit::TomlError| super::WorkspaceError::Syntax {
                path: file.to_path_buf(),
                message: e.to_string().trim_end().to_owned(),
            })?;
    match migrate(&mut doc, file)? {
        None => Ok(text.to_owned()),
        Some(_) => Ok(doc.to_string()),
    }
}

/// Sets `version = N`, keeping the old value's decoration, or appends the key
/// after the other top-level keys.
fn set_version(doc: &mut DocumentMut, version: u32) {
    let mut value = Value::from(i64::from(version));
    match doc.get_mut("version") {
        Some(item) => {
            if let Some(old) = item.as_value() {
                *value.decor_mut() = old.decor().clone();
            }
            *item = Item::Value(value);
        }
        None => {
            doc.insert("version", Item::Value(value));
        }
    }
}

/// Renames `old` to `new` in place (same position, same key decoration),
/// giving it `value` with the old value's decoration.
fn rename_in_table(table: &mut Table, old: &str, new: &str, value: Value) {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    let entries: Vec<(Key, Item)> = keys.iter().filter_map(|k| table.remove_entry(k)).collect();
    for (key, item) in entries {
        if key.get() == old {
            let mut value = value.clone();
            if let Some(v) = item.as_value() {
                *value.decor_mut() = v.decor().clone();
            }
            let renamed = Key::new(new).with_leaf_decor(key.leaf_decor().clone());
            table.insert_formatted(&renamed, Item::Value(value));
        } else {
            table.insert_formatted(&key, item);
        }
    }
}

/// [`rename_in_table`] for an inline table (`mounts = [{ … }]`).
fn rename_in_inline(table: &mut InlineTable, old: &str, new: &str, value: Value) {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    let entries: Vec<(Key, Value)> = keys.iter().filter_map(|k| table.remove_entry(k)).collect();
    for (key, v) in entries {
        if key.get() == old {
            let mut value = value.clone();
            *value.decor_mut() = v.decor().clone();
            let renamed = Key::new(new).with_leaf_decor(key.leaf_decor().clone());
            table.insert_formatted(&renamed, value);
        } else {
            table.insert_formatted(&key, v);
        }
    }
}

/// What v1's `isolated` becomes, or why it cannot be migrated.
fn v2_isolation(
    table: &dyn toml_edit::TableLike,
    index: usize,
    file: &Path,
) -> Result<Option<Value>, ValidationError> {
    let Some(item) = table.get("isolated") else {
        return Ok(None);
    };
    let label = super::items::raw_label(table, index);
    let Some(isolated) = item.as_bool() else {
        return Err(ValidationError::WrongType {
            file: file.to_path_buf(),
            at: format!("mount {label}"),
            key: "isolated".to_owned(),
            expected: "true or false".to_owned(),
            found: item.type_name().to_owned(),
        });
    };
    if table.contains_key("isolation") {
        return Err(ValidationError::ConflictingKeys {
            file: file.to_path_buf(),
            mount: label,
        });
    }
    Ok(Some(Value::from(if isolated {
        "worktree"
    } else {
        "shared"
    })))
}

/// Version 1 → 2: `isolated = BOOL` → `isolation = "worktree" | "shared"`.
fn v1_to_v2(doc: &mut DocumentMut, file: &Path) -> Result<(), ValidationError> {
    if let Some(item) = doc.get_mut("mounts") {
        // Check every mount first, so an error leaves the document untouched.
        let plan: Vec<Option<Value>> = super::items::mount_tables(item, file)?
            .into_iter()
            .enumerate()
            .map(|(i, t)| v2_isolation(t, i, file))
            .collect::<Result<_, _>>()?;
        if let Some(aot) = item.as_array_of_tables_mut() {
            for (table, value) in aot.iter_mut().zip(plan) {
                if let Some(value) = value {
                    rename_in_table(table, "isolated", "isolation", value);
                }
            }
        } else if let Some(array) = item.as_array_mut() {
            for (v, value) in array.iter_mut().zip(plan) {
                if let (Some(table), Some(value)) = (v.as_inline_table_mut(), value) {
                    rename_in_inline(table, "isolated", "isolation", value);
                }
            }
        }
    }
    set_version(doc, 2);
    Ok(())
}
