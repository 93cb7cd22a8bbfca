//! Session files of the agents that keep their conversations on disk (Claude
//! Code, Codex, Pi): find the file of a session id, and copy it to another HOME
//! and working directory with the paths inside rewritten, so that a session
//! started interactively in one place can be resumed in a sandbox.
//!
//! These are pure file operations: the HOME is always a parameter (the real
//! user's home is never read here), and nothing but the copied files is written.
//! The agents' own directory overrides (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
//! `PI_CODING_AGENT_DIR`) are the caller's business: pass the HOME the agent
//! actually uses.
//!
//! Layouts:
//! - Claude Code: `~/.claude/projects/<cwd with every character other than
//!   ASCII letters and digits replaced by '-'>/<id>.jsonl`, plus an optional
//!   `<id>/` directory beside it (sub-agent transcripts, large tool results).
//!   Names longer than 200 characters are cut and given a hash suffix by Claude
//!   Code; such a directory is found by its prefix.
//! - Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl`; the
//!   date folders do not depend on the cwd, so a copy keeps its relative path.
//! - Pi: `~/.pi/agent/sessions/--<cwd without its leading '/', with '/', '\' and
//!   ':' replaced by '-'>--/<timestamp>_<id>.jsonl`
//!   (`getDefaultSessionDir` in `session-manager.ts`).
//!
//! Inside the files, paths are JSON strings (`"cwd":"/repo/wt"`, file paths in
//! tool calls, text that mentions them). The copy replaces the old working
//! directory with the new one where it appears as a whole path or a path prefix
//! (`/repo/wt`, `/repo/wt/src/x.rs`, but not `/repo/wt2`), in the JSON-escaped
//! form the file uses.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Claude Code's limit on a project directory name before it adds a hash.
const CLAUDE_MAX_DIR_NAME: usize = 200;

/// An agent's session store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionStore {
    /// `~/.claude/projects`.
    ClaudeCode,
    /// `~/.codex/sessions`.
    Codex,
    /// `~/.pi/agent/sessions`.
    Pi,
}

/// Where an agent runs: its HOME and its working directory (both absolute).
#[derive(Debug, Clone, Copy)]
pub struct SessionPlace<'a> {
    /// The agent's HOME.
    pub home: &'a Path,
    /// The agent's working directory (the worktree).
    pub cwd: &'a Path,
}

/// A session made ready to resume ([`SessionStore::carry`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The file the agent will resume.
    pub file: PathBuf,
    /// Where it was copied from, when it had to be copied.
    pub copied_from: Option<PathBuf>,
    /// The session's running token total so far, for agents that report usage
    /// as a running total (Codex).
    pub usage_total: Option<TokenTotals>,
}

/// Token counts of a whole session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the prompt cache.
    pub cached_input_tokens: u64,
}

/// The working directory a session file recorded: the first `cwd` field of
/// its lines (Claude Code and Pi put it at the top level, Codex in the
/// `session_meta` payload).
pub fn recorded_cwd(file: &Path) -> Option<String> {
    let text = fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let cwd = v
            .get("cwd")
            .or_else(|| v.get("payload").and_then(|p| p.get("cwd")))?;
        cwd.as_str()
            .filter(|c| c.starts_with('/'))
            .map(|c| c.trim_end_matches('/').to_owned())
    })
}

