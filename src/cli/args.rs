//! The command-line grammar (DESIGN.md §3).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Private git worktrees and sandboxes for AI coding agents.
#[derive(Debug, Parser)]
#[command(name = "slipway", version, about, long_about = None)]
pub struct Cli {
    /// A path inside the repository (or one of its worktrees); default: the current directory.
    #[arg(long, global = true, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Print one JSON document on stdout instead of text for people.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List local and remote-tracking branches.
    Branches(BranchesArgs),
    /// Resolve a source branch policy without creating anything.
    Resolve(SourceArgs),
    /// Create, list and close worktrees.
    #[command(subcommand)]
    Worktree(WorktreeCommand),
    /// Run an agent in a worktree (or straight in HEAD) and bring its work back.
    Run(Box<RunArgs>),
    /// Create a demo repository in a temporary folder and run a scripted agent in it.
    Demo(DemoArgs),
    /// Serve the editor sidecar protocol (JSON-RPC, LSP framing) on stdin/stdout.
    Lsp(LspArgs),
    /// Print a run's log; with --follow, keep printing until the run ends.
    #[command(alias = "log")]
    Logs(LogsArgs),
    /// What a worktree holds against its base, committed and uncommitted.
    Diff(DiffArgs),
    /// Bring a worktree's branch into a host branch (merge, squash or rebase), all or nothing.
    Land(LandArgs),
    /// Remove a worktree and its branch; uncommitted files or unique commits need --force.
    Discard(CloseArgs),
    /// List runs: running ones, and finished ones with their status.
    Runs,
    /// Answer a run that ended asking (status needsInput): resumes the same
    /// session in the same worktree and sandbox, as a new run.
    Reply(ReplyArgs),
    /// Compare a group of attempts (`run --attempts`); with --land N, land one
    /// and discard the others.
    Attempts(AttemptsArgs),
    /// Approve the repository's slipway.toml (or prompt templates) in its present content:
    /// shows the file, its hash and what it would run, then records the approval.
    Trust(TrustArgs),
    /// Docker images for the docker sandboxes.
    #[command(subcommand)]
    Image(ImageCommand),
    /// The Docker engines of your config (`[[engines]]` in config.toml): url,
    /// limit, runs in progress, and whether each answers.
    Engines,
    /// Long-lived sandboxes: create once, run many times, exec, close.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Workspaces: several host folders, each shared or isolated, for one agent.
    #[command(subcommand)]
    Workspace(super::workspace::WorkspaceCommand),
    /// Deletes what is in a repository's worktree trash (slipway starts this
    /// itself, detached, after a close).
    #[command(name = "empty-trash", hide = true)]
    EmptyTrash {
        /// The repository's `.slipway` folder.
        slipway_dir: PathBuf,
    },
}

#[derive(Debug, Args, Clone)]
pub struct SourceArgs {
    /// Where a new branch starts: host-head, current-branch, default, named, ask (or named:REF).
    #[arg(long, value_name = "POLICY")]
    pub source: Option<String>,
    /// The branch for the named policy: `feature/x` (local) or `origin/feature/x` (remote-tracking).
    #[arg(long = "ref", value_name = "REF")]
    pub reference: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Create a worktree (or return the existing one for the branch).
    Create(CreateArgs),
    /// List slipway worktrees, with their status and any orphans.
    List,
    /// Close a worktree: removed when clean, preserved when it has uncommitted changes.
    Close(CloseArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("strategy").required(true).args(["branch", "merge_to_head"])))]
