//! A run's private git state on the host side: the private git dir made
//! before the agent starts, how each sandbox reaches it (environment for the
//! host sandbox, bind mounts for docker), and the import of the run's branch
//! once the agent is gone (DESIGN §2 "Sandboxes and the run's private git state").

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

use crate::git::HostRepo;
use crate::git::import::{self, ImportError, ImportRequest, Imported};
use crate::git::private_dir::{IgnoredRef, PrivateDirError, PrivateGitDir, PrivateHead};
use crate::sandbox::docker::Mount;

/// Where a run's private git dir (and the files mounted beside it) live on
/// the host while it runs.
pub fn run_base(host: &HostRepo, run_id: &str) -> PathBuf {
    host.slipway_dir().join("gitdirs").join(run_id)
}

/// Where the agent sees a private git dir and the host's objects in a container.
fn container_root(slot: usize) -> PathBuf {
    PathBuf::from(format!("/slipway/{slot}"))
}

/// How the agent reaches its private git dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A host process: `GIT_DIR`/`GIT_WORK_TREE` in its environment.
    Environment,
    /// A container: bind mounts (slot `n` of the container's `/slipway/n`).
    Mounts { slot: usize },
}

/// One checkout's private git state for a run.
#[derive(Debug)]
pub struct RunGit {
    dir: PrivateGitDir,
    /// Holds the private dir and the files mounted beside it.
    base: PathBuf,
    /// The checkout the agent works in (a worktree, or the host checkout).
    checkout: PathBuf,
    /// The repository's common git dir on the host.
    common_dir: PathBuf,
    /// The host ref the run works on, and its value at start.
    refname: String,
    start: Option<Oid>,
    /// The checkout is the host's own (the `head` strategy).
    host_checkout: bool,
    reach: Reach,
    /// A long-lived sandbox's dir is kept after the run.
    keep: bool,
}

/// What the import found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// Set when the run left commits.
    pub imported: Option<Imported>,
    /// Refs the agent changed privately other than its branch (never carried over).
    pub refs_ignored: Vec<IgnoredRef>,
    /// Things the user should know (an index that could not be updated).
    pub warnings: Vec<String>,
}

/// Why the private git state could not be made or imported.
#[derive(Debug, thiserror::Error)]
pub enum RunGitError {
    /// The private dir could not be made or read.
    #[error(transparent)]
    Dir(#[from] PrivateDirError),
    /// The import was refused; the work stays in the private dir.
    #[error("{source}; the run's work stays in {}", dir.display())]
    Import { source: ImportError, dir: PathBuf },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl RunGitError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> &'static str {
        match self {
            RunGitError::Dir(_) => "io",
            RunGitError::Import { source, .. } => source.kind(),
            RunGitError::Git(_) => "git",
        }
    }
}

impl RunGit {
    /// Makes the private git dir under `base` for a run in `checkout` (a
    /// worktree of `host`, or the host checkout itself when `host_checkout`).
    pub fn prepare(
        host: &HostRepo,
        checkout: &Path,
        base: &Path,
        host_checkout: bool,
        reach: Reach,
        keep: bool,
    ) -> Result<RunGit, RunGitError> {
        let repo = Repository::open(checkout)?;
        let (head, refname, start) = match crate::git::worktrees::head_branch(&repo) {
            Some(branch) => {
                let start = crate::git::worktrees::branch_tip(&repo, &branch);
                (
                    PrivateHead::Branch(branch.clone()),
                    format!("refs/heads/{branch}"),
                    start,
                )
            }
            None => {
                let at = repo.head()?.peel_to_commit()?.id();
                (PrivateHead::Detached(at), "HEAD".to_owned(), Some(at))
            }
        };
        let common_dir = host.common_dir().to_path_buf();
        let alternates = match reach {
            Reach::Environment => common_dir.join("objects"),
            Reach::Mounts { slot } => container_root(slot).join("objects"),
        };
        let index = repo.path().join("index");
        let dir = PrivateGitDir::prepare(
            &base.join("git"),
            host.git(),
            head,
            Some(&index),
            &alternates,
        )?;
        Ok(RunGit {
            dir,
            base: base.to_path_buf(),
            checkout: checkout.to_path_buf(),
            common_dir,
            refname,
            start,
            host_checkout,
            reach,
            keep,
        })
    }

    /// The host ref the run works on (`refs/heads/<branch>`, or `HEAD`).
    pub fn refname(&self) -> &str {
        &self.refname
    }

    /// The host ref's value when the run started.
    pub fn start(&self) -> Option<Oid> {
        self.start
    }

    /// The private git dir on the host.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Environment that points a host process's git at the private dir.
    /// No `GIT_COMMON_DIR`: git would take refs from a `commondir` file the
    /// agent wrote anyway (refs ignore that variable), so setting it would
    /// only split refs from objects. A host process is no boundary; docker is.
    pub fn env(&self) -> Vec<(String, String)> {
        match self.reach {
            Reach::Environment => vec![
                ("GIT_DIR".into(), self.dir.path().display().to_string()),
                ("GIT_WORK_TREE".into(), self.checkout.display().to_string()),
            ],
            Reach::Mounts { .. } => Vec::new(),
        }
    }