/// The running token total a Codex rollout file recorded last (the
/// `total_token_usage` of its last `token_count` event).
pub fn codex_usage_total(file: &Path) -> Option<TokenTotals> {
    let text = fs::read_to_string(file).ok()?;
    text.lines().rev().find_map(|line| {
        if !line.contains("\"token_count\"") {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let payload = v.get("payload")?;
        if payload.get("type")?.as_str()? != "token_count" {
            return None;
        }
        let total = payload.get("info")?.get("total_token_usage")?;
        let n = |k: &str| {
            total
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        Some(TokenTotals {
            input_tokens: n("input_tokens"),
            output_tokens: n("output_tokens"),
            cached_input_tokens: n("cached_input_tokens"),
        })
    })
}

/// The newest Codex thread whose `session_meta` names `cwd`: rollout files
/// are named by their start time, so the newest date folders and names are
/// read first, and only the first line of each.
fn codex_latest_for_cwd(root: &Path, cwd: &str) -> Option<String> {
    let sorted_desc = |dir: &Path| -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        entries.reverse();
        entries
    };
    // A person's recent threads are in the newest folders; older ones are not worth a scan.
    let mut budget = 500;
    for year in sorted_desc(root) {
        for month in sorted_desc(&year) {
            for day in sorted_desc(&month) {
                for file in sorted_desc(&day) {
                    if budget == 0 {
                        return None;
                    }
                    budget -= 1;
                    let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
                        continue;
                    };
                    if !(name.starts_with("rollout-") && name.ends_with(".jsonl")) {
                        continue;
                    }
                    let Ok(f) = fs::File::open(&file) else {
                        continue;
                    };
                    let mut first = String::new();
                    if io::BufRead::read_line(&mut io::BufReader::new(f), &mut first).is_err() {
                        continue;
                    }
                    let Ok(meta) = serde_json::from_str::<serde_json::Value>(&first) else {
                        continue;
                    };
                    let payload = &meta["payload"];
                    if payload["cwd"].as_str().map(|c| c.trim_end_matches('/')) == Some(cwd)
                        && let Some(id) = payload["id"].as_str()
                    {
                        return Some(id.to_owned());
                    }
                }
            }
        }
    }
    None
}

