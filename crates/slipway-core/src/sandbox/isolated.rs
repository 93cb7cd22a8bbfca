//! The `docker-isolated` sandbox: nothing from the host is bind-mounted. Code
//! goes in as a git bundle plus the worktree's uncommitted and copied-in
//! files, uploaded through the Engine API; commits come back as a bundle (SHAs
//! preserved) and uncommitted results as files. Works against a remote engine.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt;
use git2::Oid;

use super::docker::{DockerConfig, DockerSandbox};
use super::{BoxFuture, ExecSpec, Execution, OutputEvent, Sandbox, SandboxError};
use crate::git::bundle;

/// Where things live inside the container.
const IN_DIR: &str = "/tmp/slipway-in";
/// Results are gathered in `/tmp/slipway-out-<random>`, a new folder each
/// time: a process the agent left running cannot have it ready in advance.
const OUT_PREFIX: &str = "/tmp/slipway-out-";
const WORK_ROOT: &str = "/tmp/slipway-work";

/// A docker container that sees no host path.
pub struct IsolatedSandbox {
    inner: DockerSandbox,
    host_worktree: PathBuf,
    container_worktree: PathBuf,
    branch: String,
    base: Option<Oid>,
    out_dir: String,
}

fn out_dir() -> String {
    format!("{OUT_PREFIX}{}", crate::util::random_hex(8))
}

fn other(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Other(format!("{what}: {e}"))
}

pub(crate) fn add_file(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<(), SandboxError> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(mode);
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    header.set_uid(u64::from(uid));
    header.set_gid(u64::from(gid));
    header.set_mtime(crate::util::now_secs());
    header.set_cksum();
    builder
        .append_data(&mut header, path, bytes)
        .map_err(|e| other("cannot build the upload", e))
}

/// Adds a host file or folder (recursively) under `prefix`.
pub(crate) fn add_tree(
    builder: &mut tar::Builder<Vec<u8>>,
    root: &Path,
    rel: &Path,
    prefix: &str,
) -> Result<(), SandboxError> {
    let full = root.join(rel);
    let meta = full
        .symlink_metadata()
        .map_err(|e| other("cannot read", e))?;
    let name = format!("{prefix}/{}", rel.display());
    if meta.is_dir() {
        // An explicit entry, so the folder belongs to the agent's user, not root.
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_size(0);
        header.set_mode(0o755);
        // SAFETY: getuid/getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        header.set_uid(u64::from(uid));
        header.set_gid(u64::from(gid));
        header.set_cksum();
        builder
            .append_data(&mut header, format!("{name}/"), std::io::empty())
            .map_err(|e| other("cannot build the upload", e))?;
        for entry in std::fs::read_dir(&full).map_err(|e| other("cannot read", e))? {
            let entry = entry.map_err(|e| other("cannot read", e))?;
            add_tree(builder, root, &rel.join(entry.file_name()), prefix)?;
        }
    } else if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).map_err(|e| other("cannot read", e))?;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        builder
            .append_link(&mut header, &name, target)
            .map_err(|e| other("cannot build the upload", e))?;
    } else if meta.is_file() {
        use std::os::unix::fs::PermissionsExt;
        let bytes = std::fs::read(&full).map_err(|e| other("cannot read", e))?;
        add_file(builder, &name, &bytes, meta.permissions().mode() & 0o777)?;
    }
    Ok(())
}

/// Builds the upload: the branch as a bundle, the worktree's uncommitted
/// files, the copied-in paths, and the list of deleted files.
///
/// With `have` (a commit the container already holds), the bundle carries only
/// what is new since it.
pub fn build_seed(
    worktree: &Path,
    branch: &str,
    copied: &[String],
    have: Option<Oid>,
) -> Result<(Vec<u8>, Option<Oid>), SandboxError> {
    let (bundle, base) =
        bundle::of_branch(worktree, branch, have).map_err(|e| other(e.step, e.source))?;
    let mut builder = tar::Builder::new(Vec::new());
    add_file(&mut builder, "slipway-in/repo.bundle", &bundle, 0o644)?;
    let mut deleted = String::new();
    let mut seeded = String::new();
    for path in crate::git::worktrees::changed_paths_at(worktree)
        .map_err(|e| other("cannot read the worktree status", e))?
    {
        if worktree.join(&path).symlink_metadata().is_ok() {
            add_tree(
                &mut builder,
                worktree,
                Path::new(&path),
                "slipway-in/worktree",
            )?;
            seeded.push_str(&path);
            seeded.push('\n');
        } else {
            deleted.push_str(&path);
            deleted.push('\n');
        }
    }
    for path in copied {
        if worktree.join(path).symlink_metadata().is_ok() {
            add_tree(
                &mut builder,
                worktree,
                Path::new(path),
                "slipway-in/worktree",
            )?;
        }
    }
    add_file(
        &mut builder,
        "slipway-in/deleted.txt",
        deleted.as_bytes(),
        0o644,
    )?;
    // So a seeded untracked file the agent removes is removed on the host too.
    add_file(
        &mut builder,
        "slipway-in/seeded.txt",
        seeded.as_bytes(),
        0o644,
    )?;
    let tar = builder
        .into_inner()
        .map_err(|e| other("cannot build the upload", e))?;
    Ok((tar, base))
}

