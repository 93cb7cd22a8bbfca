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
    /// A host process in a worktree: the worktree's `.git` file points at
    /// the private dir for the run's length, so git the agent runs anywhere
    /// else (a clone in /tmp, `git init` in a subfolder) is its own.
    GitFile,
    /// A host process in the host checkout (`head`), whose `.git` is the
    /// user's own folder: `GIT_DIR`/`GIT_WORK_TREE` in its environment.
    Environment,
    /// A container: bind mounts (slot `n` of the container's `/slipway/n`).
    Mounts { slot: usize },
}

/// What a run's import journal names its private dir and checkout by.
#[derive(Debug, Clone, Copy, Default)]
pub struct JournalIds<'a> {
    /// The long-lived sandbox whose private dir the run uses, if any.
    pub sandbox: Option<&'a crate::ids::SandboxId>,
    /// The worktree the run works in (`None`: the host checkout).
    pub worktree: Option<&'a crate::ids::WorktreeId>,
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
    /// Held from before the agent starts until the branch is imported.
    journal: Option<crate::journal::Journal>,
    /// The worktree's `.git` file as it was before [`RunGit::point_checkout`].
    git_file: std::cell::RefCell<Option<Vec<u8>>>,
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
    /// Work the agent left on other branches of its private dir (or on a
    /// detached HEAD), kept on the host under `refs/slipway/kept/<run>/`.
    pub kept: Vec<KeptRef>,
}

/// A private branch of the agent's whose commits were kept on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptRef {
    /// The host ref that holds them now.
    pub name: String,
    /// The commit it points at.
    pub commit: String,
    /// The private ref it came from (`refs/heads/x`, or `HEAD` when detached).
    pub from: String,
}

/// The most private branches a run's work is kept from.
const KEPT_LIMIT: usize = 64;

/// Why the private git state could not be made or imported.
#[derive(Debug, thiserror::Error)]
pub enum RunGitError {
    /// The private dir could not be made or read.
    #[error(transparent)]
    Dir(#[from] PrivateDirError),
    /// The import was refused; the work stays in the private dir.
    #[error("{source}; the run's work stays in {}", dir.display())]
    Import { source: ImportError, dir: PathBuf },
    /// The import could not be journaled, so it did not start.
    #[error(transparent)]
    Journal(crate::journal::JournalError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

impl RunGitError {
    /// Stable machine-readable kind.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            RunGitError::Dir(_) => crate::error::ErrorKind::Io,
            RunGitError::Import { source, .. } => source.kind(),
            RunGitError::Journal(_) => crate::error::ErrorKind::Io,
            RunGitError::Git(_) => crate::error::ErrorKind::Git,
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
            Reach::Environment | Reach::GitFile => common_dir.join("objects"),
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
            journal: None,
            git_file: std::cell::RefCell::new(None),
        })
    }

