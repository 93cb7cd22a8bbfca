//! Git bundles (format v2) without the git CLI: a header naming refs, then a
//! pack. They carry commits into and out of isolated sandboxes with their SHAs.

use std::io::BufRead;
use std::path::Path;

use git2::{Oid, Repository};

/// A bundle that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// Not a v2/v3 bundle header.
    #[error("not a git bundle (bad header)")]
    BadHeader,
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// Writing the pack failed.
    #[error("cannot store the bundle's objects: {0}")]
    Io(#[from] std::io::Error),
}

/// A bundle of `refname` with every object its history needs, minus what
/// `exclude` (a commit the receiver has) already reaches.
pub fn create(
    repo: &Repository,
    refname: &str,
    exclude: Option<Oid>,
) -> Result<Vec<u8>, git2::Error> {
    let tip = repo.refname_to_id(refname)?;
    create_at(repo, tip, refname, exclude)
}

/// A bundle naming `tip` as `refname` (the ref need not exist in `repo`).
pub fn create_at(
    repo: &Repository,
    tip: Oid,
    refname: &str,
    exclude: Option<Oid>,
) -> Result<Vec<u8>, git2::Error> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    let mut header = String::from("# v2 git bundle\n");
    if let Some(base) = exclude {
        walk.hide(base)?;
        header.push_str(&format!("-{base}\n"));
    }
    header.push_str(&format!("{tip} {refname}\n\n"));
    let mut builder = repo.packbuilder()?;
    builder.insert_walk(&mut walk)?;
    let mut pack = git2::Buf::new();
    builder.write_buf(&mut pack)?;
    let mut out = header.into_bytes();
    out.extend_from_slice(&pack);
    Ok(out)
}

/// Stores a bundle's objects in `repo` and returns the refs it names (no ref is written).
pub fn import(repo: &Repository, bytes: &[u8]) -> Result<Vec<(Oid, String)>, BundleError> {
    import_from(repo, bytes)
}

/// [`import`] from a bundle file, streamed: the pack never sits in memory.
pub fn import_file(repo: &Repository, path: &Path) -> Result<Vec<(Oid, String)>, BundleError> {
    let file = std::fs::File::open(path)?;
    import_from(repo, std::io::BufReader::with_capacity(1 << 16, file))
}

fn import_from(
    repo: &Repository,
    mut reader: impl std::io::BufRead,
) -> Result<Vec<(Oid, String)>, BundleError> {
    // Header lines are short; a "line" this long is not a bundle.
    const LINE_LIMIT: u64 = 64 << 10;
    fn take_line(reader: &mut impl std::io::BufRead) -> Result<Vec<u8>, BundleError> {
        let mut line = Vec::new();
        std::io::Read::take(reader, LINE_LIMIT).read_until(b'\n', &mut line)?;
        if line.pop() != Some(b'\n') {
            return Err(BundleError::BadHeader);
        }
        Ok(line)
    }
    let first = take_line(&mut reader)?;
    let v3 = match first.as_slice() {
        b"# v2 git bundle" => false,
        b"# v3 git bundle" => true,
        _ => return Err(BundleError::BadHeader),
    };
    let mut refs = Vec::new();
    loop {
        let line = take_line(&mut reader)?;
        if line.is_empty() {
            break;
        }
        if line.starts_with(b"-") || (v3 && line.starts_with(b"@")) {
            continue;
        }
        let text = std::str::from_utf8(&line).map_err(|_| BundleError::BadHeader)?;
        let (sha, name) = text.split_once(' ').ok_or(BundleError::BadHeader)?;
        refs.push((
            Oid::from_str(sha).map_err(|_| BundleError::BadHeader)?,
            name.to_owned(),
        ));
    }
    if !reader.fill_buf()?.is_empty() {
        let odb = repo.odb()?;
        let mut writer = odb.packwriter()?;
        std::io::copy(&mut reader, &mut writer)?;
        writer.commit()?;
    }
    Ok(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_commits(dir: &std::path::Path, n: usize) -> Repository {
        let repo = Repository::init(dir).expect("init");
        let sig = git2::Signature::now("t", "t@example.invalid").expect("sig");
        let mut parent: Option<Oid> = None;
        for i in 0..n {
            let blob = repo
                .blob(format!("content {i}\n").as_bytes())
                .expect("blob");
            let mut tb = repo.treebuilder(None).expect("tb");
            tb.insert("f.txt", blob, 0o100644).expect("insert");
            let tree = repo
                .find_tree(tb.write().expect("tree"))
                .expect("find tree");
            let parents: Vec<git2::Commit<'_>> = parent
                .iter()
                .map(|p| repo.find_commit(*p).expect("parent"))
                .collect();
            let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
            let id = repo
                .commit(
                    Some("refs/heads/main"),
                    &sig,
                    &sig,
                    &format!("c{i}"),
                    &tree,
                    &refs,
                )
                .expect("commit");
            parent = Some(id);
        }
        repo
    }

    #[test]
    fn a_bundle_carries_commits_with_their_ids() {
        let a = tempfile::tempdir().expect("tmp");
        let b = tempfile::tempdir().expect("tmp");
        let source = repo_with_commits(a.path(), 3);
        let tip = source.refname_to_id("refs/heads/main").expect("tip");
        let bytes = create(&source, "refs/heads/main", None).expect("bundle");
        let target = Repository::init(b.path()).expect("init");
        let refs = import(&target, &bytes).expect("import");
        assert_eq!(refs, vec![(tip, "refs/heads/main".to_owned())]);
        let commit = target.find_commit(tip).expect("commit arrived");
        assert_eq!(commit.summary().ok().flatten(), Some("c2"));
        assert_eq!(
            commit.parent(0).expect("parent").summary().ok().flatten(),
            Some("c1")
        );
    }

    #[test]
    fn garbage_is_not_a_bundle() {
        let a = tempfile::tempdir().expect("tmp");
        let repo = Repository::init(a.path()).expect("init");
        assert!(matches!(
            import(&repo, b"hello\n"),
            Err(BundleError::BadHeader)
        ));
    }
}

/// A step of moving a branch through a bundle failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct StepError {
    /// What was being done, for people.
    pub step: &'static str,
    /// Why it failed.
    #[source]
    pub source: BundleError,
}

fn step<T, E: Into<BundleError>>(step: &'static str, r: Result<T, E>) -> Result<T, StepError> {
    r.map_err(|e| StepError {
        step,
        source: e.into(),
    })
}

/// A bundle of local branch `branch` of the checkout at `worktree`, carrying
/// only what is new since `have` when the checkout holds that commit; with
/// the branch's tip (the base the receiver starts from).
pub fn of_branch(
    worktree: &Path,
    branch: &str,
    have: Option<Oid>,
) -> Result<(Vec<u8>, Option<Oid>), StepError> {
    let repo = step("cannot open the worktree", Repository::open(worktree))?;
    let refname = format!("refs/heads/{branch}");
    let tip = repo.refname_to_id(&refname).ok();
    let have = have.filter(|h| repo.find_commit(*h).is_ok());
    let bytes = step("cannot bundle the branch", create(&repo, &refname, have))?;
    Ok((bytes, tip))
}