impl IsolatedSandbox {
    /// Starts a container with no mounts and seeds it with `seed` (see [`build_seed`]).
    pub async fn start(
        mut config: DockerConfig,
        host_worktree: &Path,
        branch: &str,
        seed: Vec<u8>,
        base: Option<Oid>,
    ) -> Result<IsolatedSandbox, SandboxError> {
        config.mounts.clear();
        let container_worktree = container_worktree_for(host_worktree);
        config.workdir = None;
        let inner = DockerSandbox::start(config).await?;
        let sandbox = IsolatedSandbox {
            inner,
            host_worktree: host_worktree.to_path_buf(),
            container_worktree,
            branch: branch.to_owned(),
            base,
            out_dir: out_dir(),
        };
        if let Err(e) = sandbox.seed(seed).await {
            sandbox.inner.close().await;
            return Err(e);
        }
        Ok(sandbox)
    }

    /// Saves the container's whole worktree (its `.git` with every commit
    /// included) as a tar on the host, for when bringing the work back failed.
    pub async fn rescue(&self, dest: &Path) -> Result<PathBuf, SandboxError> {
        std::fs::create_dir_all(dest).map_err(|e| other("cannot write the rescue", e))?;
        let file = dest.join("worktree.tar");
        self.download(&self.container_worktree.display().to_string(), &file)
            .await?;
        Ok(file)
    }

