//! Private clones for workspace mounts with `clone` isolation. Objects travel
//! as a libgit2-built pack in both directions, so nothing is hard-linked with
//! the host repository and no git program runs.

use std::path::Path;

use git2::{Oid, Repository, build::CheckoutBuilder};

use super::bundle::{self, BundleError};
use super::{changed_paths, commits_between};

/// Makes a fresh repository at `dir` holding local branch `branch` at `base`
/// (taken from `host`), checked out. Its `origin` is the host's `origin` URL
/// without credentials.
pub fn create(host: &Repository, dir: &Path, base: Oid, branch: &str) -> Result<(), BundleError> {
    let clone = Repository::init(dir)?;
    let refname = format!("refs/heads/{branch}");
    let pack = bundle::create_at(host, base, &refname, None)?;
    bundle::import(&clone, &pack)?;
    let commit = clone.find_commit(base)?;
    clone.branch(branch, &commit, true)?;
    clone.set_head(&refname)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    clone.checkout_head(Some(&mut checkout))?;
    if let Some(url) = super::origin_url_without_credentials(host)
        && let Err(e) = clone.remote("origin", &url)
    {
        // A clone without a remote still works; the agent just cannot fetch.
        tracing::warn!("the clone gets no origin: {e}");
    }
    Ok(())
}

/// What a private clone held at the end of a run.
#[derive(Debug, Clone)]
pub struct ClonedWork {
    /// The branch's tip in the clone.
    pub tip: Oid,
    /// Whether the host repository has that tip as the same branch (or the
    /// branch never moved, so there was nothing to bring).
    pub in_host: bool,
    /// The commits brought back, oldest first (empty when none moved).
    pub commits: Vec<String>,
    /// Whether the clone has uncommitted changes (or cannot be read).
    pub dirty: bool,
}

/// Brings local branch `branch` of the clone at `dir` back into the
/// repository at `host_root` under the same name, when it moved past `base`.
/// `None` when the clone or its branch is gone.
pub fn bring_back(
    dir: &Path,
    host_root: &Path,
    branch: &str,
    base: Option<Oid>,
) -> Option<ClonedWork> {
    let clone = Repository::open(dir).ok()?;
    let refname = format!("refs/heads/{branch}");
    let tip = clone.refname_to_id(&refname).ok()?;
    let mut work = ClonedWork {
        tip,
        in_host: base == Some(tip),
        commits: Vec::new(),
        dirty: changed_paths(&clone).map_or(true, |c| !c.is_empty()),
    };
    if base != Some(tip)
        && let (Ok(host), Ok(pack)) = (
            Repository::open(host_root),
            bundle::create(&clone, &refname, base),
        )
        && bundle::import(&host, &pack).is_ok()
        && host
            .reference(&refname, tip, false, "slipway: work from a workspace clone")
            .is_ok()
    {
        work.in_host = true;
        work.commits = commits_between(&host, base, tip)
            .map(|c| c.into_iter().map(|o| o.to_string()).collect())
            .unwrap_or_default();
    }
    Some(work)
}

/// A remote URL without `user:password@`, so no credential reaches a sandbox.
#[cfg(test)]
mod tests {
    use crate::git::strip_credentials;

    #[test]
    fn credentials_never_reach_the_clone() {
        assert_eq!(
            strip_credentials("https://user:token@example.com/r.git"),
            "https://example.com/r.git"
        );
        assert_eq!(
            strip_credentials("https://example.com/r.git"),
            "https://example.com/r.git"
        );
        assert_eq!(strip_credentials("/srv/git/r.git"), "/srv/git/r.git");
        assert_eq!(
            strip_credentials("ssh://git@example.com/r.git"),
            "ssh://example.com/r.git"
        );
        assert_eq!(
            strip_credentials("https://x:y@a@example.com/r"),
            "https://example.com/r"
        );
    }
}
