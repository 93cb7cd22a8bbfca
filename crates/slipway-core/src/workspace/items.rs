//! Reading raw TOML items the same way in every schema version: the mount
//! tables, a mount's label, and the type errors. The current schema
//! (`schema`) and the migrations (`migrate`) both use these, so neither
//! depends on the other.

use std::path::Path;

use toml_edit::{Item, TableLike};

use super::validate::ValidationError;

/// Where top-level keys are, in messages.
pub(crate) const TOP: &str = "top level";

/// A value of the wrong type at `key` (in the table `at`).
pub(crate) fn wrong_type(
    file: &Path,
    at: &str,
    key: &str,
    expected: &str,
    found: &Item,
) -> ValidationError {
    ValidationError::WrongType {
        file: file.to_path_buf(),
        at: at.to_owned(),
        key: key.to_owned(),
        expected: expected.to_owned(),
        found: found.type_name().to_owned(),
    }
}

/// The mounts item as a list of table-likes (`[[mounts]]` or `mounts = [{…}]`).
pub(crate) fn mount_tables<'a>(
    item: &'a Item,
    file: &Path,
) -> Result<Vec<&'a dyn TableLike>, ValidationError> {
    let expected = "a list of tables ([[mounts]])";
    if let Some(aot) = item.as_array_of_tables() {
        return Ok(aot.iter().map(|t| t as &dyn TableLike).collect());
    }
    if let Some(array) = item.as_array() {
        return array
            .iter()
            .map(|v| {
                v.as_inline_table()
                    .map(|t| t as &dyn TableLike)
                    .ok_or_else(|| wrong_type(file, TOP, "mounts", expected, item))
            })
            .collect();
    }
    Err(wrong_type(file, TOP, "mounts", expected, item))
}

/// A mount's label before it is fully read: its dst, else its src, else `#N`.
pub(crate) fn raw_label(table: &dyn TableLike, index: usize) -> String {
    table
        .get("dst")
        .and_then(Item::as_str)
        .or_else(|| table.get("src").and_then(Item::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("#{}", index + 1))
}