    /// The binds of a docker run: the checkout read-write at its own path
    /// (or at `at`), the private dir read-write, the host's object store
    /// read-only, and the checkout's `.git` covered read-only by a file that
    /// points at the private dir. For the host checkout itself the private
    /// dir covers `.git` and an empty read-only folder covers `.slipway`.
    /// Nothing else of the host repository is mounted.
    pub fn mounts(&self, at: Option<&Path>) -> std::io::Result<Vec<Mount>> {
        let Reach::Mounts { slot } = self.reach else {
            return Ok(Vec::new());
        };
        let inside = at.unwrap_or(&self.checkout).to_path_buf();
        let root = container_root(slot);
        let mut mounts = vec![
            Mount {
                host_path: self.checkout.clone(),
                container_path: inside.clone(),
                readonly: false,
            },
            Mount {
                host_path: self.common_dir.join("objects"),
                container_path: root.join("objects"),
                readonly: true,
            },
        ];
        if self.host_checkout {
            mounts.push(Mount {
                host_path: self.dir.path().to_path_buf(),
                container_path: inside.join(".git"),
                readonly: false,
            });
            // The host checkout's `.slipway` (records, locks, other worktrees)
            // is hidden; a clone has none, and a mount point would make one.
            if self.checkout.join(".slipway").is_dir() {
                let empty = self.base.join("empty");
                std::fs::create_dir_all(&empty)?;
                mounts.push(Mount {
                    host_path: empty,
                    container_path: inside.join(".slipway"),
                    readonly: true,
                });
            }
        } else {
            mounts.push(Mount {
                host_path: self.dir.path().to_path_buf(),
                container_path: root.join("git"),
                readonly: false,
            });
            let dotgit = self.base.join("dotgit");
            crate::util::write_atomic(
                &dotgit,
                format!("gitdir: {}\n", root.join("git").display()).as_bytes(),
            )?;
            mounts.push(Mount {
                host_path: dotgit,
                container_path: inside.join(".git"),
                readonly: true,
            });
        }
        Ok(mounts)
    }

    /// Imports the run's branch into the host (call only once nothing in the
    /// sandbox can write any more) and brings the checkout's index in step
    /// when the branch moved. The private dir goes afterwards unless it
    /// belongs to a long-lived sandbox or the import failed (then it holds
    /// the only copy of the work, and the error says where).
    pub fn import(self, host: &HostRepo, run_id: &str) -> Result<ImportReport, RunGitError> {
        let mut report = ImportReport {
            refs_ignored: self.dir.ignored_refs()?,
            ..ImportReport::default()
        };
        if let Some(tip) = self.dir.tip()?
            && Some(tip) != self.start
        {
            let imported = import::import_branch(
                host.git(),
                &self.dir.objects(),
                &ImportRequest {
                    refname: &self.refname,
                    tip,
                    start: self.start,
                    run_id,
                },
            )
            .map_err(|source| RunGitError::Import {
                source,
                dir: self.dir.path().to_path_buf(),
            })?;
            if imported.moved {
                self.update_checkout_index(tip, &mut report.warnings);
            }
            report.imported = Some(imported);
        }
        if !self.keep {
            let base = self.base.clone();
            if let Err(e) = std::fs::remove_dir_all(&base)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                report.warnings.push(format!(
                    "could not remove the run's private git dir {}: {e}",
                    base.display()
                ));
            }
        }
        Ok(report)
    }

    fn update_checkout_index(&self, tip: Oid, warnings: &mut Vec<String>) {
        let updated = Repository::open(&self.checkout).and_then(|checkout| {
            // The checkout must still be on the branch that moved: a host that
            // switched branches meanwhile has an index of another branch.
            let on_branch = match crate::git::worktrees::head_branch(&checkout) {
                Some(b) => format!("refs/heads/{b}") == self.refname,
                None => self.refname == "HEAD",
            };
            if !on_branch {
                return Ok(None);
            }
            // The private index gives stat data only when it is a plain file:
            // a symlink planted there is never followed.
            let private_index = crate::nofollow::Dir::open(self.dir.path())
                .ok()
                .and_then(|d| d.kind_of("index".as_ref()).ok().flatten())
                .filter(|k| *k == crate::nofollow::Kind::File)
                .map(|_| self.dir.index());
            import::update_index(&checkout, self.start, tip, private_index.as_deref()).map(Some)
        });
        match updated {
            Ok(Some(_)) => {}
            Ok(None) => warnings.push(format!(
                "{} is no longer on {}: its index was left as it is",
                self.checkout.display(),
                self.refname
            )),
            Err(e) => warnings.push(format!(
                "the run's commits are on {} but the index of {} could not be updated ({e}); `git status` there shows their changes as staged reverts until you run `git reset -q` (it keeps your files)",
                self.refname,
                self.checkout.display()
            )),
        }
    }
}
