//! Files in a change that make programs run on the host once they are in the
//! user's checkout: the repository's `slipway.toml` (its hooks run on the
//! host and its defaults choose the sandbox), files under the hooks folder
//! the host's `core.hooksPath` names (the user's config, so git runs them),
//! and files that editors and shells run when they open a folder (VS Code's
//! tasks and settings, Neovim's exrc files, direnv's `.envrc`, mise's
//! config). A run, a merge back or a land that changes one says so in its
//! result, and the review view flags it, so the user reads it before their
//! tools do.
//!
//! Paths are compared without regard to case: on the file systems of macOS
//! and Windows, `.VSCode/Tasks.json` is the file VS Code reads.

use std::path::Path;

use git2::{Delta, DiffOptions, Oid, Repository};
use serde::{Deserialize, Serialize};

/// Which kind of program-running file a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SensitiveKind {
    /// The repository's `slipway.toml`.
    RepositoryConfig,
    /// A file under the folder `core.hooksPath` names.
    GitHooks,
    /// A file an editor reads or runs when it opens the folder.
    EditorConfig,
    /// A file a shell tool runs when a shell enters the folder.
    ShellEnvironment,
}

/// Why a path matters, for people and for machines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sensitivity {
    /// The kind.
    pub kind: SensitiveKind,
    /// What runs it, in a sentence.
    pub why: String,
}

/// How a sensitive file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeStatus {
    /// New.
    Added,
    /// Changed content, mode or type.
    Modified,
    /// Gone.
    Deleted,
}

/// One sensitive file a change touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SensitiveChange {
    /// Its path in the repository.
    pub path: String,
    /// How it changed.
    pub status: ChangeStatus,
    /// The kind.
    pub kind: SensitiveKind,
    /// What runs it, in a sentence.
    pub why: String,
}

/// Decides which paths are sensitive in one repository (whose
/// `core.hooksPath` may name a folder inside it).
#[derive(Debug, Clone, Default)]
pub struct Classifier {
    /// The hooks folder relative to the repository root, lower case, `/`-separated.
    hooks_dir: Option<String>,
}

/// mise's config files, by their path's end.
const MISE_FILES: &[&str] = &[
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".config/mise.toml",
    ".config/mise/config.toml",
    ".mise/config.toml",
];

impl Classifier {
    /// The classifier of `repo`: its config's `core.hooksPath`, when that
    /// is a folder inside its working tree.
    pub fn for_repo(repo: &Repository) -> Classifier {
        let hooks_dir = repo
            .config()
            .ok()
            .and_then(|c| c.get_path("core.hooksPath").ok())
            .and_then(|path| {
                let inside = match repo.workdir() {
                    Some(root) if path.is_absolute() => {
                        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
                        let path = path.canonicalize().unwrap_or(path);
                        path.strip_prefix(&root).ok()?.to_path_buf()
                    }
                    Some(_) => path,
                    None => return None,
                };
                normalised(&inside)
            });
        Classifier { hooks_dir }
    }

    /// Why `path` (relative to the repository root) makes programs run, if it does.
    pub fn classify(&self, path: &str) -> Option<Sensitivity> {
        let lower = path.to_lowercase();
        let lower = lower.trim_matches('/');
        let name = lower.rsplit('/').next().unwrap_or(lower);
        let says = |kind, why: &str| {
            Some(Sensitivity {
                kind,
                why: why.to_owned(),
            })
        };
        if lower == crate::workspace::REPO_FILE_NAME {
            return says(
                SensitiveKind::RepositoryConfig,
                "slipway's repository config: its host hooks run on your machine and its defaults choose the sandbox; slipway uses it only once you trust the new content",
            );
        }
        if let Some(hooks) = &self.hooks_dir {
            if lower == hooks || lower.starts_with(&format!("{hooks}/")) {
                return says(
                    SensitiveKind::GitHooks,
                    &format!(
                        "in {hooks}, the folder your core.hooksPath names: git runs these hooks on your commits, merges and checkouts"
                    ),
                );
            }
            if hooks.starts_with(&format!("{lower}/")) {
                return says(
                    SensitiveKind::GitHooks,
                    &format!(
                        "stands where your core.hooksPath ({hooks}) leads: git would take its hooks from what this is"
                    ),
                );
            }
        }
        let parent = lower.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        let in_vscode = parent == ".vscode" || parent.ends_with("/.vscode");
        match name {
            "tasks.json" if in_vscode => says(
                SensitiveKind::EditorConfig,
                "VS Code tasks: a task with runOn: folderOpen runs when the folder opens",
            ),
            "settings.json" if in_vscode => says(
                SensitiveKind::EditorConfig,
                "VS Code settings: they can name programs VS Code and its extensions run (a shell, a formatter, an interpreter)",
            ),
            "launch.json" if in_vscode => says(
                SensitiveKind::EditorConfig,
                "VS Code launch configurations: programs the debugger starts",
            ),
            ".vscode" => says(
                SensitiveKind::EditorConfig,
                "a .vscode that is not a folder (a symlink, say): VS Code would read its tasks and settings from where it leads",
            ),
            ".nvim.lua" | ".nvimrc" | ".exrc" => says(
                SensitiveKind::EditorConfig,
                "Neovim (and Vim) run it when they start in this folder with 'exrc' set",
            ),
            ".lazy.lua" => says(
                SensitiveKind::EditorConfig,
                "lazy.nvim loads it as plugin code when Neovim starts in this folder",
            ),
            ".envrc" => says(
                SensitiveKind::ShellEnvironment,
                "direnv runs it when a shell enters the folder",
            ),
            _ if name.ends_with(".code-workspace") => says(
                SensitiveKind::EditorConfig,
                "a VS Code workspace file: its settings and tasks apply as .vscode's do",
            ),
            _ if MISE_FILES
                .iter()
                .any(|m| lower == *m || lower.ends_with(&format!("/{m}"))) =>
            {
                says(
                    SensitiveKind::ShellEnvironment,
                    "mise config: its hooks, tasks and env templates run when a shell enters the folder",
                )
            }
            _ => None,
        }
    }
}