/// A session that cannot be found or copied.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The id could be a path: refused.
    #[error("`{0}` is not a session id (letters, digits, `-`, `_`, `.` and `:` only)")]
    InvalidId(String),
    /// A HOME or cwd that is not usable.
    #[error("{path}: {reason}")]
    InvalidPath {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// No file for that id.
    #[error("no {agent} session `{id}` under {searched}")]
    NotFound {
        /// Agent name.
        agent: &'static str,
        /// Session id.
        id: String,
        /// Where slipway looked.
        searched: PathBuf,
    },
    /// The session exists but cannot be moved where the run needs it.
    #[error("cannot resume {agent} session `{id}` here: {reason}")]
    NotCarried {
        /// Agent name.
        agent: &'static str,
        /// Session id.
        id: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl SessionError {
    /// A stable name for the protocol's `data.kind`.
    pub fn kind(&self) -> crate::error::ErrorKind {
        match self {
            SessionError::InvalidId(_) | SessionError::InvalidPath { .. } => {
                crate::error::ErrorKind::InvalidParams
            }
            SessionError::NotFound { .. } => crate::error::ErrorKind::SessionNotFound,
            SessionError::NotCarried { .. } => crate::error::ErrorKind::SessionNotResumable,
            SessionError::Io { .. } => crate::error::ErrorKind::Io,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_owned(),
        source,
    }
}

impl SessionStore {
    /// The agent's name.
    pub fn agent(self) -> &'static str {
        match self {
            SessionStore::ClaudeCode => "claude-code",
            SessionStore::Codex => "codex",
            SessionStore::Pi => "pi",
        }
    }

    /// The directory holding all sessions under `home`.
    pub fn root(self, home: &Path) -> PathBuf {
        match self {
            SessionStore::ClaudeCode => home.join(".claude").join("projects"),
            SessionStore::Codex => home.join(".codex").join("sessions"),
            SessionStore::Pi => home.join(".pi").join("agent").join("sessions"),
        }
    }

    /// The directory holding all sessions for an agent started with `home` and
    /// the environment `var` reads: the agents' own overrides (`CLAUDE_CONFIG_DIR`,
    /// `CODEX_HOME`, `PI_CODING_AGENT_DIR`) win over `home`.
    pub fn root_in_env(self, home: &Path, var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        match self {
            SessionStore::ClaudeCode => set("CLAUDE_CONFIG_DIR")
                .map(|d| d.join("projects"))
                .unwrap_or_else(|| self.root(home)),
            SessionStore::Codex => set("CODEX_HOME")
                .map(|d| d.join("sessions"))
                .unwrap_or_else(|| self.root(home)),
            SessionStore::Pi => set("PI_CODING_AGENT_DIR")
                .map(|d| d.join("sessions"))
                .unwrap_or_else(|| self.root(home)),
        }
    }

    /// Makes the session `session_id`, wherever it is under `from_root`, ready
    /// to resume in `to_cwd` by an agent whose store is `to_root`: when the file
    /// is not where the agent looks for it (another HOME, or the folder of
    /// another working directory, such as a worktree merged and removed), it is
    /// copied there with the working directory it recorded rewritten to
    /// `to_cwd`. The source stays as it was.
    pub fn carry(
        self,
        session_id: &str,
        from_root: &Path,
        to_root: &Path,
        to_cwd: &Path,
    ) -> Result<Carried, SessionError> {
        check_id(session_id)?;
        let new_cwd = absolute_dir(to_cwd)?;
        let source = self.locate_in(from_root, &new_cwd, session_id)?;
        let usage_total = match self {
            SessionStore::Codex => codex_usage_total(&source),
            _ => None,
        };
        let dest_dir = self.dest_dir(&source, from_root, to_root, &new_cwd)?;
        if source.parent() == Some(dest_dir.as_path()) {
            return Ok(Carried {
                file: source,
                copied_from: None,
                usage_total,
            });
        }
        let old_cwd = recorded_cwd(&source).unwrap_or_else(|| new_cwd.clone());
        let file = self.copy_into(session_id, &source, &dest_dir, &old_cwd, &new_cwd)?;
        Ok(Carried {
            file,
            copied_from: Some(source),
            usage_total,
        })
    }

    /// Where the agent looks for a session file that is now `source` (under
    /// `from_root`), once its store is `to_root` and its working directory `cwd`.
    fn dest_dir(
        self,
        source: &Path,
        from_root: &Path,
        to_root: &Path,
        cwd: &str,
    ) -> Result<PathBuf, SessionError> {
        Ok(match self {
            SessionStore::ClaudeCode => claude_dest_dir(to_root, cwd)?,
            SessionStore::Pi => to_root.join(pi_session_dir_name(cwd)),
            // Codex files live in date folders that do not depend on the cwd.
            SessionStore::Codex => {
                let relative = source
                    .parent()
                    .and_then(|p| p.strip_prefix(from_root).ok())
                    .unwrap_or(Path::new(""));
                to_root.join(relative)
            }
        })
    }

    /// Copies `source` (and Claude Code's side folder) into `dest_dir` with
    /// `old_cwd` rewritten to `new_cwd`; returns the new file.
    fn copy_into(
        self,
        session_id: &str,
        source: &Path,
        dest_dir: &Path,
        old_cwd: &str,
        new_cwd: &str,
    ) -> Result<PathBuf, SessionError> {
        let file_name =
            source
                .file_name()
                .map(|n| n.to_owned())
                .ok_or_else(|| SessionError::InvalidPath {
                    path: source.to_owned(),
                    reason: "session file has no name",
                })?;
        let dest = dest_dir.join(&file_name);
        copy_rewritten(source, &dest, old_cwd, new_cwd)?;
        if self == SessionStore::ClaudeCode {
            let side = source.with_extension("");
            if side.is_dir() {
                copy_tree_rewritten(&side, &dest_dir.join(session_id), old_cwd, new_cwd)?;
            }
        }
        Ok(dest)
    }

    /// The id of the newest session under the store `root` that was started in
    /// `cwd` (what an interactive session there left behind), if any.
    pub fn latest_for_cwd(self, root: &Path, cwd: &Path) -> Option<String> {
        let cwd = absolute_dir(cwd).ok()?;
        let newest = |dir: PathBuf| -> Option<PathBuf> {
            fs::read_dir(dir)
                .ok()?
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.ends_with(".jsonl"))
                })
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .max()
                .map(|(_, path)| path)
        };
        let stem = |path: &Path| path.file_stem()?.to_str().map(str::to_owned);
        let id = match self {
            SessionStore::ClaudeCode => stem(&newest(root.join(claude_project_dir_name(&cwd)))?)?,
            SessionStore::Pi => {
                let file = stem(&newest(root.join(pi_session_dir_name(&cwd)))?)?;
                file.rsplit_once('_')?.1.to_owned()
            }
            SessionStore::Codex => codex_latest_for_cwd(root, &cwd)?,
        };
        check_id(&id).ok().map(|()| id)
    }

    /// The session file of `session_id` for an agent that ran with `home` in
    /// `cwd`: of the copies in the store (a session can be resumed from another
    /// directory, and carrying it leaves one per directory), the most recently
    /// written one, the cwd's own on a tie.
    pub fn locate(
        self,
        home: &Path,
        cwd: &Path,
        session_id: &str,
    ) -> Result<PathBuf, SessionError> {
        check_id(session_id)?;
        self.locate_in(&self.root(home), &utf8(cwd)?, session_id)
    }

    /// [`SessionStore::locate`] in the store `root`.
    fn locate_in(self, root: &Path, cwd: &str, session_id: &str) -> Result<PathBuf, SessionError> {
        let root = root.to_path_buf();
        let found = match self {
            SessionStore::ClaudeCode => {
                let file = format!("{session_id}.jsonl");
                let home_dir = root.join(claude_project_dir_name(cwd));
                newest_in_subdirs(&root, &home_dir, |f| f == file)?
            }
            SessionStore::Codex => {
                let suffix = format!("-{session_id}.jsonl");
                find_recursive(&root, 4, &|f: &str| {
                    f.starts_with("rollout-") && f.ends_with(&suffix)
                })?
            }
            SessionStore::Pi => {
                let suffix = format!("_{session_id}.jsonl");
                let home_dir = root.join(pi_session_dir_name(cwd));
                newest_in_subdirs(&root, &home_dir, |f| f.ends_with(&suffix))?
            }
        };
        found.ok_or_else(|| SessionError::NotFound {
            agent: self.agent(),
            id: session_id.to_owned(),
            searched: root,
        })
    }

    /// Copies the session `session_id` from where it was (`from`) to where the
    /// agent will resume it (`to`): the file goes where the agent looks for it
    /// under `to.home` for `to.cwd`, with every path under `from.cwd` rewritten
    /// to the same path under `to.cwd`. An existing copy is replaced (written to
    /// a temporary file, then renamed). Returns the new file.
    pub fn copy(
        self,
        session_id: &str,
        from: SessionPlace<'_>,
        to: SessionPlace<'_>,
    ) -> Result<PathBuf, SessionError> {
        let old_cwd = absolute_dir(from.cwd)?;
        let new_cwd = absolute_dir(to.cwd)?;
        absolute_dir(to.home)?;
        let source = self.locate(from.home, from.cwd, session_id)?;
        let dest_dir = self.dest_dir(
            &source,
            &self.root(from.home),
            &self.root(to.home),
            &new_cwd,
        )?;
        self.copy_into(session_id, &source, &dest_dir, &old_cwd, &new_cwd)
    }
}