pub struct CreateArgs {
    /// Work on this branch (created when new).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Start a new branch here (only used when the branch is new).
    #[arg(long, value_name = "REF", requires = "branch")]
    pub base: Option<String>,
    /// Work on a temporary branch that a run merges back into the host's current branch.
    #[arg(long)]
    pub merge_to_head: bool,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Copy these host paths (globs) into the new worktree.
    #[arg(long = "copy", value_name = "GLOB")]
    pub copy: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CloseArgs {
    /// The worktree: its id, its path or its branch (discard: or a kept branch).
    pub worktree: String,
    /// Remove it even when something would be lost (it is lost).
    #[arg(long)]
    pub force: bool,
    /// Change nothing: list what would be lost (uncommitted files, commits found nowhere else).
    #[arg(long, conflicts_with = "force")]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StrategyArg {
    /// Straight into the host checkout.
    Head,
    /// A temporary branch merged back into the host's current branch.
    MergeToHead,
    /// A named branch, kept.
    Branch,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SandboxArg {
    /// A host process in the worktree.
    None,
    /// A Docker container with the worktree bind-mounted.
    Docker,
    /// A Docker container with code copied in and out.
    DockerIsolated,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum AgentArg {
    Command,
    ClaudeCode,
    Codex,
    Opencode,
    Pi,
    Cursor,
    Copilot,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where the agent's commits land (default: merge-to-head, or branch when --branch is given).
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyArg>,
    /// The branch for the branch strategy.
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Start a new branch here (branch strategy, only when the branch is new).
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Run in an existing worktree (id, path or branch); it is kept afterwards.
    #[arg(long, value_name = "ID")]
    pub worktree: Option<String>,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Copy these host paths (globs) into a new worktree.
    #[arg(long = "copy", value_name = "GLOB")]
    pub copy: Vec<String>,
    /// Where the agent runs.
    /// (Default: none, or the workspace's.)
    #[arg(long, value_enum)]
    pub sandbox: Option<SandboxArg>,
    /// The container image (docker sandboxes); it must be on the engine already.
    #[arg(long)]
    pub image: Option<String>,
    /// The container network (docker sandboxes; default: the engine's).
    #[arg(long)]
    pub network: Option<String>,
    /// Memory the container may use, swap included: bytes or 512m, 4g
    /// (default: half the machine's memory; 0: no limit).
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<u64>,
    /// Processes and threads the container may run at once (default: 4096; 0: no limit).
    #[arg(long, value_name = "N")]
    pub pids_limit: Option<u64>,
    /// Run on this workspace (`slipway workspace create`): several mounts, each
    /// shared or isolated; the run's records live in the repository of the mount
    /// covering the workdir unless --repo says otherwise.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["worktree", "in_sandbox", "branch"])]
    pub workspace: Option<String>,
    /// Run in this long-lived sandbox (`slipway sandbox create`); it brings its
    /// worktree and kind along.
    #[arg(long, value_name = "SANDBOX_ID", conflicts_with_all = ["worktree", "image"])]
    pub in_sandbox: Option<String>,
    /// Run on this Docker engine of the user's config (`slipway engines`),
    /// waiting for one of its slots (default: the first engine with a free slot).
    #[arg(long, value_name = "NAME", conflicts_with = "in_sandbox")]
    pub engine: Option<String>,
    /// The agent; repeated, one group of attempts per agent (same prompt).
    /// (Default: command, or the workspace's.)
    #[arg(long, value_enum)]
    pub agent: Vec<AgentArg>,
    /// Run this many attempts (of each --agent) from one source commit, each on
    /// its own branch BRANCH/1…N, worktree and sandbox, in parallel, as one group.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub attempts: Option<u32>,
    /// A command run in the sandbox after the agent ends (tests, a linter); its
    /// exit status and last lines of output are part of the result.
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,
    /// The agent's model.
    #[arg(long)]
    pub model: Option<String>,
    /// The agent's reasoning effort (or variant), in its own words.
    #[arg(long)]
    pub effort: Option<String>,
    /// Continue this agent session (Claude Code, Codex, OpenCode, Pi, Cursor, Copilot).
    #[arg(long, value_name = "SESSION_ID")]
    pub resume: Option<String>,
    /// With --resume: fork the session instead of continuing it.
    #[arg(long, requires = "resume")]
    pub fork: bool,
    /// The prompt, used literally.
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// A prompt template file ({{NAME}}, {{SOURCE_BRANCH}}, {{TARGET_BRANCH}}, !`cmd`).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// A template argument.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// Iterations at most (default 1).
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Stop the agent after this many seconds without output (default 600).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,
    /// Stop the agent once it reported this many tokens (input plus output).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop the agent once its reported cost reaches this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop the agent once the run has lasted this long (seconds, or 90s, 30m, 2h).
    #[arg(long, value_name = "DUR", value_parser = slipway_core::run::parse_duration)]
    pub max_duration: Option<u64>,
    /// Output that ends the run early (repeatable; default <promise>COMPLETE</promise>).
    #[arg(long = "completion-signal", value_name = "S")]
    pub completion_signals: Vec<String>,
    /// Seconds of silence after the completion signal before the agent is stopped (default 60).
    #[arg(long, value_name = "SECS")]
    pub completion_grace: Option<u64>,
    /// A command run on the host in the worktree before the sandbox starts (repeatable).
    #[arg(long = "on-worktree-ready", value_name = "CMD")]
    pub on_worktree_ready: Vec<String>,
    /// A command run in the sandbox before the agent (repeatable).
    #[arg(long = "on-sandbox-ready", value_name = "CMD")]
    pub on_sandbox_ready: Vec<String>,
    /// Seconds each hook and prompt command may take (default 300).
    #[arg(long, value_name = "SECS")]
    pub hook_timeout: Option<u64>,
    /// Seconds merge-to-head may take before it would start changing the host (default 300).
    #[arg(long, value_name = "SECS")]
    pub merge_timeout: Option<u64>,
    /// Print the checked plan (every decision, defaults filled in) and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Use this run id (for callers that track runs).
    #[arg(long, hide = true)]
    pub run_id: Option<String>,
    /// Run the request in this JSON file (written by the sidecar for detached runs).
    #[arg(long, hide = true, value_name = "FILE")]
    pub request_file: Option<PathBuf>,
    /// With --request-file: run the attempts of this prepared group (the sidecar's
    /// `attempts`), each with the request's agent.
    #[arg(long, hide = true, value_name = "GROUP_ID", requires = "request_file")]
    pub group: Option<String>,
    /// The program of the `command` agent and its arguments; for other agents,
    /// extra arguments passed to the agent's CLI.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the demo repository here instead of a temporary folder.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LspArgs {
    /// Write logs here instead of stderr (level from SLIPWAY_LOG, default info).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Accepted and ignored: language clients add it; stdio is the only transport.
    #[arg(long, hide = true)]
    pub stdio: bool,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// A file to approve instead of the repository's slipway.toml (a prompt template,
    /// or a slipway.toml elsewhere).
    #[arg(long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Show what would be approved, and record nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The worktree: its id, its path or its branch.
    pub worktree: String,
    /// One file (relative to the worktree root): its unified diff against the base.
    #[arg(long, value_name = "P")]
    pub path: Option<String>,
    /// Compare with the tip of this other worktree (id, path or branch)
    /// instead of the base: two attempts side by side.
    #[arg(long, value_name = "W")]
    pub against: Option<String>,
}

#[derive(Debug, Args)]
pub struct LandArgs {
    /// The worktree: its id, its path or its branch.
    pub worktree: String,
    /// merge (fast-forward when possible), squash (one commit) or rebase (commits replayed).
    #[arg(long, value_enum)]
    pub how: HowArg,
    /// The host branch to land in; default: the host's current branch.
    #[arg(long, value_name = "B")]
    pub into: Option<String>,
    /// The merge or squash commit's message.
    #[arg(long, value_name = "M")]
    pub message: Option<String>,
    /// Stop, unchanged, when working out the land takes longer (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum HowArg {
    /// A merge commit, or a fast-forward when the target has not moved.
    Merge,
    /// One commit with the branch's whole change.
    Squash,
    /// The branch's commits replayed on top.
    Rebase,
}

#[derive(Debug, Args)]
pub struct AttemptsArgs {
    /// The group id (`att-…`), as `run --attempts` printed it; without it,
    /// every group of the repository, newest first.
    pub group: Option<String>,
    /// Land this attempt (1…N), then discard the others; a discard that would
    /// lose work is refused, and reported, unless --force.
    #[arg(long, value_name = "N", requires = "group")]
    pub land: Option<usize>,
    /// How to land: merge, squash or rebase.
    #[arg(long, value_enum, default_value = "merge", requires = "land")]
    pub how: HowArg,
    /// Discard the other attempts even though their commits are lost.
    #[arg(long, requires = "land")]
    pub force: bool,
}

impl From<HowArg> for slipway_core::review::land::LandHow {
    fn from(how: HowArg) -> Self {
        use slipway_core::review::land::LandHow;
        match how {
            HowArg::Merge => LandHow::Merge,
            HowArg::Squash => LandHow::Squash,
            HowArg::Rebase => LandHow::Rebase,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplyArgs {
    /// The run that asked (see `slipway runs`).
    pub run: String,
    /// The answer, sent to the agent as the next message of its session.
    pub answer: String,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The run id (see `slipway runs`); default: the newest run.
    pub run: Option<String>,
    /// Keep printing new lines until the run ends.
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build an agent image from your Dockerfile through the Engine API, with the
    /// build arguments UID and GID set to yours.
    Build(ImageBuildArgs),
}

#[derive(Debug, Args)]
pub struct ImageBuildArgs {
    /// The build context (default: the current directory).
    pub context: Option<PathBuf>,
    /// The Dockerfile, relative to the context.
    #[arg(long = "file", short = 'f', default_value = "Dockerfile")]
    pub file: String,
    /// The image tag.
    #[arg(long, short = 't', default_value = "slipway-agent:latest")]
    pub tag: String,
    /// A build argument (repeatable).
    #[arg(long = "build-arg", value_name = "KEY=VALUE")]
    pub build_args: Vec<String>,
    /// The network of RUN steps (default: the engine's).
    #[arg(long)]
    pub network: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Start a long-lived sandbox for an existing worktree.
    Create(SandboxCreateArgs),
    /// List long-lived sandboxes.
    List,
    /// Run one command in a sandbox, in its worktree.
    Exec(SandboxExecArgs),
    /// Remove a sandbox's container (its worktree stays).
    Close(SandboxIdArgs),
}

#[derive(Debug, Args)]
pub struct SandboxCreateArgs {
    /// The worktree (id, path or branch).
    #[arg(long)]
    pub worktree: String,
    /// docker or docker-isolated.
    #[arg(long, value_enum)]
    pub sandbox: SandboxArg,
    /// The image; it must be on the engine already.
    #[arg(long)]
    pub image: String,
    /// The container network (default: the engine's).
    #[arg(long)]
    pub network: Option<String>,
    /// Memory the container may use, swap included: bytes or 512m, 4g
    /// (default: half the machine's memory; 0: no limit).
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory: Option<u64>,
    /// Processes and threads the container may run at once (default: 4096; 0: no limit).
    #[arg(long, value_name = "N")]
    pub pids_limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// The sandbox id.
    pub id: String,
    /// The command and its arguments.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SandboxIdArgs {
    /// The sandbox id.
    pub id: String,
}

fn parse_memory(text: &str) -> Result<u64, String> {
    slipway_core::run::Limits::parse_memory(text)
}

#[derive(Debug, Args)]
pub struct BranchesArgs {
    /// Also count each local branch's commits ahead of and behind its upstream.
    #[arg(long)]
    pub ahead_behind: bool,
}
