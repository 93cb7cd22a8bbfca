//! Git bundles (format v2) without the git CLI: a header naming refs, then a
//! pack. They carry commits into and out of isolated sandboxes with their SHAs.

use std::io::Write;
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
    let mut rest = bytes;
    let mut take_line = || -> Option<&[u8]> {
        let end = rest.iter().position(|&b| b == b'\n')?;
        let line = &rest[..end];
        rest = &rest[end + 1..];
        Some(line)
    };
    let first = take_line().ok_or(BundleError::BadHeader)?;
    let v3 = match first {
        b"# v2 git bundle" => false,
        b"# v3 git bundle" => true,
        _ => return Err(BundleError::BadHeader),
    };
    let mut refs = Vec::new();
    loop {
        let line = take_line().ok_or(BundleError::BadHeader)?;
        if line.is_empty() {
            break;
        }
        if line.starts_with(b"-") || (v3 && line.starts_with(b"@")) {
            continue;
        }
        let text = std::str::from_utf8(line).map_err(|_| BundleError::BadHeader)?;
        let (sha, name) = text.split_once(' ').ok_or(BundleError::BadHeader)?;
        refs.push((
            Oid::from_str(sha).map_err(|_| BundleError::BadHeader)?,
            name.to_owned(),
        ));
    }
    if !rest.is_empty() {
        let odb = repo.odb()?;
        let mut writer = odb.packwriter()?;
        writer.write_all(rest)?;
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

/// Where commits that came back in a bundle went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// The bundle's tip for the branch, when it named the branch.
    pub tip: Option<Oid>,
    /// Set when the tip was not a fast-forward of `base`: the commits were
    /// kept on this side branch and the branch did not move.
    pub diverged_branch: Option<String>,
}

/// Imports a bundle's commits into the repository at `repo_dir` and, when the
/// bundle's `branch` is a fast-forward of `base` (what the other side started
/// from, still the branch's tip here), checks the new tip out in the clean
/// checkout at `worktree` and moves the branch. Otherwise the commits are kept
/// on a side branch and nothing else changes.
pub fn apply(
    repo_dir: &Path,
    worktree: &Path,
    branch: &str,
    base: Option<Oid>,
    bytes: &[u8],
) -> Result<Applied, StepError> {
    let repo = step("cannot open the repository", Repository::open(repo_dir))?;
    let refs = step("cannot import the commits", import(&repo, bytes))?;
    let refname = format!("refs/heads/{branch}");
    let Some((tip, _)) = refs.iter().find(|(_, name)| *name == refname) else {
        return Ok(Applied::default());
    };
    let current = repo.refname_to_id(&refname).ok();
    let fast_forward = match current {
        None => true,
        Some(c) => c == *tip || repo.graph_descendant_of(*tip, c).unwrap_or(false),
    };
    if !(fast_forward && current == base) {
        let side = format!("{branch}-isolated-{}", &tip.to_string()[..8]);
        step(
            "cannot keep the diverged commits",
            repo.reference(
                &format!("refs/heads/{side}"),
                *tip,
                false,
                "slipway: diverged isolated work",
            ),
        )?;
        return Ok(Applied {
            tip: Some(*tip),
            diverged_branch: Some(side),
        });
    }
    let wt = step("cannot open the worktree", Repository::open(worktree))?;
    let commit = step("cannot read the new tip", wt.find_commit(*tip))?;
    // The worktree is as the other side started (clean apart from what was
    // seeded); bring its files and index to the new tip, then move the branch.
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    step(
        "cannot update the worktree",
        wt.checkout_tree(commit.as_object(), Some(&mut checkout)),
    )?;
    step(
        "cannot move the branch",
        repo.reference(
            &refname,
            *tip,
            true,
            "slipway: commits from the isolated sandbox",
        ),
    )?;
    Ok(Applied {
        tip: Some(*tip),
        diverged_branch: None,
    })
}