    /// Streams the container's `path` as a tar archive into the host file
    /// `to` (written beside it, then renamed), never holding it in memory.
    async fn download(&self, path: &str, to: &Path) -> Result<(), SandboxError> {
        use tokio::io::AsyncWriteExt;
        let options = bollard::query_parameters::DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let mut stream = self
            .inner
            .docker()
            .download_from_container(self.inner.container_id(), Some(options));
        let partial = to.with_extension("partial");
        let write = |e: std::io::Error| other(&format!("cannot write {}", partial.display()), e);
        let mut file = tokio::fs::File::create(&partial).await.map_err(write)?;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| other("cannot download from the container", e))?;
            file.write_all(&chunk).await.map_err(write)?;
        }
        file.sync_all().await.map_err(write)?;
        drop(file);
        tokio::fs::rename(&partial, to).await.map_err(write)?;
        Ok(())
    }

    /// The container underneath.
    pub fn docker(&self) -> &DockerSandbox {
        &self.inner
    }

    /// Leaves the container running after this handle goes.
    pub fn keep(&self) {
        self.inner.keep();
    }

    /// The container's id.
    pub fn container_id(&self) -> &str {
        self.inner.container_id()
    }

    /// The worktree's path inside the container.
    pub fn container_worktree(&self) -> &Path {
        &self.container_worktree
    }

    /// The branch commit the container started from (what the host had).
    pub fn base(&self) -> Option<Oid> {
        self.base
    }

    /// The host worktree whose copy the container holds.
    pub fn host_worktree(&self) -> &Path {
        &self.host_worktree
    }

    /// The branch the agent works on.
    pub fn branch(&self) -> &str {
        &self.branch
    }

    /// Attaches to the container of a long-lived isolated sandbox and ships
    /// what changed since it was last synced (see [`build_seed`] with `have`).
    pub async fn attach(
        inner: DockerSandbox,
        host_worktree: &Path,
        branch: &str,
        seed: Vec<u8>,
        base: Option<Oid>,
    ) -> Result<IsolatedSandbox, SandboxError> {
        let sandbox = IsolatedSandbox {
            container_worktree: container_worktree_for(host_worktree),
            inner,
            host_worktree: host_worktree.to_path_buf(),
            branch: branch.to_owned(),
            base,
            out_dir: out_dir(),
        };
        sandbox.script(r#"rm -rf "$IN""#).await?;
        sandbox.seed(seed).await?;
        Ok(sandbox)
    }

    async fn seed(&self, tar: Vec<u8>) -> Result<(), SandboxError> {
        let options = bollard::query_parameters::UploadToContainerOptionsBuilder::default()
            .path("/tmp")
            .build();
        self.inner
            .docker()
            .upload_to_container(
                self.inner.container_id(),
                Some(options),
                bollard::body_full(tar.into()),
            )
            .await
            .map_err(|e| other("cannot upload the code into the container", e))?;
        // The same steps seed a new container and refresh a long-lived one.
        let script = r#"set -e
mkdir -p "$WT"
cd "$WT"
if [ ! -d .git ]; then git init -q; fi
git fetch -q "$IN/repo.bundle" "+refs/heads/$BRANCH:refs/slipway/incoming"
git checkout -q -f -B "$BRANCH" refs/slipway/incoming
git clean -fdq
if [ -d "$IN/worktree" ]; then cp -a "$IN/worktree/." "$WT/"; fi
while IFS= read -r f; do if [ -n "$f" ]; then rm -f -- "$f"; fi; done < "$IN/deleted.txt"
"#;
        self.script(script).await
    }

    async fn script(&self, script: &str) -> Result<(), SandboxError> {
        let spec = ExecSpec {
            argv: vec!["bash".into(), "-c".into(), script.into()],
            cwd: PathBuf::from("/tmp"),
            env: vec![
                ("WT".into(), self.container_worktree.display().to_string()),
                ("IN".into(), IN_DIR.into()),
                ("OUT".into(), self.out_dir.clone()),
                ("BRANCH".into(), self.branch.clone()),
                (
                    "BASE".into(),
                    self.base.map(|b| b.to_string()).unwrap_or_default(),
                ),
            ],
            stdin: None,
        };
        let mut exec = self.inner.exec(spec).await?;
        let mut output = String::new();
        while let Some(event) = exec.output.recv().await {
            if let OutputEvent::Line(line) = event {
                output.push_str(&line);
                output.push('\n');
            }
        }
        let code = tokio::time::timeout(Duration::from_secs(300), &mut exec.exit)
            .await
            .map_err(|_| other("sandbox set-up", "timed out"))?
            .map_err(|e| other("sandbox set-up", e))??;
        if code != 0 {
            return Err(SandboxError::Other(format!(
                "the isolated sandbox's git step failed (exit {code}): {}",
                output.trim()
            )));
        }
        Ok(())
    }

    /// Gathers the agent's work inside the container (new commits as a
    /// bundle, changed and new files, the list of deleted ones) and streams
    /// it into the host file `to` as a tar archive. Nothing is written into
    /// the host worktree here.
    pub async fn download_results(&self, to: &Path) -> Result<(), SandboxError> {
        let script = r#"set -eo pipefail
mkdir "$OUT"; mkdir "$OUT/files"
cd "$WT"
git rev-parse --git-dir >/dev/null
tip=$(git rev-parse -q --verify "refs/heads/$BRANCH" || true)
if [ -n "$tip" ] && [ "$tip" != "$BASE" ]; then
  if [ -n "$BASE" ] && git merge-base --is-ancestor "$BASE" "$tip"; then
    git bundle create -q "$OUT/repo.bundle" "$BASE..refs/heads/$BRANCH"
  else
    git bundle create -q "$OUT/repo.bundle" "refs/heads/$BRANCH"
  fi
fi
: > "$OUT/deleted.txt"
{ git ls-files -z -m -o --exclude-standard; git diff --cached --name-only -z; } | while IFS= read -r -d '' f; do
  if [ -e "$f" ] || [ -L "$f" ]; then cp -a --parents -- "$f" "$OUT/files/"; else printf '%s\n' "$f" >> "$OUT/deleted.txt"; fi
done
while IFS= read -r f; do
  if [ -n "$f" ] && ! [ -e "$f" ] && ! [ -L "$f" ]; then printf '%s\n' "$f" >> "$OUT/deleted.txt"; fi
done < "$IN/seeded.txt"
"#;
        self.script(script).await?;
        self.download(&self.out_dir, to).await
    }
}

/// The container's copy of a host worktree.
fn container_worktree_for(host_worktree: &Path) -> PathBuf {
    let name = host_worktree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "worktree".into());
    PathBuf::from(WORK_ROOT).join(name)
}

impl Sandbox for IsolatedSandbox {
    fn name(&self) -> &'static str {
        "docker-isolated"
    }

    fn exec(&self, mut spec: ExecSpec) -> BoxFuture<'_, Result<Execution, SandboxError>> {
        // Host worktree paths mean the container's copy.
        if let Ok(rel) = spec.cwd.strip_prefix(&self.host_worktree) {
            spec.cwd = self.container_worktree.join(rel);
        }
        self.inner.exec(spec)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn reaps_strays_on_close(&self) -> bool {
        true
    }
}
