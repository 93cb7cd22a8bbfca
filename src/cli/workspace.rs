//! `slipway workspace create|edit|show|list|rm`: the grammar and thin
//! handlers over `slipway_core::workspace`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde::Serialize;
use slipway_core::workspace::{
    self, EditRequest, Workspace, WorkspaceError, WorkspaceStore, edit::apply,
};

use super::{CliError, print_json};

/// Workspaces: several host folders, each shared or isolated, for one agent.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace file in the config dir.
    Create(WorkspaceEditArgs),
    /// Change a workspace file; its comments and unknown keys are kept.
    Edit(WorkspaceEditArgs),
    /// Show a workspace.
    Show(WorkspaceNameArgs),
    /// List the workspaces.
    List,
    /// Remove a workspace file.
    Rm(WorkspaceNameArgs),
}

/// Options of `workspace create` and `workspace edit`.
#[derive(Debug, Args)]
pub struct WorkspaceEditArgs {
    /// The workspace name (its file is `<config>/slipway/workspaces/NAME.toml`).
    pub name: String,
    /// The container path the agent starts in (default: the first mount's DST).
    #[arg(long, value_name = "DST")]
    pub workdir: Option<String>,
    /// Mount a host folder (DST defaults to SRC; `:ro` for read-only); for an
    /// existing DST, this replaces its SRC and read-only flag.
    #[arg(long = "mount", value_name = "SRC[:DST][:ro]")]
    pub mounts: Vec<String>,
    /// Remove the mount at DST.
    #[arg(long = "remove-mount", value_name = "DST")]
    pub remove_mounts: Vec<String>,
    /// Isolation of the mount at DST: shared (the host folder), worktree or clone.
    #[arg(long = "mount-isolation", value_name = "DST=shared|worktree|clone")]
    pub isolation: Vec<String>,
    /// Where the isolated checkout at DST starts.
    #[arg(
        long = "mount-source-branch",
        value_name = "DST=host-head|current-branch|default|ask|named:REF"
    )]
    pub source_branch: Vec<String>,
    /// Default agent: command, claude-code, codex, opencode, pi, cursor, copilot.
    #[arg(long)]
    pub agent: Option<String>,
    /// Default sandbox: none, docker, docker-isolated.
    #[arg(long)]
    pub sandbox: Option<String>,
    /// Default container image.
    #[arg(long)]
    pub image: Option<String>,
    /// Default strategy: head, merge-to-head, branch.
    #[arg(long)]
    pub strategy: Option<String>,
}

/// A workspace name.
#[derive(Debug, Args)]
pub struct WorkspaceNameArgs {
    /// The workspace name.
    pub name: String,
}

impl From<WorkspaceError> for CliError {
    fn from(e: WorkspaceError) -> Self {
        let err = CliError::from_failure(&e);
        match &e {
            WorkspaceError::Invalid(v) => match v.mount() {
                Some(m) => err.with_data(serde_json::json!({ "mount": m })),
                None => err,
            },
            _ => err,
        }
    }
}

impl WorkspaceEditArgs {
    fn request(&self) -> EditRequest {
        EditRequest {
            workdir: self.workdir.clone(),
            mounts: self.mounts.clone(),
            remove_mounts: self.remove_mounts.clone(),
            isolation: self.isolation.clone(),
            source_branch: self.source_branch.clone(),
            agent: self.agent.clone(),
            sandbox: self.sandbox.clone(),
            image: self.image.clone(),
            strategy: self.strategy.clone(),
        }
    }
}

