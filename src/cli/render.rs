//! Text for people.

use std::fmt::Write;

use super::next;

use slipway_core::actions::Action;
use slipway_core::git::branches::{BranchInfo, BranchKind};
use slipway_core::git::merge::MergeOutcome;
use slipway_core::run::{RunResult, RunStatus};
use slipway_core::worktree::{CloseOutcome, Created, Health, WorktreeStatus};

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(10)]
}

pub fn branches(list: &[BranchInfo]) -> String {
    let mut out = String::new();
    let width = list.iter().map(|b| b.name.len()).max().unwrap_or(0);
    for (title, kind) in [("Local", BranchKind::Local), ("Remote", BranchKind::Remote)] {
        let section: Vec<&BranchInfo> = list.iter().filter(|b| b.kind == kind).collect();
        if section.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}");
        for b in section {
            let mut marks = Vec::new();
            if b.is_default {
                marks.push("default".to_owned());
            }
            if let Some(up) = &b.upstream {
                match (b.ahead, b.behind) {
                    (Some(a), Some(bh)) if a + bh > 0 => {
                        marks.push(format!("-> {up}: {a} ahead, {bh} behind"))
                    }
                    (Some(_), Some(_)) => marks.push(format!("-> {up}: up to date")),
                    _ => marks.push(format!("-> {up}")),
                }
            }
            let _ = writeln!(
                out,
                "{} {:width$}  {}  {}{}",
                if b.is_head { "*" } else { " " },
                b.name,
                short(&b.commit),
                b.subject,
                if marks.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", marks.join(", "))
                },
            );
        }
    }
    out
}

pub fn created(c: &Created) -> String {
    let mut out = String::new();
    let verb = if c.reused { "Re-using" } else { "Created" };
    let _ = writeln!(
        out,
        "{verb} worktree {}\n  branch {} from {} ({})",
        c.record.path.display(),
        c.record.branch,
        c.source_label,
        short(&c.record.base_commit)
    );
    if !c.copy.copied.is_empty() {
        let _ = writeln!(
            out,
            "  copied {} ({} {})",
            c.copy.copied.join(", "),
            c.copy.files,
            if c.copy.files == 1 { "file" } else { "files" }
        );
    }
    for note in &c.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

pub fn worktrees(list: &[WorktreeStatus], kept: &[slipway_core::review::KeptBranch]) -> String {
    let mut out = String::new();
    for k in kept {
        let _ = writeln!(
            out,
            "{}  kept branch, no worktree  {} ahead, {} behind  (review: slipway diff {})",
            k.branch, k.ahead, k.behind, k.branch
        );
    }
    if list.is_empty() {
        out.push_str("No slipway worktrees.\n");
        return out;
    }
    for w in list {
        let dirty = if w.dirty {
            format!("dirty ({} changed)", w.changed_files)
        } else {
            "clean".to_owned()
        };
        let health = match w.health {
            Health::Ok => String::new(),
            Health::Creating => "  (being created)".to_owned(),
            Health::Missing => "  ORPHAN: the worktree directory is gone; `slipway worktree close` clears the record".to_owned(),
            Health::Incomplete => "  INCOMPLETE: its create was interrupted; the next slipway command undoes it".to_owned(),
            Health::Corrupt => format!("  CORRUPT RECORD: {}", w.why.as_deref().unwrap_or("")),
        };
        let _ = writeln!(
            out,
            "{}  {}  [{}] {}  {} ahead, {} behind  {}{}",
            w.id,
            w.branch,
            w.state.name(),
            dirty,
            w.ahead,
            w.behind,
            w.path.display(),
            health
        );
        if let Some(why) = &w.why {
            let _ = writeln!(out, "    {why}");
        }
    }
    out
}

pub fn closed(outcome: &CloseOutcome, actions: &[Action]) -> String {
    let mut out = String::new();
    match outcome {
        CloseOutcome::Removed {
            id,
            path,
            branch,
            branch_deleted,
            branch_kept,
            kept_commit,
            discarded_tip,
        } => {
            if path.as_os_str().is_empty() {
                let _ = writeln!(out, "Discarded kept branch {id}");
            } else {
                let _ = writeln!(out, "Removed worktree {}", path.display());
            }
            if *branch_deleted {
                let _ = writeln!(out, "  deleted branch {branch}");
            }
            for kept in branch_kept.iter().chain(kept_commit).chain(discarded_tip) {
                let _ = writeln!(out, "  {kept}");
            }
        }
        CloseOutcome::Preserved {
            id,
            preserved_path,
            reason,
            commands,
            ..
        } => {
            if preserved_path.as_os_str().is_empty() {
                let _ = writeln!(out, "Kept branch {id}: {reason}");
            } else {
                let _ = writeln!(
                    out,
                    "Preserved worktree {}: {reason}",
                    preserved_path.display()
                );
            }
            for command in commands {
                let _ = writeln!(out, "  inspect: {command}");
            }
        }
    }
    out.push_str(&next::lines(actions));
    out
}

/// What a close or discard would lose (`--dry-run`).
pub fn preview(p: &slipway_core::review::risk::Preview, what: &str) -> String {
    let mut out = String::new();
    let place = match &p.path {
        Some(path) => format!("worktree {} (branch {})", path.display(), p.branch),
        None => format!("kept branch {}", p.branch),
    };
    if p.at_risk.is_empty() {
        let _ = writeln!(
            out,
            "Nothing would be lost: {what} of {place} loses no work."
        );
    } else {
        let _ = writeln!(out, "A {what} of {place} would lose:");
        for path in &p.at_risk.uncommitted {
            let _ = writeln!(out, "  uncommitted  {path}");
        }
        for c in &p.at_risk.commits {
            let _ = writeln!(out, "  commit       {}  {}", short(&c.sha), c.subject);
        }
    }
    out.push_str(&next::lines(&p.actions));
    out
}

/// A run's status in a word, for people.
pub fn status_word(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::Failed => "failed",
        RunStatus::TimedOut => "timed out",
        RunStatus::Cancelled => "cancelled",
        RunStatus::NeedsInput => "needs input",
    }
}

