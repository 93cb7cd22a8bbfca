//! Branch listing: local and remote-tracking branches with what a picker shows.

use std::collections::HashMap;

use git2::{Oid, Repository};
use serde::Serialize;

use super::pack_commits::PackCommits;
use super::policy::default_branch_ref;

/// Whether a branch is local or remote-tracking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BranchKind {
    /// `refs/heads/*`.
    Local,
    /// `refs/remotes/*`.
    Remote,
}

/// One branch as a picker shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchInfo {
    /// Short name: `feature/x` or `origin/feature/x`.
    pub name: String,
    /// Local or remote-tracking.
    pub kind: BranchKind,
    /// The remote of a remote-tracking branch.
    pub remote: Option<String>,
    /// The commit id of the tip.
    pub commit: String,
    /// First line of the tip's message, made safe to show ([`crate::shown::line`]).
    pub subject: String,
    /// Committer time of the tip, seconds since the epoch.
    pub time: i64,
    /// The host's current branch.
    pub is_head: bool,
    /// The branch the `default` policy resolves to.
    pub is_default: bool,
    /// The upstream of a local branch, short form (`origin/main`).
    pub upstream: Option<String>,
    /// Commits the branch has that its upstream lacks (only when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<usize>,
    /// Commits the upstream has that the branch lacks (only when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<usize>,
}

/// Fills in `ahead` and `behind` of each local branch that has an upstream.
/// A walk of history per branch, so only when a picker asks for it: the plain
/// listing stays as fast as it is.
pub fn add_ahead_behind(repo: &Repository, list: &mut [BranchInfo]) {
    let tips: HashMap<(BranchKind, String), Oid> = list
        .iter()
        .filter_map(|b| Some(((b.kind, b.name.clone()), Oid::from_str(&b.commit).ok()?)))
        .collect();
    for branch in list.iter_mut().filter(|b| b.kind == BranchKind::Local) {
        let Some(upstream) = &branch.upstream else {
            continue;
        };
        let theirs = tips
            .get(&(BranchKind::Remote, upstream.clone()))
            .or_else(|| tips.get(&(BranchKind::Local, upstream.clone())));
        let (Some(theirs), Ok(ours)) = (theirs, Oid::from_str(&branch.commit)) else {
            continue;
        };
        if let Ok((ahead, behind)) = repo.graph_ahead_behind(ours, *theirs) {
            branch.ahead = Some(ahead);
            branch.behind = Some(behind);
        }
    }
}

/// Lists local branches (sorted) and then remote-tracking branches (sorted),
/// skipping `<remote>/HEAD`.
pub fn list_branches(repo: &Repository) -> Result<Vec<BranchInfo>, git2::Error> {
    let head_target = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned));
    let default_ref = default_branch_ref(repo).ok();
    let (specs, upstreams) = match super::branch_config::read(repo.commondir()) {
        Some(config) => {
            let specs = parse_specs(config.fetch.iter().flat_map(|(remote, specs)| {
                specs.iter().map(move |s| (remote.as_str(), s.as_str()))
            }));
            let pairs = config
                .upstreams
                .into_iter()
                .filter_map(|(branch, (remote, merge))| Some((branch, remote?, merge?)));
            let upstreams = map_upstreams(pairs, &specs);
            (specs, upstreams)
        }
        None => {
            let specs = fetch_specs(repo)?;
            let upstreams = upstream_map(repo, &specs)?;
            (specs, upstreams)
        }
    };

    struct Found {
        full: String,
        kind: BranchKind,
        oid: Oid,
    }
    let found: Vec<Found> = match read_branch_refs(repo.commondir()) {
        Some(refs) => refs
            .into_iter()
            .filter_map(|(full, oid)| {
                let kind = branch_kind(&full)?;
                Some(Found { full, kind, oid })
            })
            .collect(),
        None => {
            let mut found = Vec::new();
            for reference in repo.references()? {
                let reference = reference?;
                let Some(full) = reference.name().ok() else {
                    continue;
                };
                let Some(kind) = branch_kind(full) else {
                    continue;
                };
                // Branches are almost always direct refs; resolving each one would
                // look it up again in the ref store.
                let oid = match reference.target() {
                    Some(oid) => oid,
                    None => match reference.resolve().ok().and_then(|r| r.target()) {
                        Some(oid) => oid,
                        None => continue,
                    },
                };
                found.push(Found {
                    full: full.to_owned(),
                    kind,
                    oid,
                });
            }
            found
        }
    };
    let mut oids: Vec<Oid> = found.iter().map(|f| f.oid).collect();
    oids.sort_unstable();
    oids.dedup();
    let commits = read_commits(repo, &oids);

    let mut local = Vec::new();
    let mut remote = Vec::new();
    for f in found {
        let Some((subject, time)) = commits.get(&f.oid).cloned() else {
            continue;
        };
        let short = super::policy::short_ref(&f.full);
        let info = BranchInfo {
            name: short.to_owned(),
            kind: f.kind,
            remote: match f.kind {
                BranchKind::Remote => specs
                    .iter()
                    .find(|spec| spec.owns(&f.full))
                    .map(|spec| spec.remote.clone())
                    .or_else(|| short.split('/').next().map(str::to_owned)),
                BranchKind::Local => None,
            },
            commit: f.oid.to_string(),
            subject,
            time,
            is_head: head_target.as_deref() == Some(f.full.as_str()),
            is_default: default_ref.as_deref() == Some(f.full.as_str()),
            upstream: match f.kind {
                BranchKind::Local => upstreams.get(short).cloned(),
                BranchKind::Remote => None,
            },
            ahead: None,
            behind: None,
        };
        match f.kind {
            BranchKind::Local => local.push(info),
            BranchKind::Remote => remote.push(info),
        }
    }
    local.sort_by(|a, b| a.name.cmp(&b.name));
    remote.sort_by(|a, b| a.name.cmp(&b.name));
    local.extend(remote);
    Ok(local)
}