/// Claude Code's project directory name for `cwd`: every UTF-16 code unit that
/// is not an ASCII letter or digit becomes `-` (as `cwd.replace(/[^a-zA-Z0-9]/g,
/// "-")` does). Names over 200 characters get a hash suffix from Claude Code
/// that is not reproduced here (see [`SessionStore::copy`]).
pub fn claude_project_dir_name(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

/// Pi's session directory name for `cwd`: `--` + the cwd without a leading
/// `/` or `\`, with `/`, `\` and `:` replaced by `-` + `--`.
pub fn pi_session_dir_name(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let body: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// Replaces the path `from` by `to` in JSON text, where `from` appears (JSON
/// escaped) as a whole path or as the prefix of a longer path: the match must
/// not be preceded or followed by a character that would make it part of
/// another name (`/repo/wt` matches in `"/repo/wt"` and `"/repo/wt/src"`, not in
/// `"/repo/wt2"` or `"/x/repo/wt"`). Both the plain UTF-8 form and the
/// `\uXXXX`-escaped form of non-ASCII characters are handled.
pub fn rewrite_paths(text: &[u8], from: &str, to: &str) -> Vec<u8> {
    let from = from.trim_end_matches('/');
    let to = to.trim_end_matches('/');
    if from.is_empty() || from == to {
        return text.to_vec();
    }
    let mut out = replace_bounded(
        text,
        json_escape(from, false).as_bytes(),
        json_escape(to, false).as_bytes(),
    );
    let (from_ascii, to_ascii) = (json_escape(from, true), json_escape(to, true));
    if from_ascii != json_escape(from, false) {
        out = replace_bounded(&out, from_ascii.as_bytes(), to_ascii.as_bytes());
    }
    out
}

/// `s` as it appears inside a JSON string.
fn json_escape(s: &str, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii_only && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// A byte that continues a file name (so a match next to it is not a whole path).
fn continues_name(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'.' | b'_' | b'-' | b'+' | b'~' | b'@' | b'%' | b'=' | b','
        )
        || b >= 0x80
}

fn replace_bounded(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i + from.len() <= text.len() {
        if &text[i..i + from.len()] == from {
            let before_ok = i == 0 || !continues_name(text[i - 1]);
            let after_ok = text.get(i + from.len()).is_none_or(|b| !continues_name(*b));
            if before_ok && after_ok {
                out.extend_from_slice(&text[copied..i]);
                out.extend_from_slice(to);
                i += from.len();
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.extend_from_slice(&text[copied..]);
    out
}

fn check_id(id: &str) -> Result<(), SessionError> {
    let mut chars = id.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        && id.len() <= 256;
    if ok {
        Ok(())
    } else {
        Err(SessionError::InvalidId(id.to_owned()))
    }
}

fn utf8(path: &Path) -> Result<String, SessionError> {
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| SessionError::InvalidPath {
            path: path.to_owned(),
            reason: "not valid UTF-8",
        })
}

/// An absolute path other than `/`, as UTF-8 without a trailing `/`.
fn absolute_dir(path: &Path) -> Result<String, SessionError> {
    let s = utf8(path)?;
    let trimmed = s.trim_end_matches('/');
    if !path.is_absolute() || trimmed.is_empty() {
        return Err(SessionError::InvalidPath {
            path: path.to_owned(),
            reason: "must be an absolute path other than /",
        });
    }
    Ok(trimmed.to_owned())
}

/// The Claude Code project directory for `cwd` under `root`; for a name past
/// Claude Code's length limit, the one existing directory with its prefix.
fn claude_dest_dir(root: &Path, cwd: &str) -> Result<PathBuf, SessionError> {
    let name = claude_project_dir_name(cwd);
    if name.len() <= CLAUDE_MAX_DIR_NAME {
        return Ok(root.join(name));
    }
    let prefix = format!("{}-", &name[..CLAUDE_MAX_DIR_NAME]);
    let mut matches = Vec::new();
    if let Ok(entries) = fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
            {
                matches.push(entry.path());
            }
        }
    }
    match <[PathBuf; 1]>::try_from(matches) {
        Ok([dir]) => Ok(dir),
        Err(_) => Err(SessionError::InvalidPath {
            path: PathBuf::from(cwd),
            reason: "Claude Code shortens project directory names over 200 characters with a \
                     hash slipway cannot compute; start claude once in this directory first",
        }),
    }
}

fn find_in_dir(
    dir: &Path,
    matches: impl Fn(&str) -> bool,
) -> Result<Option<PathBuf>, SessionError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_str().is_some_and(&matches))
        .map(|e| e.path())
        .collect();
    found.sort();
    Ok(found.pop())
}