/// A check's outcome in a few words.
pub fn check_word(check: &slipway_core::run::CheckResult) -> String {
    match check.exit_code {
        Some(0) => "passed".into(),
        Some(code) => format!("failed (exit {code})"),
        None => "timed out".into(),
    }
}

pub fn run_result(r: &RunResult) -> String {
    let mut out = String::new();
    let status = status_word(r.status);
    let on = if r.branch.is_empty() {
        String::new()
    } else {
        format!(" on {}", r.branch)
    };
    let _ = writeln!(
        out,
        "Run {} {status} after {} iteration(s){on}",
        r.run_id, r.iterations
    );
    if let Some(q) = &r.question {
        let _ = writeln!(out, "  the agent asks: {}", q.text.replace('\n', "\n    "));
        let _ = writeln!(out, "  answer with: slipway reply {} \"…\"", r.run_id);
    }
    if let Some(previous) = &r.reply_to {
        let _ = writeln!(out, "  answers run {previous}");
    }
    if !r.commits.is_empty() {
        let shas: Vec<&str> = r.commits.iter().map(|c| short(&c.sha)).collect();
        let _ = writeln!(out, "  commits: {}", shas.join(" "));
    }
    if let Some(signal) = &r.completion_signal {
        let _ = writeln!(out, "  completion signal: {signal}");
    }
    if let Some(check) = &r.check {
        let _ = writeln!(out, "  check {}: {}", check_word(check), check.command);
        if !check.passed {
            for line in &check.tail {
                let _ = writeln!(out, "    │ {line}");
            }
        }
    }
    match &r.merge {
        Some(MergeOutcome::FastForward { to, .. }) => {
            let _ = writeln!(
                out,
                "  merged: fast-forwarded the host branch to {}",
                short(to)
            );
        }
        Some(MergeOutcome::Merged { commit }) => {
            let _ = writeln!(
                out,
                "  merged: merge commit {} on the host branch",
                short(commit)
            );
        }
        Some(MergeOutcome::UpToDate) => {
            let _ = writeln!(out, "  merged: nothing new for the host branch");
        }
        None => {}
    }
    // The branch may have held commits before the run (an interactive
    // session's): the count says what landed, not only what the run made.
    let landed = r.merged_commits.len();
    if landed > r.commits.len() {
        let _ = writeln!(
            out,
            "  landed: {} in {} ({} made before this run)",
            slipway_core::util::count(landed, "commit", "commits"),
            r.merged_into.as_deref().unwrap_or("the host branch"),
            landed - r.commits.len()
        );
    }
    if let Some(p) = &r.preserved_worktree_path {
        let _ = writeln!(out, "  worktree kept at {}", p.display());
    }
    if let Some(k) = &r.kept_branch {
        let _ = writeln!(out, "  {k}");
    }
    if let Some(side) = r.import.as_ref().and_then(|i| i.side_branch.as_ref()) {
        let _ = writeln!(
            out,
            "  the run's commits are on '{}': {}",
            side.name, side.reason
        );
    }
    for c in &r.refs_ignored {
        let _ = writeln!(
            out,
            "  ignored: the agent changed {} in its private git dir ({} -> {}); the host's ref was not touched",
            c.name,
            c.before.as_deref().unwrap_or("absent"),
            c.after.as_deref().unwrap_or("deleted")
        );
    }
    out.push_str(&sensitive(&r.sensitive_changes));
    for w in &r.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    let _ = writeln!(out, "  log: {}", r.log_file.display());
    out.push_str(&next::lines(&r.actions));
    out
}