/// Runs one `slipway workspace` command.
pub fn dispatch(command: WorkspaceCommand, json: bool) -> Result<ExitCode, CliError> {
    let store = WorkspaceStore::from_env()?;
    match command {
        WorkspaceCommand::Create(args) => create(&store, &args, json),
        WorkspaceCommand::Edit(args) => edit(&store, &args, json),
        WorkspaceCommand::Show(args) => show(&store, &args.name, json),
        WorkspaceCommand::List => list(&store, json),
        WorkspaceCommand::Rm(args) => rm(&store, &args.name, json),
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// `slipway workspace create NAME …`: refused when the file exists; validated
/// before anything is written; written atomically.
pub fn create(
    store: &WorkspaceStore,
    args: &WorkspaceEditArgs,
    json: bool,
) -> Result<ExitCode, CliError> {
    let mut ws = store.new_workspace(&args.name)?;
    apply(
        &mut ws,
        &args.request(),
        &std::env::current_dir()?,
        home().as_deref(),
    )
    .map_err(WorkspaceError::from)?;
    ws.save()?;
    report_saved(&ws, "Created", json);
    Ok(ExitCode::SUCCESS)
}

/// `slipway workspace edit NAME …`: applies the options to the existing file,
/// keeping its comments, order and unknown keys (an older file is migrated).
pub fn edit(
    store: &WorkspaceStore,
    args: &WorkspaceEditArgs,
    json: bool,
) -> Result<ExitCode, CliError> {
    let mut ws = store.load(&args.name)?;
    apply(
        &mut ws,
        &args.request(),
        &std::env::current_dir()?,
        home().as_deref(),
    )
    .map_err(WorkspaceError::from)?;
    ws.save()?;
    report_saved(&ws, "Saved", json);
    Ok(ExitCode::SUCCESS)
}

fn report_saved(ws: &Workspace, verb: &str, json: bool) {
    warn_unknown_keys(ws, json);
    if json {
        print_json(&ShowJson::new(ws));
    } else {
        stdoutln!(
            "{verb} workspace {} ({})",
            ws.name.as_deref().unwrap_or_default(),
            ws.path.display()
        );
        stdout!("{}", render(ws));
    }
}

fn warn_unknown_keys(ws: &Workspace, json: bool) {
    if json {
        return;
    }
    for key in ws.unknown_keys() {
        stderrln!(
            "warning: {}: unknown key {key} (kept as it is)",
            ws.path.display()
        );
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShowJson<'a> {
    #[serde(flatten)]
    workspace: &'a Workspace,
    effective_workdir: Option<&'a std::path::Path>,
    unknown_keys: Vec<String>,
}

impl<'a> ShowJson<'a> {
    fn new(ws: &'a Workspace) -> ShowJson<'a> {
        ShowJson {
            workspace: ws,
            effective_workdir: ws.effective_workdir(),
            unknown_keys: ws.unknown_keys(),
        }
    }
}

/// `slipway workspace show NAME`.
pub fn show(store: &WorkspaceStore, name: &str, json: bool) -> Result<ExitCode, CliError> {
    let ws = store.load(name)?;
    warn_unknown_keys(&ws, json);
    if json {
        print_json(&ShowJson::new(&ws));
    } else {
        stdoutln!("{name} ({})", ws.path.display());
        if let Some(from) = ws.migrated_from {
            stdoutln!(
                "  (version {from} file, read as version {}; `slipway workspace edit {name}` rewrites it)",
                workspace::CURRENT_VERSION
            );
        }
        stdout!("{}", render(&ws));
    }
    Ok(ExitCode::SUCCESS)
}

/// The text form of a workspace, for people.
fn render(ws: &Workspace) -> String {
    let mut out = String::new();
    if let Some(w) = ws.effective_workdir() {
        let note = if ws.workdir.is_none() {
            " (the first mount)"
        } else {
            ""
        };
        let _ = writeln!(out, "  workdir   {}{note}", w.display());
    }
    if ws.mounts.is_empty() {
        let _ = writeln!(out, "  mounts    (none)");
    } else {
        let _ = writeln!(out, "  mounts");
        let width = ws
            .mounts
            .iter()
            .map(|m| m.label().chars().count())
            .max()
            .unwrap_or(0);
        for m in &ws.mounts {
            let mut how = m.isolation.name().to_owned();
            if m.isolation.is_isolated() {
                let _ = write!(how, " from {}", m.policy);
            }
            if m.readonly {
                how.push_str(", read-only");
            }
            let _ = writeln!(
                out,
                "    {:<width$}  <- {}  ({how})",
                m.label(),
                m.src.display()
            );
        }
    }
    let d = &ws.defaults;
    let mut line = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            let _ = writeln!(out, "  {key:<9} {v}");
        }
    };
    line("agent", d.agent.clone());
    line("sandbox", d.sandbox.map(|s| s.name().to_owned()));
    line("image", d.image.clone());
    line("strategy", d.strategy.map(|s| s.name().to_owned()));
    line(
        "copy",
        (!d.copy_to_worktree.is_empty()).then(|| d.copy_to_worktree.join(", ")),
    );
    for hook in &d.hooks.host_on_worktree_ready {
        line("hook", Some(format!("host.on_worktree_ready: {hook}")));
    }
    for hook in &d.hooks.sandbox_on_sandbox_ready {
        line("hook", Some(format!("sandbox.on_sandbox_ready: {hook}")));
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListItem {
    name: String,
    path: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    workdir: Option<PathBuf>,
    mounts: usize,
    /// The repository a run on it keeps its records in (the core decides).
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<serde_json::Value>,
}

/// `slipway workspace list`: every workspace file; one that cannot be read is
/// listed with its error rather than failing the listing.
pub fn list(store: &WorkspaceStore, json: bool) -> Result<ExitCode, CliError> {
    let mut items = Vec::new();
    for entry in store.list()? {
        let item = match store.load(&entry.name) {
            Ok(ws) => ListItem {
                name: entry.name,
                path: entry.path,
                workdir: ws.effective_workdir().map(PathBuf::from),
                mounts: ws.mounts.len(),
                repository: ws
                    .plan()
                    .as_ref()
                    .and_then(slipway_core::plan::workspace_repository),
                error: None,
            },
            Err(e) => ListItem {
                name: entry.name,
                path: entry.path,
                workdir: None,
                mounts: 0,
                repository: None,
                error: Some(serde_json::json!({ "kind": e.kind(), "message": e.to_string() })),
            },
        };
        items.push(item);
    }
    if json {
        print_json(&serde_json::json!({ "workspaces": items }));
    } else if items.is_empty() {
        stdoutln!(
            "No workspaces in {}; create one with `slipway workspace create NAME --mount SRC:DST`.",
            store.dir().display()
        );
    } else {
        let width = items.iter().map(|i| i.name.len()).max().unwrap_or(0);
        for i in &items {
            match &i.error {
                None => stdoutln!(
                    "{:<width$}  {} mount{}  workdir {}",
                    i.name,
                    i.mounts,
                    if i.mounts == 1 { "" } else { "s" },
                    i.workdir
                        .as_deref()
                        .map(|w| w.display().to_string())
                        .unwrap_or_else(|| "-".to_owned())
                ),
                Some(e) => stdoutln!(
                    "{:<width$}  cannot be read: {}",
                    i.name,
                    e["message"].as_str().unwrap_or_default()
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `slipway workspace rm NAME`.
pub fn rm(store: &WorkspaceStore, name: &str, json: bool) -> Result<ExitCode, CliError> {
    let path = store.remove(name)?;
    if json {
        print_json(&serde_json::json!({ "removed": name, "path": path }));
    } else {
        stdoutln!("Removed workspace {name} ({})", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
