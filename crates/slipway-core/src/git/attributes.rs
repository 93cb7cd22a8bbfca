//! Which files of a checkout a content filter may change, decided once for
//! the whole checkout and once per folder instead of once per file.
//!
//! On checkout libgit2 applies two filters of its own (it runs no filter
//! drivers): end-of-line conversion and `ident`. Neither can touch a file
//! unless the configuration asks for CRLF (`core.autocrlf=true`,
//! `core.eol=crlf`) or an attributes line that may match the file names `eol`,
//! `crlf`, `ident` (or, with `core.eol=crlf`, `text`), directly or through a
//! macro. This module answers that question conservatively — a pattern it
//! cannot read counts as matching — so a file it clears is written as the
//! blob's bytes, and every other file goes through libgit2's own filters.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use git2::Repository;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// One attributes file: where its patterns are rooted and its lines.
pub struct Source {
    /// The folder (relative to the checkout root) its patterns are relative to.
    pub base: PathBuf,
    /// The file's text.
    pub text: String,
    /// A `.gitattributes` in the tree (macros are allowed only at its root).
    pub in_tree: bool,
}

/// The files a filter may change.
pub enum Filters {
    /// No filter can apply: every file is the blob's bytes.
    None,
    /// Any file may be filtered (`core.autocrlf=true`).
    All,
    /// Files that a relevant attributes line may match.
    Some(Rules),
}

/// The relevant lines of every attributes file, as matchers.
pub struct Rules {
    /// Matchers of the files outside the tree (global, system, `info/`),
    /// rooted at the checkout root.
    outside: Vec<Gitignore>,
    /// Matchers of the tree's `.gitattributes`, by the folder they sit in.
    in_tree: HashMap<PathBuf, Gitignore>,
    /// Per folder, the matchers of its `.gitattributes` and its parents'
    /// (worked out once per folder).
    folders: HashMap<PathBuf, Vec<PathBuf>>,
}

impl Rules {
    /// Whether a filter may change file `rel` (relative to the checkout root).
    pub fn may_filter(&mut self, rel: &Path) -> bool {
        if self
            .outside
            .iter()
            .any(|m| !m.matched(rel, false).is_none())
        {
            return true;
        }
        let folder = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let in_tree = &self.in_tree;
        let bases = self.folders.entry(folder.clone()).or_insert_with(|| {
            folder
                .ancestors()
                .filter(|a| in_tree.contains_key(*a))
                .map(Path::to_path_buf)
                .collect()
        });
        bases.iter().any(|base| {
            let below = rel.strip_prefix(base).unwrap_or(rel);
            in_tree
                .get(base)
                .is_some_and(|m| !m.matched(below, false).is_none())
        })
    }
}

/// The attributes files outside the tree that libgit2 reads, in the order
/// git gives them precedence (lowest first): system, global, `info/`.
pub fn outside_sources(repo: &Repository) -> Vec<Source> {
    let mut paths = vec![PathBuf::from("/etc/gitattributes")];
    let configured = repo
        .config()
        .ok()
        .and_then(|c| c.get_path("core.attributesFile").ok());
    let global = configured.or_else(|| {
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(config_home.join("git").join("attributes"))
    });
    paths.extend(global);
    paths.push(repo.commondir().join("info").join("attributes"));
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok())
        .map(|bytes| Source {
            base: PathBuf::new(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
            in_tree: false,
        })
        .collect()
}

/// Splits an attribute token (`-text`, `!eol`, `eol=crlf`) to its name.
fn attr_name(token: &str) -> &str {
    let token = token.trim_start_matches(['-', '!']);
    token.split_once('=').map_or(token, |(name, _)| name)
}

