//! The branch listing's configuration — every branch's upstream
//! (`branch.<name>.remote`/`.merge`) and every remote's fetch refspecs —
//! read in one pass over the repository's config file. libgit2's config
//! handling grows faster than linearly with the number of sections (2,500
//! upstreams cost it about 70 ms, most of a listing); a listing needs only
//! these keys. What this does not follow (includes, per-worktree config,
//! branch or remote keys in a global or system file) makes it answer `None`,
//! and the caller asks libgit2.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What the listing needs from the configuration.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BranchConfig {
    /// Per local branch: `branch.<name>.remote` and `branch.<name>.merge`.
    pub upstreams: HashMap<String, (Option<String>, Option<String>)>,
    /// Every remote that has a `url` or `pushurl`, with its `fetch` values in order.
    pub fetch: Vec<(String, Vec<String>)>,
}

/// The config files other than the repository's own that git reads.
fn other_files() -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    if let Some(path) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        files.push(PathBuf::from(path));
    }
    if let Some(home) = std::env::var_os("HOME") {
        files.push(Path::new(&home).join(".gitconfig"));
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(&home).join(".config"));
        files.push(xdg.join("git").join("config"));
    }
    files
}

/// Whether a config file's text may name branch or remote keys, or pull in another file.
fn may_matter(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["[branch", "[remote", "[include"]
        .iter()
        .any(|s| lower.contains(s))
}

/// Reads the branch and remote keys of the repository whose common dir is
/// `common_dir`; `None` when only libgit2 can read them faithfully.
pub fn read(common_dir: &Path) -> Option<BranchConfig> {
    if std::env::var_os("GIT_CONFIG_PARAMETERS").is_some()
        || std::env::var_os("GIT_CONFIG_COUNT").is_some()
    {
        return None;
    }
    for file in other_files() {
        if let Ok(text) = std::fs::read_to_string(&file)
            && may_matter(&text)
        {
            return None;
        }
    }
    let text = match std::fs::read_to_string(common_dir.join("config")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(_) => return None,
    };
    parse(&text)
}

/// Picks the branch and remote keys out of config text (parsed as git parses
/// it, see [`super::config_text`]); `None` when the text includes other
/// files or keeps per-worktree config, or is not git config.
pub fn parse(text: &str) -> Option<BranchConfig> {
    let mut out = BranchConfig::default();
    let mut remotes: Vec<(String, Vec<String>, bool)> = Vec::new();
    for entry in super::config_text::parse(text.as_bytes()).ok()? {
        let section = entry.section.to_ascii_lowercase();
        let key = entry.key.to_ascii_lowercase();
        if section == "include"
            || section == "includeif"
            || (section == "extensions" && key == "worktreeconfig")
        {
            return None;
        }
        let (Some(sub), Some(value)) = (entry.subsection, entry.value) else {
            continue;
        };
        match (section.as_str(), key.as_str()) {
            ("branch", "remote") => out.upstreams.entry(sub).or_default().0 = Some(value),
            ("branch", "merge") => out.upstreams.entry(sub).or_default().1 = Some(value),
            ("remote", "fetch" | "url" | "pushurl") => {
                let at = match remotes.iter().position(|(r, _, _)| *r == sub) {
                    Some(at) => at,
                    None => {
                        remotes.push((sub, Vec::new(), false));
                        remotes.len() - 1
                    }
                };
                if key == "fetch" {
                    remotes[at].1.push(value);
                } else {
                    remotes[at].2 = true;
                }
            }
            _ => {}
        }
    }
    out.fetch = remotes
        .into_iter()
        .filter(|(_, _, has_url)| *has_url)
        .map(|(name, fetch, _)| (name, fetch))
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_sections_are_read_in_one_pass() {
        let text = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = /x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                    [Branch \"Feat/X\"]\n\tRemote = origin\n\tmerge = refs/heads/feat/x\n[remote \"nourl\"]\n\tfetch = a:b\n";
        let c = parse(text).expect("plain");
        assert_eq!(
            c.upstreams["Feat/X"],
            (Some("origin".into()), Some("refs/heads/feat/x".into()))
        );
        assert_eq!(
            c.fetch,
            vec![(
                "origin".to_owned(),
                vec!["+refs/heads/*:refs/remotes/origin/*".to_owned()]
            )]
        );
    }

    #[test]
    fn includes_and_per_worktree_config_are_left_to_libgit2() {
        for text in [
            "[include]\n\tpath = other\n",
            "[includeIf \"gitdir:/x\"]\n\tpath = other\n",
            "[extensions]\n\tworktreeConfig = true\n",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
        let quoted =
            parse("[branch \"x\"]\n\tmerge = \"refs/heads/x\" # why\n").expect("git config");
        assert_eq!(quoted.upstreams["x"].1.as_deref(), Some("refs/heads/x"));
    }
}