/// A relative path as the classifier compares it: lower case, `/`-separated,
/// `.` dropped; `None` when it leaves the root.
fn normalised(path: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::Normal(n) => parts.push(n.to_string_lossy().to_lowercase()),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The sensitive files that differ between `old_tree` (none: an empty tree)
/// and `new_tree` in `repo`, sorted by path.
pub fn sensitive_changes(
    repo: &Repository,
    old_tree: Option<Oid>,
    new_tree: Oid,
) -> Result<Vec<SensitiveChange>, git2::Error> {
    let classifier = Classifier::for_repo(repo);
    let old = old_tree.map(|id| repo.find_tree(id)).transpose()?;
    let new = repo.find_tree(new_tree)?;
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let diff = repo.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut opts))?;
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let status = match delta.status() {
            Delta::Added => ChangeStatus::Added,
            Delta::Deleted => ChangeStatus::Deleted,
            _ => ChangeStatus::Modified,
        };
        let file = match status {
            ChangeStatus::Deleted => delta.old_file(),
            _ => delta.new_file(),
        };
        let Some(path) = file.path().map(|p| p.to_string_lossy().into_owned()) else {
            continue;
        };
        let Some(mut found) = classifier.classify(&path) else {
            continue;
        };
        if status != ChangeStatus::Deleted && runs_on_folder_open(repo, &path, file.id()) {
            found.why =
                "VS Code tasks, one of them with runOn: folderOpen: it runs as soon as the folder opens"
                    .to_owned();
        }
        out.push(SensitiveChange {
            path,
            status,
            kind: found.kind,
            why: found.why,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Whether `path` is a VS Code tasks file whose blob names `folderOpen`.
fn runs_on_folder_open(repo: &Repository, path: &str, blob: Oid) -> bool {
    path.to_lowercase().ends_with("tasks.json")
        && repo
            .find_blob(blob)
            .is_ok_and(|b| b.content().windows(10).any(|w| w == b"folderOpen"))
}

/// The sensitive files the commits `commits` (oldest first, as a run's
/// import lists them) change: from the oldest one's parent to the newest.
pub fn of_commits(
    repo: &Repository,
    commits: &[String],
) -> Result<Vec<SensitiveChange>, git2::Error> {
    let (Some(first), Some(last)) = (commits.first(), commits.last()) else {
        return Ok(Vec::new());
    };
    let first = repo.find_commit(Oid::from_str(first)?)?;
    let base = match first.parent_ids().next() {
        Some(parent) => Some(repo.find_commit(parent)?.tree_id()),
        None => None,
    };
    let tip = repo.find_commit(Oid::from_str(last)?)?.tree_id();
    sensitive_changes(repo, base, tip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_editors_shells_and_slipway_run() {
        let c = Classifier {
            hooks_dir: Some(".githooks".into()),
        };
        let kind = |p: &str| c.classify(p).map(|s| s.kind);
        use SensitiveKind::*;
        assert_eq!(kind("slipway.toml"), Some(RepositoryConfig));
        assert_eq!(kind("SLIPWAY.TOML"), Some(RepositoryConfig));
        assert_eq!(kind("sub/slipway.toml"), None, "only the root's is read");
        assert_eq!(kind(".githooks/pre-commit"), Some(GitHooks));
        assert_eq!(kind(".GitHooks/post-merge"), Some(GitHooks));
        assert_eq!(kind(".githooks"), Some(GitHooks), "the folder as a symlink");
        assert_eq!(kind(".vscode/tasks.json"), Some(EditorConfig));
        assert_eq!(kind("app/.VSCode/Tasks.json"), Some(EditorConfig));
        assert_eq!(kind(".vscode/settings.json"), Some(EditorConfig));
        assert_eq!(kind(".vscode"), Some(EditorConfig));
        assert_eq!(kind("a.code-workspace"), Some(EditorConfig));
        assert_eq!(kind("docs/.nvim.lua"), Some(EditorConfig));
        assert_eq!(kind(".exrc"), Some(EditorConfig));
        assert_eq!(kind(".nvimrc"), Some(EditorConfig));
        assert_eq!(kind(".envrc"), Some(ShellEnvironment));
        assert_eq!(kind("svc/.config/mise.toml"), Some(ShellEnvironment));
        assert_eq!(kind("src/tasks.json"), None);
        assert_eq!(kind("README.md"), None);
        assert_eq!(kind("githooks/pre-commit"), None);
    }

    #[test]
    fn a_hooks_path_outside_the_checkout_names_no_path_in_it() {
        assert_eq!(normalised(Path::new("../hooks")), None);
        assert_eq!(
            normalised(Path::new("./.githooks/")),
            Some(".githooks".into())
        );
    }
}