/// Local or remote-tracking, for the refs a listing shows (`<remote>/HEAD` is not one).
fn branch_kind(full: &str) -> Option<BranchKind> {
    if full.starts_with("refs/heads/") {
        Some(BranchKind::Local)
    } else if full.starts_with("refs/remotes/") && !full.ends_with("/HEAD") {
        Some(BranchKind::Remote)
    } else {
        None
    }
}

/// Every `refs/heads/*` and `refs/remotes/*` ref with its commit, read straight
/// from the ref files (loose refs win over `packed-refs`), which is much
/// cheaper than libgit2's ref iterator on thousands of refs. `None` when the
/// repository keeps refs in a way this does not read (reftable, a symbolic
/// branch ref, anything unparsable): the caller then asks libgit2.
fn read_branch_refs(common_dir: &std::path::Path) -> Option<Vec<(String, Oid)>> {
    if common_dir.join("reftable").exists() {
        return None;
    }
    let mut refs: std::collections::BTreeMap<String, Oid> = std::collections::BTreeMap::new();
    match std::fs::read_to_string(common_dir.join("packed-refs")) {
        Ok(text) => {
            for line in text.lines() {
                if line.starts_with('#') || line.starts_with('^') || line.is_empty() {
                    continue;
                }
                let (sha, name) = line.split_once(' ')?;
                if name.starts_with("refs/heads/") || name.starts_with("refs/remotes/") {
                    refs.insert(name.to_owned(), Oid::from_str(sha).ok()?);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    for top in ["refs/heads", "refs/remotes"] {
        let mut stack = vec![common_dir.join(top)];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(_) => return None,
            };
            for entry in entries {
                let entry = entry.ok()?;
                let path = entry.path();
                let file_type = entry.file_type().ok()?;
                if file_type.is_dir() {
                    stack.push(path);
                    continue;
                }
                let name = path.strip_prefix(common_dir).ok()?.to_str()?.to_owned();
                if name.ends_with(".lock") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).ok()?;
                let text = text.trim();
                if let Some(target) = text.strip_prefix("ref: ") {
                    // `origin/HEAD` is not listed; any other symbolic branch
                    // ref is left to libgit2.
                    if name.ends_with("/HEAD") && target.starts_with("refs/") {
                        continue;
                    }
                    return None;
                }
                refs.insert(name, Oid::from_str(text).ok()?);
            }
        }
    }
    Some(refs.into_iter().collect())
}

/// Subject and committer time of each commit: straight from the packs where
/// they are stored plainly (large sets on two threads), through libgit2 for
/// the rest (loose objects, deltified entries, alternates, anything unusual).
fn read_commits(repo: &Repository, oids: &[Oid]) -> HashMap<Oid, (String, i64)> {
    const PARALLEL_FROM: usize = 1024;
    let packs = PackCommits::open(&repo.commondir().join("objects"));
    let read = |oids: &[Oid]| {
        let mut reader = packs.reader();
        oids.iter()
            .map(|oid| (*oid, reader.summary(oid)))
            .collect::<Vec<_>>()
    };
    let found = if oids.len() < PARALLEL_FROM {
        read(oids)
    } else {
        let (mine, theirs) = oids.split_at(oids.len() / 2);
        std::thread::scope(|scope| {
            let helper = scope.spawn(|| read(theirs));
            let mut found = read(mine);
            match helper.join() {
                Ok(rest) => found.extend(rest),
                Err(_) => found.extend(read(theirs)),
            }
            found
        })
    };
    let mut out = HashMap::with_capacity(oids.len());
    for (oid, summary) in found {
        let summary = summary.or_else(|| {
            let commit = repo.find_commit(oid).ok()?;
            let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or(b""));
            Some((subject.into_owned(), commit.time().seconds()))
        });
        if let Some(summary) = summary {
            // A subject is shown to a person as it is listed (editors too).
            out.insert(oid, (crate::shown::owned_line(summary.0), summary.1));
        }
    }
    out
}