    /// Journals the run before its agent starts: if the run dies, the next
    /// slipway command imports what its private git dir holds (once nothing
    /// of the run holds the branch lock `lock_branch`).
    pub fn begin_journal(
        &mut self,
        host: &HostRepo,
        run_id: &crate::ids::RunId,
        lock_branch: &str,
        owner: JournalIds<'_>,
    ) -> Result<(), RunGitError> {
        let name = format!(
            "import-{}",
            self.base
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| run_id.to_string())
        );
        let journal = crate::journal::Journal::begin(
            &host.slipway_dir(),
            &name,
            &crate::journal::Operation::Import {
                run_id: run_id.clone(),
                refname: self.refname.clone(),
                start: self.start.map(|s| s.to_string()),
                sandbox: owner.sandbox.cloned(),
                worktree: owner.worktree.cloned(),
                lock_branch: lock_branch.to_owned(),
                keep: self.keep,
                private_dir: None,
                checkout: None,
            },
        )
        .map_err(RunGitError::Journal)?;
        self.journal = Some(journal);
        Ok(())
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
            Reach::GitFile | Reach::Mounts { .. } => Vec::new(),
        }
    }

    /// Points the worktree's `.git` file at the private dir (the
    /// [`Reach::GitFile`] way), once the check's baseline is taken: from
    /// here until [`RunGit::import`] (or a recovery, after a crash) puts it
    /// back, git in the worktree works in the private dir.
    pub fn point_checkout(&self) -> std::io::Result<()> {
        if self.reach != Reach::GitFile {
            return Ok(());
        }
        let original = crate::nofollow::Dir::open(&self.checkout)
            .and_then(|d| d.read(Path::new(".git"), 4096))?;
        *self.git_file.borrow_mut() = Some(original);
        let pointer = format!("gitdir: {}\n", self.dir.path().display());
        crate::util::write_atomic(&self.checkout.join(".git"), pointer.as_bytes())
    }

    /// Puts a worktree's `.git` file back the way git made it (see
    /// [`worktree_git_file`]), whatever the run left there.
    fn restore_checkout(&self) -> std::io::Result<()> {
        if self.reach != Reach::GitFile {
            return Ok(());
        }
        match self.git_file.borrow_mut().take() {
            // Exactly the bytes it had, whatever the run left there.
            Some(original) => crate::util::write_atomic(&self.checkout.join(".git"), &original),
            None => restore_worktree_git_file(&self.checkout, &self.common_dir),
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
    pub fn import(mut self, host: &HostRepo, run_id: &str) -> Result<ImportReport, RunGitError> {
        let _turn = crate::git::queue::turn(host.common_dir());
        // The worktree is the user's again before anything is read from it.
        let restored = self.restore_checkout();
        let imported = self.bring_in(host, run_id);
        // Imported or refused, the outcome is final: nothing is left for a
        // recovery to do (a refused run's work stays in its private dir).
        if let Some(journal) = self.journal.take()
            && let Err(e) = journal.finish()
        {
            tracing::warn!("{e}");
        }
        let mut report = imported?;
        // After the branch: what it brought in needs no keeping.
        self.keep_other_work(host, run_id, &mut report);
        if let Err(e) = restored {
            report.warnings.push(format!(
                "could not put back the .git file of {} ({e}): run `slipway worktree list` to repair it",
                self.checkout.display()
            ));
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
}

impl RunGit {
    /// Brings the commits of branches the agent made or moved in its
    /// private dir (and of a detached HEAD) to the host under
    /// `refs/slipway/kept/<run>/`, each checked like the run's own branch;
    /// nothing else of the host changes. What cannot be kept is a warning.
    fn keep_other_work(&self, host: &HostRepo, run_id: &str, report: &mut ImportReport) {
        let own_tip = self.dir.tip().ok().flatten();
        let mut wanted: Vec<(String, Oid)> = report
            .refs_ignored
            .iter()
            .filter(|r| r.name.starts_with("refs/heads/"))
            .filter_map(|r| Some((r.name.clone(), Oid::from_str(r.after.as_deref()?).ok()?)))
            .collect();
        if let Ok(Some(head)) = self.dir.detached_head() {
            wanted.push(("HEAD".to_owned(), head));
        }
        // Work the run's own branch or the host held before keeping started
        // needs no keeping (what one kept ref brings in, the next still names).
        let held: Vec<bool> = wanted
            .iter()
            .map(|(_, commit)| {
                own_tip == Some(*commit)
                    || own_tip.is_some_and(|t| {
                        host.git().graph_descendant_of(t, *commit).unwrap_or(false)
                    })
                    || host.git().find_commit(*commit).is_ok()
            })
            .collect();
        for ((from, commit), held) in wanted.into_iter().zip(held).take(KEPT_LIMIT) {
            if held {
                continue;
            }
            let leaf = from.strip_prefix("refs/heads/").unwrap_or(&from);
            let name = format!("refs/slipway/kept/{run_id}/{leaf}");
            if !git2::Reference::is_valid_name(&name)
                || (from != "HEAD" && crate::git::refname::validate_branch_name(leaf).is_err())
            {
                report.warnings.push(format!(
                    "the agent's private ref {from:?} is not a name git accepts; its work was not kept"
                ));
                continue;
            }
            let kept = import::copy_objects(host.git(), &self.dir.objects(), commit)
                .map_err(|e| e.to_string())
                .and_then(|_| {
                    host.git()
                        .reference(
                            &name,
                            commit,
                            false,
                            &format!("slipway: run {run_id} kept {from}"),
                        )
                        .map_err(|e| e.to_string())
                });
            match kept {
                Ok(_) => report.kept.push(KeptRef {
                    name,
                    commit: commit.to_string(),
                    from,
                }),
                Err(e) => report.warnings.push(format!(
                    "the agent's work on {from} could not be kept ({e}); it stays in {}",
                    self.dir.path().display()
                )),
            }
        }
    }

    /// The import itself: objects, ref, index (see [`RunGit::import`]).
    fn bring_in(&self, host: &HostRepo, run_id: &str) -> Result<ImportReport, RunGitError> {
        let mut report = ImportReport {
            refs_ignored: self.dir.ignored_refs()?,
            ..ImportReport::default()
        };
        let Some(tip) = self.dir.tip()?.filter(|t| Some(*t) != self.start) else {
            return Ok(report);
        };
        let refused = |source| RunGitError::Import {
            source,
            dir: self.dir.path().to_path_buf(),
        };
        let request = ImportRequest {
            refname: &self.refname,
            tip,
            start: self.start,
            run_id,
        };
        let objects =
            import::copy_objects(host.git(), &self.dir.objects(), tip).map_err(refused)?;
        crate::testhook::point("import");
        let imported = import::land(host.git(), &request, objects).map_err(refused)?;
        crate::testhook::point("import");
        if imported.moved {
            update_checkout_index(
                &self.checkout,
                &self.refname,
                self.start,
                tip,
                Some(self.dir.path()),
                run_id,
                &mut report.warnings,
            );
            crate::testhook::point("import");
        }
        report.imported = Some(imported);
        Ok(report)
    }
}

/// The admin dir of the worktree at `checkout`: named after its folder, in
/// the repository's common dir.
fn worktree_admin(checkout: &Path, common_dir: &Path) -> Option<PathBuf> {
    Some(common_dir.join("worktrees").join(checkout.file_name()?))
}

/// Makes a worktree's `.git` file name its own admin dir again (as a
/// create writes it) when it names anything else, the run's private dir included.
pub fn restore_worktree_git_file(checkout: &Path, common_dir: &Path) -> std::io::Result<()> {
    let Some(admin) = worktree_admin(checkout, common_dir) else {
        return Ok(());
    };
    let now = crate::nofollow::Dir::open(checkout)
        .and_then(|d| d.read(Path::new(".git"), 4096))
        .unwrap_or_default();
    let named = String::from_utf8_lossy(&now)
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("gitdir:"))
        .map(|p| crate::git::canonical(Path::new(p.trim())));
    if named.as_deref() == Some(&crate::git::canonical(&admin)) {
        return Ok(());
    }
    crate::util::write_atomic(
        &checkout.join(".git"),
        &crate::git::worktrees::gitfile_text(&admin),
    )
}

/// Brings the index of `checkout` in step after `refname` moved from `start`
/// to `tip` (see [`import::update_index`]); stat data comes from the private
/// dir's index when it is a plain file there.
pub fn update_checkout_index(
    checkout: &Path,
    refname: &str,
    start: Option<Oid>,
    tip: Oid,
    private_dir: Option<&Path>,
    token: &str,
    warnings: &mut Vec<String>,
) {
    let updated = Repository::open(checkout).and_then(|repo| {
        // The checkout must still be on the branch that moved: a host that
        // switched branches meanwhile has an index of another branch.
        let on_branch = match crate::git::worktrees::head_branch(&repo) {
            Some(b) => format!("refs/heads/{b}") == refname,
            None => refname == "HEAD",
        };
        if !on_branch {
            return Ok(None);
        }
        // A symlink planted as the private index is never followed.
        let private_index = private_dir
            .filter(|d| {
                crate::nofollow::Dir::open(d)
                    .ok()
                    .and_then(|d| d.kind_of("index".as_ref()).ok().flatten())
                    == Some(crate::nofollow::Kind::File)
            })
            .map(|d| d.join("index"));
        import::update_index(&repo, start, tip, private_index.as_deref(), token).map(Some)
    });
    match updated {
        Ok(Some(_)) => {}
        Ok(None) => warnings.push(format!(
            "{} is no longer on {refname}: its index was left as it is",
            checkout.display()
        )),
        Err(e) => warnings.push(format!(
            "the run's commits are on {refname} but the index of {} could not be updated ({e}); `git status` there shows their changes as staged reverts until you run `git reset -q` (it keeps your files)",
            checkout.display()
        )),
    }
}