pub fn runs(runs: &[slipway_core::run::listing::RunEntry]) -> String {
    if runs.is_empty() {
        return "No runs.\n".to_owned();
    }
    let mut out = String::new();
    for r in runs {
        let _ = writeln!(
            out,
            "{}  {}  {}  {}  {}",
            r.run_id,
            r.status,
            r.agent.as_deref().unwrap_or("-"),
            r.branch.as_deref().unwrap_or("-"),
            r.worktree_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        );
        let activity = r.activity.as_ref().map(|a| a.summary());
        let _ = writeln!(
            out,
            "    {}{}{}",
            duration(r.elapsed_secs),
            r.engine
                .as_deref()
                .map(|e| format!(" · on engine {e}"))
                .unwrap_or_default(),
            activity
                .filter(|a| !a.is_empty())
                .map(|a| format!(" · {a}"))
                .unwrap_or_default()
        );
        if let Some(q) = &r.question {
            let _ = writeln!(
                out,
                "    asks: {}",
                q.text.lines().next().unwrap_or_default()
            );
        }
        if let Some(line) = &r.last_line {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// The user's engines, one a line, or where to list them.
pub fn engines(engines: &[slipway_core::engines::EngineStatus]) -> String {
    if engines.is_empty() {
        let file = slipway_core::engines::config_file()
            .map(|f| f.display().to_string())
            .unwrap_or_else(|| "~/.config/slipway/config.toml".to_owned());
        return format!(
            "No engines listed: runs use DOCKER_HOST or the local socket. List engines in {file}:\n  [[engines]]\n  name = \"local\"\n  url = \"unix:///var/run/docker.sock\"\n  limit = 4\n"
        );
    }
    let mut out = String::new();
    for e in engines {
        let answer = match (&e.version, &e.error) {
            (Some(v), _) => format!("reachable (Docker {v})"),
            (None, Some(why)) => format!("unreachable: {why}"),
            (None, None) => "unreachable".to_owned(),
        };
        let _ = writeln!(
            out,
            "{}  {}  {}/{} runs{}  {answer}",
            e.name,
            e.url,
            e.load,
            e.limit,
            if e.isolated { "  isolated" } else { "" }
        );
        for run in &e.runs {
            let _ = writeln!(out, "    {run}");
        }
    }
    out
}

/// `1h 02m`, `3m 05s`, `42s`.
pub(super) fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, secs / 60 % 60),
    }
}

/// What a land did, for people.
pub fn landed(l: &slipway_core::review::land::Landed) -> String {
    use slipway_core::review::land::LandKind;
    let what = match l.kind {
        LandKind::FastForward => "fast-forwarded to",
        LandKind::Merge => "merged as",
        LandKind::Squash => "squashed as",
        LandKind::Rebase => "rebased onto it, now at",
        LandKind::UpToDate => "already there; it stays at",
    };
    let files = if l.checkout_updated {
        " (the host checkout's files follow)"
    } else {
        ""
    };
    format!(
        "Landed {} into {}: {what} {}{files}\n{}{}",
        l.branch,
        l.into,
        short(&l.commit),
        sensitive(&l.sensitive_changes),
        next::lines(&l.actions)
    )
}