/// The upstream of a local branch as a full ref (remote-tracking, or local for
/// `remote = .`), mapped through the remote's fetch refspecs as git does.
pub fn upstream_ref(repo: &Repository, branch: &str) -> Option<String> {
    let name = repo
        .branch_upstream_name(&format!("refs/heads/{branch}"))
        .ok()?;
    name.as_str().ok().map(str::to_owned)
}

/// One fetch refspec of a remote: `src` on the remote maps to `dst` here.
#[derive(Debug, Clone)]
struct FetchSpec {
    remote: String,
    src: String,
    dst: String,
}

impl FetchSpec {
    /// Maps a remote ref (`refs/heads/x`) to the local tracking ref, if this spec covers it.
    fn to_local(&self, remote_ref: &str) -> Option<String> {
        transform(&self.src, &self.dst, remote_ref)
    }

    /// Whether `local_ref` is a tracking ref written by this spec.
    fn owns(&self, local_ref: &str) -> bool {
        transform(&self.dst, &self.src, local_ref).is_some()
    }
}

/// Applies a one-`*` refspec pattern: `refs/heads/*` → `refs/remotes/o/*`.
fn transform(from: &str, to: &str, name: &str) -> Option<String> {
    match from.split_once('*') {
        None => (from == name).then(|| to.to_owned()),
        Some((prefix, suffix)) => {
            let middle = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
            let (to_prefix, to_suffix) = to.split_once('*')?;
            Some(format!("{to_prefix}{middle}{to_suffix}"))
        }
    }
}

/// Fetch refspecs as `(remote, spec)` pairs, negative ones left out.
fn parse_specs<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<FetchSpec> {
    let mut out = Vec::new();
    for (remote, spec) in pairs {
        let spec = spec.trim_start_matches('+');
        if spec.starts_with('^') {
            continue;
        }
        if let Some((src, dst)) = spec.split_once(':') {
            out.push(FetchSpec {
                remote: remote.to_owned(),
                src: src.to_owned(),
                dst: dst.to_owned(),
            });
        }
    }
    out
}

/// Every remote's fetch refspecs, through libgit2.
fn fetch_specs(repo: &Repository) -> Result<Vec<FetchSpec>, git2::Error> {
    let mut pairs = Vec::new();
    for name in repo.remotes()?.iter().filter_map(|r| r.ok().flatten()) {
        let Ok(remote) = repo.find_remote(name) else {
            continue;
        };
        for spec in remote
            .fetch_refspecs()?
            .iter()
            .filter_map(|r| r.ok().flatten())
        {
            pairs.push((name.to_owned(), spec.to_owned()));
        }
    }
    Ok(parse_specs(
        pairs.iter().map(|(r, s)| (r.as_str(), s.as_str())),
    ))
}

/// Each branch's upstream as a short ref, from `(branch, remote, merge)`:
/// through the remote's fetch refspecs as git maps it, or a local branch for
/// `remote = .`.
fn map_upstreams(
    pairs: impl Iterator<Item = (String, String, String)>,
    specs: &[FetchSpec],
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (branch, remote, merge) in pairs {
        let upstream = if remote == "." {
            merge.strip_prefix("refs/heads/").map(str::to_owned)
        } else {
            specs
                .iter()
                .filter(|spec| spec.remote == remote)
                .find_map(|spec| spec.to_local(&merge))
                .map(|full| super::policy::short_ref(&full).to_owned())
        };
        if let Some(upstream) = upstream {
            out.insert(branch, upstream);
        }
    }
    out
}

/// Reads every `branch.<name>.remote`/`.merge` pair in one pass over the config.
fn upstream_map(
    repo: &Repository,
    specs: &[FetchSpec],
) -> Result<HashMap<String, String>, git2::Error> {
    let config = repo.config()?.snapshot()?;
    let mut remotes: HashMap<String, String> = HashMap::new();
    let mut merges: HashMap<String, String> = HashMap::new();
    let entries = config.entries(Some(r"^branch\..*\.(remote|merge)$"))?;
    entries.for_each(|entry| {
        let (Some(name), Some(value)) = (entry.name().ok(), entry.value().ok()) else {
            return;
        };
        let Some(rest) = name.strip_prefix("branch.") else {
            return;
        };
        if let Some(branch) = rest.strip_suffix(".remote") {
            remotes.insert(branch.to_owned(), value.to_owned());
        } else if let Some(branch) = rest.strip_suffix(".merge") {
            merges.insert(branch.to_owned(), value.to_owned());
        }
    })?;
    let pairs = merges.into_iter().filter_map(|(branch, merge)| {
        let remote = remotes.get(&branch)?.clone();
        Some((branch, remote, merge))
    });
    Ok(map_upstreams(pairs, specs))
}