/// Decides which files filters may change, from the configuration and every
/// attributes file (`sources`: the tree's `.gitattributes` and
/// [`outside_sources`]).
pub fn plan(repo: &Repository, sources: &[Source]) -> Filters {
    let config = repo.config().and_then(|mut c| c.snapshot()).ok();
    let text_of = |key: &str| {
        config
            .as_ref()
            .and_then(|c| c.get_string(key).ok())
            .map(|v| v.to_ascii_lowercase())
    };
    let autocrlf = text_of("core.autocrlf");
    if matches!(autocrlf.as_deref(), Some("true" | "yes" | "on" | "1")) {
        return Filters::All;
    }
    let mut relevant: HashSet<String> = ["eol", "crlf", "ident"].map(str::to_owned).into();
    if text_of("core.eol").as_deref() == Some("crlf") {
        relevant.insert("text".to_owned());
    }
    // Macros (`[attr]name attrs...`) that set a relevant attribute are
    // relevant themselves, through any number of macros.
    let mut macros: Vec<(String, Vec<String>)> = Vec::new();
    for source in sources {
        for line in source.text.lines() {
            let mut words = line.split_whitespace();
            let Some(name) = words.next().and_then(|w| w.strip_prefix("[attr]")) else {
                continue;
            };
            macros.push((
                name.to_owned(),
                words.map(|w| attr_name(w).to_owned()).collect(),
            ));
        }
    }
    loop {
        let before = relevant.len();
        for (name, sets) in &macros {
            if sets.iter().any(|s| relevant.contains(s)) {
                relevant.insert(name.clone());
            }
        }
        if relevant.len() == before {
            break;
        }
    }
    let mut outside = Vec::new();
    let mut in_tree = HashMap::new();
    for source in sources {
        let mut builder = GitignoreBuilder::new(Path::new("/"));
        let mut any = false;
        for line in source.text.lines() {
            let line = line.trim();
            let mut words = line.split_whitespace();
            let Some(pattern) = words.next() else {
                continue;
            };
            // Comments, macro definitions, and negative patterns (which git
            // refuses in attributes files) set nothing on a file.
            if pattern.starts_with('#') || pattern.starts_with("[attr]") || pattern.starts_with('!')
            {
                continue;
            }
            if !words.any(|w| relevant.contains(attr_name(w))) {
                continue;
            }
            // A quoted pattern is not read here: it counts as matching all.
            let pattern = if pattern.starts_with('"') {
                "*"
            } else {
                pattern
            };
            // A pattern the matcher refuses counts as matching all.
            if builder.add_line(None, pattern).is_err() && builder.add_line(None, "*").is_err() {
                return Filters::All;
            }
            any = true;
        }
        if !any {
            continue;
        }
        let matcher = match builder.build() {
            Ok(m) => m,
            // Unreadable patterns: every file may be filtered.
            Err(_) => return Filters::All,
        };
        if source.in_tree {
            in_tree.insert(source.base.clone(), matcher);
        } else {
            outside.push(matcher);
        }
    }
    if outside.is_empty() && in_tree.is_empty() {
        return Filters::None;
    }
    Filters::Some(Rules {
        outside,
        in_tree,
        folders: HashMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(sources: &[(&str, &str)]) -> Filters {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let sources: Vec<Source> = sources
            .iter()
            .map(|(base, text)| Source {
                base: PathBuf::from(base),
                text: (*text).to_owned(),
                in_tree: true,
            })
            .collect();
        plan(&repo, &sources)
    }

    fn filtered(filters: &mut Filters, path: &str) -> bool {
        match filters {
            Filters::None => false,
            Filters::All => true,
            Filters::Some(rules) => rules.may_filter(Path::new(path)),
        }
    }

    #[test]
    fn only_lines_that_set_a_filter_attribute_count() {
        let mut f = rules(&[("", "*.png binary\n* text=auto\n*.md diff=markdown\n")]);
        assert!(matches!(f, Filters::None));
        assert!(!filtered(&mut f, "a.txt"));
    }

    #[test]
    fn patterns_match_as_git_matches_them() {
        let mut f = rules(&[
            ("", "*.bat eol=crlf\n/top.c ident\n"),
            ("sub", "deep/*.x crlf\n"),
        ]);
        assert!(filtered(&mut f, "a/b/run.bat"));
        assert!(filtered(&mut f, "top.c"));
        assert!(!filtered(&mut f, "a/top.c"));
        assert!(filtered(&mut f, "sub/deep/y.x"));
        assert!(!filtered(&mut f, "deep/y.x"));
        assert!(!filtered(&mut f, "sub/other/y.x"));
        assert!(!filtered(&mut f, "readme.txt"));
    }

    #[test]
    fn macros_that_set_eol_count_and_quoted_patterns_match_all() {
        let mut f = rules(&[("", "[attr]windows eol=crlf\n*.cmd windows\n")]);
        assert!(filtered(&mut f, "x/y.cmd"));
        assert!(!filtered(&mut f, "x/y.sh"));
        let mut f = rules(&[("", "\"odd name\" ident\n")]);
        assert!(filtered(&mut f, "anything.txt"));
    }
}