/// One line for each changed file that makes programs run on the host.
fn sensitive(changes: &[slipway_core::review::sensitive::SensitiveChange]) -> String {
    use slipway_core::review::sensitive::ChangeStatus;
    let mut out = String::new();
    for c in changes {
        let how = match c.status {
            ChangeStatus::Added => "added",
            ChangeStatus::Modified => "changed",
            ChangeStatus::Deleted => "removed",
        };
        let _ = writeln!(
            out,
            "  read before your tools do: {} {how}: {}",
            c.path, c.why
        );
    }
    out
}

/// A worktree's change, one line a file: status, +added -removed, where
/// the change is (committed, uncommitted or both), the path.
pub fn diff(d: &slipway_core::review::diff::WorktreeDiff) -> String {
    use slipway_core::review::diff::FileStatus;
    let mut out = String::new();
    let against = match (&d.against, &d.target) {
        (Some(other), _) => format!("; {} is the tip of {other}", short(&d.base)),
        (None, Some(target)) => format!("; {} is where it meets {target} now", short(&d.base)),
        (None, None) => String::new(),
    };
    let _ = writeln!(
        out,
        "{}..{} (and uncommitted files){against}",
        short(&d.base),
        short(&d.head)
    );
    if d.files.is_empty() {
        let _ = writeln!(out, "  no changes");
    }
    for f in &d.files {
        let letter = match f.status {
            FileStatus::Added => 'A',
            FileStatus::Modified => 'M',
            FileStatus::Deleted => 'D',
            FileStatus::Renamed => 'R',
        };
        let counts = if f.binary {
            "binary".to_owned()
        } else {
            format!("+{} -{}", f.additions, f.deletions)
        };
        let place = match (f.committed, f.uncommitted) {
            (true, true) => "committed+uncommitted",
            (true, false) => "committed",
            (false, true) => "uncommitted",
            (false, false) => "",
        };
        let path = match &f.old_path {
            Some(old) => format!("{old} -> {}", f.path),
            None => f.path.clone(),
        };
        let flag = match &f.sensitive {
            Some(s) => format!("  ! {}", s.why),
            None => String::new(),
        };
        let _ = writeln!(out, "{letter} {counts:>12}  {place:<21}  {path}{flag}");
    }
    out.push_str(&next::lines(&d.actions));
    out
}

/// What `slipway trust` approved (or would), for people: each file with its
/// hash and everything it makes slipway do.
pub fn trusted(subjects: &[slipway_core::trust::TrustSubject], dry_run: bool) -> String {
    let mut out = String::new();
    for s in subjects {
        let link = s
            .symlink_to
            .as_ref()
            .map(|t| format!(" (a symlink to {})", t.display()))
            .unwrap_or_default();
        let _ = writeln!(out, "{}{link}", s.path.display());
        match &s.hash {
            Some(hash) => {
                let before = match &s.trusted_hash {
                    Some(old) if old == hash => " (trusted already)".to_owned(),
                    Some(old) => format!(" (changed: {} was trusted)", short(old)),
                    None => String::new(),
                };
                let _ = writeln!(out, "  hash: {hash}{before}");
            }
            None if s.trusted_hash.is_some() => {
                let _ = writeln!(out, "  gone: its earlier approval is dropped");
            }
            None => {
                let _ = writeln!(out, "  no such file: there is nothing to approve");
            }
        }
        for c in &s.commands {
            let _ = writeln!(out, "  runs: {}  ({})", c.command, c.source);
        }
        for setting in &s.settings {
            let _ = writeln!(out, "  sets: {} = {}", setting.key, setting.value);
        }
        if s.hash.is_some() && s.commands.is_empty() && s.settings.is_empty() {
            let _ = writeln!(out, "  names nothing that runs or chooses the sandbox");
        }
    }
    let _ = writeln!(
        out,
        "{}",
        if dry_run {
            "Nothing recorded (--dry-run)."
        } else {
            "Trusted: slipway uses this content until it changes."
        }
    );
    out
}
