//! Where a repository's worktrees live (DESIGN §3 "Worktree root"): under
//! `<repository>/.slipway/worktrees/` unless the user's `config.toml`
//! names another folder — for every repository (`worktree_root`) or for one
//! (`[worktree_roots]`, keyed by the repository's path) — for example a
//! sibling folder or another disk. slipway's records stay in `.slipway/`.
//!
//! The setting is the user's own (a file outside every repository): a
//! repository's `slipway.toml`, which anything that can write the
//! repository can change, has no say in where slipway creates and deletes
//! folders. Under a configured folder each repository gets a folder of its
//! own, `<repository name>-<10 hex digits of its path>`, so two
//! repositories never share a worktree path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The user's worktree roots, read once per process.
#[derive(Debug, Default, Clone)]
struct Roots {
    every: Option<PathBuf>,
    each: BTreeMap<PathBuf, PathBuf>,
}

fn roots() -> &'static Roots {
    static ROOTS: std::sync::OnceLock<Roots> = std::sync::OnceLock::new();
    ROOTS.get_or_init(|| {
        let Some(file) =
            crate::util::config_dir().map(|d| d.join(crate::workspace::USER_FILE_NAME))
        else {
            return Roots::default();
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            return Roots::default();
        };
        match parse(&text) {
            Ok(roots) => roots,
            Err(why) => {
                tracing::warn!(
                    "{}: {why}; worktrees stay in each repository",
                    file.display()
                );
                Roots::default()
            }
        }
    })
}

/// Reads `worktree_root` and `[worktree_roots]` from the user's config text.
fn parse(text: &str) -> Result<Roots, String> {
    let doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let path = |value: &toml_edit::Item, key: &str| -> Result<PathBuf, String> {
        let text = value
            .as_str()
            .ok_or_else(|| format!("{key} must be a path"))?;
        let expanded = match text.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(rest))
                .ok_or_else(|| format!("{key}: no HOME for ~"))?,
            None => PathBuf::from(text),
        };
        if !expanded.is_absolute() {
            return Err(format!("{key} must be an absolute path (or start with ~/)"));
        }
        Ok(expanded)
    };
    let mut roots = Roots::default();
    if let Some(value) = doc.get("worktree_root") {
        roots.every = Some(path(value, "worktree_root")?);
    }
    if let Some(table) = doc.get("worktree_roots").and_then(|t| t.as_table_like()) {
        for (repo, value) in table.iter() {
            roots
                .each
                .insert(crate::git::canonical(Path::new(repo)), path(value, repo)?);
        }
    }
    Ok(roots)
}

/// The folder the worktrees of the repository whose checkout is `root`
/// live in.
pub fn worktrees_dir_for(root: &Path) -> PathBuf {
    configured(roots(), root).unwrap_or_else(|| root.join(".slipway").join("worktrees"))
}

/// Whether the worktrees of `root` live outside its `.slipway/`.
pub fn is_configured(root: &Path) -> bool {
    configured(roots(), root).is_some()
}

fn configured(roots: &Roots, root: &Path) -> Option<PathBuf> {
    let base = roots.each.get(root).or(roots.every.as_ref())?;
    // The folder itself may be a symlink to another disk: resolved once,
    // so every path slipway acts on below it has no symlink.
    let base = crate::git::canonical(base);
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repository".to_owned());
    let hash = git2::Oid::hash_object(git2::ObjectType::Blob, root.as_os_str().as_encoded_bytes())
        .map(|o| o.to_string())
        .unwrap_or_else(|_| "0".repeat(40));
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    Some(base.join(format!("{}-{}", slug.trim_start_matches('.'), &hash[..10])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configured_root_gives_each_repository_its_own_folder() {
        let roots = parse(
            "worktree_root = \"/mnt/fast/wt\"\n[worktree_roots]\n\"/srv/big\" = \"/mnt/big\"\n",
        )
        .expect("parses");
        let a = configured(&roots, Path::new("/home/u/app")).expect("configured");
        let b = configured(&roots, Path::new("/home/v/app")).expect("configured");
        assert!(a.starts_with("/mnt/fast/wt") && a.file_name().is_some());
        assert_ne!(a, b, "two repositories named alike never share a folder");
        let big = configured(&roots, Path::new("/srv/big")).expect("configured");
        assert!(big.starts_with("/mnt/big"), "{}", big.display());
        assert!(configured(&Roots::default(), Path::new("/x")).is_none());
        assert!(parse("worktree_root = \"relative\"").is_err());
        assert!(parse("worktree_root = 3").is_err());
    }
}