/// The most recently written file of any folder under `root` that `matches`
/// (on a tie, the one in `preferred`): a session carried from worktree to
/// worktree leaves a copy in each folder, and the newest holds the whole
/// conversation.
fn newest_in_subdirs(
    root: &Path,
    preferred: &Path,
    matches: impl Fn(&str) -> bool,
) -> Result<Option<PathBuf>, SessionError> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(root)(e)),
    };
    let mut best: Option<(std::time::SystemTime, bool, PathBuf)> = None;
    for dir in entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
    {
        let Some(found) = find_in_dir(&dir, &matches)? else {
            continue;
        };
        let written = fs::metadata(&found)
            .and_then(|m| m.modified())
            .map_err(io_err(&found))?;
        let candidate = (written, dir == preferred, found);
        if best
            .as_ref()
            .is_none_or(|b| (candidate.0, candidate.1) > (b.0, b.1))
        {
            best = Some(candidate);
        }
    }
    Ok(best.map(|(_, _, path)| path))
}

fn find_recursive(
    dir: &Path,
    depth: usize,
    matches: &dyn Fn(&str) -> bool,
) -> Result<Option<PathBuf>, SessionError> {
    if let Some(found) = find_in_dir(dir, matches)? {
        return Ok(Some(found));
    }
    if depth == 0 {
        return Ok(None);
    }
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    // Newest date folders first.
    dirs.sort();
    dirs.reverse();
    for sub in dirs {
        if let Some(found) = find_recursive(&sub, depth - 1, matches)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Copies `source` to `dest` with paths rewritten, through a temporary file.
fn copy_rewritten(source: &Path, dest: &Path, from: &str, to: &str) -> Result<(), SessionError> {
    let bytes = fs::read(source).map_err(io_err(source))?;
    let text_like = matches!(
        source.extension().and_then(|e| e.to_str()),
        Some("jsonl" | "json")
    );
    let rewritten = if text_like {
        rewrite_paths(&bytes, from, to)
    } else {
        bytes
    };
    let dir = dest.parent().ok_or_else(|| SessionError::InvalidPath {
        path: dest.to_owned(),
        reason: "no parent directory",
    })?;
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let mut tmp_name = dest.file_name().map(|n| n.to_owned()).unwrap_or_default();
    tmp_name.push(format!(".slipway-tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| -> io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(&rewritten)?;
        file.sync_all()?;
        fs::rename(&tmp, dest)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(dest)(e));
    }
    Ok(())
}

fn copy_tree_rewritten(
    source: &Path,
    dest: &Path,
    from: &str,
    to: &str,
) -> Result<(), SessionError> {
    fs::create_dir_all(dest).map_err(io_err(dest))?;
    for entry in fs::read_dir(source).map_err(io_err(source))? {
        let entry = entry.map_err(io_err(source))?;
        let kind = entry.file_type().map_err(io_err(&entry.path()))?;
        let target = dest.join(entry.file_name());
        if kind.is_dir() {
            copy_tree_rewritten(&entry.path(), &target, from, to)?;
        } else if kind.is_file() {
            copy_rewritten(&entry.path(), &target, from, to)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(text: &str, from: &str, to: &str) -> String {
        String::from_utf8(rewrite_paths(text.as_bytes(), from, to)).expect("utf-8")
    }

    #[test]
    fn rewrites_whole_paths_and_prefixes_only() {
        let line = r#"{"cwd":"/r/wt","f":"/r/wt/src/a.rs","g":"/r/wt2/x","h":"/x/r/wt","i":"cd /r/wt && ls","j":"/r/wt-old"}"#;
        assert_eq!(
            rw(line, "/r/wt", "/n/new"),
            r#"{"cwd":"/n/new","f":"/n/new/src/a.rs","g":"/r/wt2/x","h":"/x/r/wt","i":"cd /n/new && ls","j":"/r/wt-old"}"#
        );
    }

    #[test]
    fn rewrites_escaped_forms() {
        // A path with a quote and a backslash, as JSON escapes them.
        let from = "/r/a\"b\\c";
        let line = format!(
            r#"{{"cwd":{}}}"#,
            serde_json::to_string(from).expect("json")
        );
        assert_eq!(rw(&line, from, "/n"), r#"{"cwd":"/n"}"#);
        // Non-ASCII written as \u escapes (Python's json.dumps does this).
        assert_eq!(
            rw(r#"{"cwd":"/r/caf\u00e9/x"}"#, "/r/café", "/n/thé"),
            r#"{"cwd":"/n/th\u00e9/x"}"#
        );
        assert_eq!(
            rw(r#"{"cwd":"/r/café/x"}"#, "/r/café", "/n/thé"),
            r#"{"cwd":"/n/thé/x"}"#
        );
    }

    #[test]
    fn same_path_is_a_plain_copy() {
        assert_eq!(rw("/a/b", "/a/b", "/a/b/"), "/a/b");
    }

    #[test]
    fn directory_names() {
        assert_eq!(
            claude_project_dir_name("/home/u/my_repo.v2"),
            "-home-u-my-repo-v2"
        );
        assert_eq!(claude_project_dir_name("/a/é/😀"), "-a-----");
        assert_eq!(pi_session_dir_name("/home/u/proj"), "--home-u-proj--");
        assert_eq!(pi_session_dir_name("C:\\work\\x"), "--C--work-x--");
    }
}
