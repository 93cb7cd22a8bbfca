// The `slipway lsp` protocol (docs/protocol.md), as types and request builders.
//
// Nothing here imports `vscode`: the extension and the protocol tests (which drive
// the real sidecar with vscode-jsonrpc) build every request with these functions.

/** The protocol version this shim was written against (`experimental.slipwayProtocol`). */
export const PROTOCOL_VERSION = 1;

/** The commands of `executeCommandProvider.commands`. */
export const COMMANDS = [
  'slipway.branches',
  'slipway.resolveSource',
  'slipway.createWorktree',
  'slipway.list',
  'slipway.run',
  'slipway.handoff',
  'slipway.cancel',
  'slipway.reply',
  'slipway.close',
  'slipway.status',
  'slipway.workspaces',
  'slipway.diff',
  'slipway.land',
  'slipway.discard',
  'slipway.runs',
  'slipway.log',
  'slipway.seen',
  'slipway.trust',
  'slipway.attempts',
  'slipway.landAttempt',
] as const;
/**
 * Commands sent when the sidecar has them, with a fallback when it answers "unknown
 * command" (an older `slipway`): not required of it.
 */
export const OPTIONAL_COMMANDS = ['slipway.attemptGroups'] as const;
export type CommandName = (typeof COMMANDS)[number] | (typeof OPTIONAL_COMMANDS)[number];

// ---------------------------------------------------------------------------
// Arguments

/**
 * The names the sidecar accepts (`capabilities.experimental.slipway` of `initialize`):
 * the extension offers these and keeps no lists of its own.
 */
export interface Vocabularies {
  protocol: number;
  agents: string[];
  sandboxes: string[];
  policies: string[];
  strategies: string[];
  landModes: string[];
}

/** The vocabularies of an `initialize` answer's `capabilities.experimental`, if it has them. */
export function readVocabularies(experimental: unknown): Vocabularies | undefined {
  const raw = isRecord(experimental) ? experimental.slipway : undefined;
  if (!isRecord(raw) || typeof raw.protocol !== 'number') {
    return undefined;
  }
  const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return {
    protocol: raw.protocol,
    agents: names(raw.agents),
    sandboxes: names(raw.sandboxes),
    policies: names(raw.policies),
    strategies: names(raw.strategies),
    landModes: names(raw.landModes),
  };
}

/** A source policy other than `named`, one of `Vocabularies.policies`. */
export type SourcePolicyName = string;
export type Source = { policy: 'named'; ref: string } | { policy: SourcePolicyName; ref?: undefined };

/** An agent provider other than `command`, one of `Vocabularies.agents`. */
export type AgentType = string;
export type PermissionMode = 'bypass' | 'acceptEdits' | 'plan' | 'default';

export interface AgentOptions {
  model?: string;
  effort?: string;
  permissionMode?: PermissionMode;
  binary?: string;
  extraArgs?: string[];
  resume?: { sessionId: string; fork?: boolean };
}

export type Agent = { type: 'command'; command: string[] } | ({ type: AgentType; command?: undefined } & AgentOptions);

/** `none`, or a container sandbox (`docker`, `docker-isolated`: one of `Vocabularies.sandboxes`). */
export type Sandbox = { type: 'none' } | { type: string; image: string; network?: string };

export type WorktreeStrategy = 'branch' | 'merge-to-head';
export type RunStrategy = WorktreeStrategy | 'head';

export interface Hooks {
  hostOnWorktreeReady?: string[];
  sandboxOnSandboxReady?: string[];
}

export interface RootArgs {
  root: string;
}

export interface ResolveSourceArgs {
  root: string;
  source: Source;
}

export interface CreateWorktreeArgs {
  root: string;
  /** Unset: the repository's and the user's defaults decide. */
  strategy?: WorktreeStrategy;
  branch?: string;
  base?: string;
  source?: Source;
  copy?: string[];
  agent?: Agent;
}

export type MountIsolation = 'shared' | 'worktree' | 'clone';

/** A mount of an inline workspace plan (`workspace` of `slipway.run`). */
export interface WorkspacePlanMount {
  src: string;
  dst: string;
  readonly?: boolean;
  isolation?: MountIsolation;
  source?: Source;
}

/** An inline workspace plan, instead of the name of a workspace file. */
export interface WorkspacePlan {
  name: string;
  workdir: string;
  mounts: WorkspacePlanMount[];
}

/** `sources` of `slipway.run`: the answers to `ask` mounts, keyed by the mount's `dst`. */
export type MountSources = Record<string, Source>;

/** `slipway.workspaces` takes no fields. */
export type WorkspacesArgs = Record<string, never>;

export interface RunArgs {
  /** The repository; a workspace run may leave it out (the sidecar decides from the workspace). */
  root?: string;
  /** Unset: the repository's and the user's defaults decide. */
  agent?: Agent;
  worktree?: string;
  strategy?: RunStrategy;
  branch?: string;
  base?: string;
  source?: Source;
  copy?: string[];
  sandbox?: Sandbox;
  prompt?: string;
  promptFile?: string;
  args?: Record<string, string>;
  maxIterations?: number;
  idleTimeoutSecs?: number;
  completionSignals?: string[];
  completionGraceSecs?: number;
  hookTimeoutSecs?: number;
  mergeTimeoutSecs?: number;
  hooks?: Hooks;
  /** Run on a workspace: the name of a workspace file, or an inline plan. */
  workspace?: string | WorkspacePlan;
  /** Answers to the workspace's `ask` mounts, keyed by `dst`. */
  sources?: MountSources;
  /** Run this many attempts as one group (§5.18): the answer is `GroupStarted`. */
  attempts?: number;
  /** A shell command run in each run's sandbox after the agent ends. */
  check?: string;
}

/** `slipway.run` with `attempts`. */
export type AttemptsRunArgs = RunArgs & { attempts: number };

export type HandoffArgs = RunArgs & { worktree: string };

export interface CancelArgs {
  runId: string;
  root?: string;
}

/** `slipway.reply`: the answer to a run that ended `needsInput`. */
export interface ReplyArgs {
  runId: string;
  answer: string;
  root?: string;
}

export interface CloseArgs {
  root: string;
  worktree: string;
  force?: boolean;
  /** Change nothing: answer what would be lost (`DryRunResult`). */
  dryRun?: boolean;
}

export interface DiffArgs {
  root: string;
  worktree: string;
  /** One file: the answer carries its texts instead of the file list. */
  path?: string;
  /** Another attempt's branch: the worktree is compared with its tip instead of the base. */
  against?: string;
}

export interface LandArgs {
  root: string;
  worktree: string;
  /** One of `Vocabularies.landModes`. */
  how: string;
  /** The host branch to land into; default: the host's current branch. */
  into?: string;
  message?: string;
}

export interface DiscardArgs {
  root: string;
  worktree: string;
  force?: boolean;
  /** Change nothing: answer what would be lost (`DryRunResult`). */
  dryRun?: boolean;
}

export interface SeenArgs {
  runIds: string[];
}

export interface RunsArgs {
  root: string;
}

export interface LogArgs {
  runId: string;
  root?: string;
  /** Byte offset to read from (default 0). */
  from?: number;
  /** Keep sending `slipway/log` notifications with what is appended, until the run ends. */
  follow?: boolean;
}

export interface StatusArgs {
  path: string;
  /** Ask for this agent's interactive command line in the worktree. */
  agent?: Agent;
}

// ---------------------------------------------------------------------------
// Results

export interface BranchInfo {
  name: string;
  kind: 'local' | 'remote';
  remote: string | null;
  commit: string;
  subject: string;
  time: number;
  isHead: boolean;
  isDefault: boolean;
  upstream: string | null;
}

export interface BranchesResult {
  branches: BranchInfo[];
}

export interface ResolveSourceResult {
  commit: string;
  ref: string | null;
  label: string;
}

export interface InteractiveCommand {
  argv: string[];
  cwd: string;
}

export interface CreateWorktreeResult {
  id: string;
  path: string;
  branch: string;
  baseCommit: string;
  sourceLabel: string;
  strategy: WorktreeStrategy;
  reused: boolean;
  notes: string[];
  interactiveCommand?: InteractiveCommand;
}

export type WorktreeState = 'active' | 'running' | 'preserved';

/** What to do next (§4.5), worded by this extension as buttons. */
export interface Action {
  kind: 'review' | 'land' | 'discard' | 'close' | 'reply' | 'trust';
  worktree?: string;
  runId?: string;
  /** The close or discard loses what is at risk. */
  force?: boolean;
}

/** What a close or discard would lose (§4.6). */
export interface AtRisk {
  uncommitted: string[];
  commits: { sha: string; subject: string }[];
}

/** `slipway.close` / `slipway.discard` with `dryRun`. */
export interface DryRunResult {
  branch: string;
  path?: string;
  atRisk: AtRisk;
  actions: Action[];
}

export interface WorktreeStatus {
  id: string;
  path: string;
  branch: string;
  strategy: WorktreeStrategy;
  dirty: boolean;
  changedFiles: number;
  changedPaths: string[];
  /** Commits not home yet, from where the branch meets its target now. */
  ahead: number;
  /** Commits the target has that the branch lacks. */
  behind?: number;
  actions?: Action[];
  state: WorktreeState;
  why: string | null;
  runId: string | null;
  health: 'ok' | 'missing';
  baseCommit: string;
}

/** A mount of a named workspace, as `slipway.workspaces` lists it. */
export interface WorkspaceMount {
  src: string;
  dst: string;
  readonly: boolean;
  isolation: MountIsolation;
  source: Source;
}

/** A named workspace; one whose file cannot be read has `error` instead of `mounts`. */
export interface WorkspaceInfo {
  name: string;
  path: string;
  workdir?: string | null;
  mounts?: WorkspaceMount[];
  /** The repository a run on it keeps its records in, as the sidecar decides it. */
  repository?: string | null;
  error?: string;
}

export interface WorkspacesResult {
  workspaces: WorkspaceInfo[];
}

/** A branch a merge-to-head run kept without a worktree. */
export interface KeptBranch {
  branch: string;
  commit: string;
  ahead: number;
  behind: number;
  actions: Action[];
}

export interface ListResult {
  worktrees: WorktreeStatus[];
  keptBranches?: KeptBranch[];
}

export interface RunStarted {
  runId: string;
}

/** `slipway.run` with `attempts`: the group and its runs, in attempt order. */
export interface GroupStarted {
  groupId: string;
  runIds: string[];
}

export interface AttemptsArgs {
  root: string;
  groupId: string;
}

/** What the check after the agent found (`check` of a run's result and of an attempt row). */
export interface CheckResult {
  command: string;
  passed: boolean;
  /** Null when it ran longer than `hookTimeoutSecs` and was stopped. */
  exitCode: number | null;
  /** Its last lines of output (stdout and stderr). */
  tail: string[];
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  costUsd?: number | null;
}

/** One attempt of a group as `slipway.attempts` compares it (§5.18). */
export interface AttemptRow {
  index: number;
  runId: string;
  agent: string;
  branch: string;
  /** False once the branch is gone (landed and discarded): its counts are zero then. */
  branchPresent: boolean;
  /** `running`, or how it ended; null when its run left no record. */
  status: string | null;
  check: CheckResult | null;
  commits: number;
  filesChanged: number;
  linesAdded: number;
  linesRemoved: number;
  seconds: number | null;
  usage: Usage | null;
}

export interface AttemptsResult {
  groupId: string;
  /** Seconds since the epoch. */
  created: number;
  sourceCommit: string;
  strategy: WorktreeStrategy;
  into: string | null;
  check: string | null;
  attempts: { index: number; runId: string; agent: string; branch: string }[];
  rows: AttemptRow[];
}

/** One group of `slipway.attemptGroups`, newest first. */
export interface AttemptGroup {
  groupId: string;
  /** Seconds since the epoch. */
  created: number;
  strategy: WorktreeStrategy;
  into: string | null;
  sourceCommit?: string;
  check?: string | null;
  /** The prompt's first line; absent for a prompt file. */
  prompt?: string | null;
  /** How many attempts it has. */
  attempts: number;
  /** How many of them are running. */
  running: number;
}

export interface AttemptGroupsResult {
  groups: AttemptGroup[];
}

export interface LandAttemptArgs {
  root: string;
  groupId: string;
  index: number;
  /** One of `Vocabularies.landModes`; default merge. */
  how?: string;
  /** Discard the others even when their work would be lost. */
  force?: boolean;
}

export interface LandAttemptResult {
  groupId: string;
  index: number;
  landed: LandResult;
  /** The attempts discarded. */
  discarded: number[];
  /** The attempts kept, and why (work found nowhere else, uncommitted files). */
  kept: { index: number; branch: string; reason: string }[];
}

export interface CancelResult {
  runId: string;
  status: 'cancelling' | 'finished';
}

export interface CloseRemoved {
  removed: true;
  id: string;
  path: string;
  branch: string;
  branchDeleted: boolean;
  branchKept: string | null;
  actions?: Action[];
}

export interface ClosePreserved {
  removed: false;
  id: string;
  branch: string;
  preservedPath: string;
  reason: string;
  changedPaths: string[];
  commands: string[];
  actions?: Action[];
}

export type CloseResult = CloseRemoved | ClosePreserved;

export type DiffFileStatus = 'added' | 'modified' | 'deleted' | 'renamed';

/** One file of `slipway.diff`: what the worktree holds against its base. */
export interface DiffFile {
  path: string;
  oldPath?: string | null;
  status: DiffFileStatus;
  additions: number;
  deletions: number;
  binary: boolean;
  /** Changed by the branch's commits since the base. */
  committed: boolean;
  /** Changed in the working tree (staged, unstaged or untracked). */
  uncommitted: boolean;
  /** Set when the file makes programs run on the host once it is in a checkout. */
  sensitive?: Sensitivity | null;
}

/** Why a file runs programs on the host (`slipway.toml`, git hooks, editor and shell config). */
export interface Sensitivity {
  /** `repositoryConfig`, `gitHooks`, `editorConfig` or `shellEnvironment`. */
  kind: string;
  why: string;
}

/** A file that runs programs which a run's commits or a land changed. */
export interface SensitiveChange extends Sensitivity {
  path: string;
  status: 'added' | 'modified' | 'deleted';
}

export interface DiffResult {
  /** Where the branch meets its target now (with `against`: that branch's tip). */
  base: string;
  /** The branch compared with, when `against` was given. */
  against?: string;
  recordedBase?: string;
  target?: string;
  head: string;
  files: DiffFile[];
  actions?: Action[];
}

/** `slipway.diff` with `path`: one file's texts (absent on that side, or binary). */
export interface DiffFileText {
  path: string;
  baseText?: string | null;
  worktreeText?: string | null;
  binary: boolean;
}

export interface LandResult {
  landed: true;
  into: string;
  commit: string;
  kind: string;
  actions?: Action[];
  /** Files the land changed that run programs on the host (§5.16). */
  sensitiveChanges?: SensitiveChange[];
}

/** A repository file that runs programs, as `untrustedConfig` and `slipway.trust` name it (§5.16). */
export interface TrustFile {
  path: string;
  role: 'repositoryConfig' | 'promptTemplate';
  /** Git's blob id of its content; null when the file is gone. */
  hash: string | null;
  /** What was approved at this place before. */
  trustedHash: string | null;
  commands: { source: string; command: string }[];
  settings: { key: string; value: string }[];
  symlinkTo?: string;
}

/** `slipway.trust`: approve these files in the content shown (`hash`), or one gone (`removed`). */
export interface TrustArgs {
  root?: string;
  files?: { path: string; hash?: string; removed?: boolean }[];
  dryRun?: boolean;
}

export interface TrustResult {
  trusted: TrustFile[];
  dryRun: boolean;
}

export type DiscardResult = CloseResult;

/** One run of `slipway.runs`. */
export interface RunInfo {
  runId: string;
  /** `running`, or a `RunStatus`. */
  status: string;
  agent: string | { type: string } | null;
  sandbox: string | { type: string } | null;
  branch: string | null;
  worktreePath: string | null;
  /** Seconds since the epoch, or an RFC 3339 time. */
  startedAt: number | string | null;
  endedAt: number | string | null;
  iterations: number;
  lastLine: string | null;
  /** How long it has run (until its end); absent from an older sidecar. */
  elapsedSecs?: number;
  /** Its agent's latest activity; null before the agent said anything. */
  activity?: Activity | null;
  /** What it asks, when it ended `needsInput`. */
  question?: Question;
  /** The run whose question it answers. */
  replyTo?: string;
  /** The agent's session once the run ended and its agent named one; absent from an older sidecar. */
  sessionId?: string | null;
}

export interface RunsResult {
  runs: RunInfo[];
}

export interface LogResult {
  text: string;
  /** The byte offset after `text`: the `from` of the next read. */
  next: number;
  /** The run has ended and the log is complete. */
  done: boolean;
}

export interface PathStatus {
  inWorktree: boolean;
  root: string | null;
  id: string | null;
  branch: string | null;
  dirty: boolean;
  state?: WorktreeState;
  runId: string | null;
  dirtyPreserved?: number;
  /** The worktree's path (in a worktree). */
  path?: string;
  /** When `agent` was asked for and the path is in a worktree. */
  interactiveCommand?: InteractiveCommand;
}

// ---------------------------------------------------------------------------
// Notifications

export interface RunSummary {
  runId: string;
  state: 'running' | 'finished';
  branch: string | null;
  worktreePath: string | null;
}

export interface RepositoryStatus {
  root: string;
  commonDir: string;
  worktrees: WorktreeStatus[];
  runs: RunSummary[];
  running: number;
  dirtyPreserved: number;
}

/** What a run's agent is doing and has used so far (§6.6). */
export interface Activity {
  /** The current step in people's words; absent before the first one. */
  step?: string;
  /** Files its edit tools touched, sorted, at most 200. */
  files: string[];
  filesTouched: number;
  turns: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Present when the agent reports a cost. */
  costUsd?: number;
}

/** `slipway/runActivity` params. */
export interface RunActivityNotification {
  root: string;
  runId: string;
  activity: Activity;
}

/** `slipway/status` params. */
export interface StatusNotification {
  repositories: RepositoryStatus[];
}

export type RunStatus = 'completed' | 'failed' | 'timedOut' | 'cancelled' | 'needsInput';

/** What a `needsInput` run asks (§6.2). */
export interface Question {
  text: string;
  /** `asked`, `permissionDenied` or `waitingForInput`. */
  reason: string;
  sessionId?: string;
}

/** One finding of the check after a run (`result.quarantined` of the run record). */
export interface QuarantineFinding {
  path: string;
  /** `nestedGit`, `escapingSymlink`, `newGitlink`, `refusedEntry`, `specialFile` or `setIdBits`. */
  finding: string;
  detail: string;
  movedTo: string | null;
}

/** `slipway/runFinished` params. */
export interface RunFinished {
  runId: string;
  root: string;
  status: RunStatus;
  commits: { sha: string }[];
  branch: string;
  worktreePath: string;
  preservedWorktreePath: string | null;
  keptBranch: string | null;
  logFile: string;
  error: { kind: string; message: string } | null;
  iterations: number;
  completionSignal: string | null;
  sessionId: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  /** What the check after the run found and moved away (when the sidecar sends it). */
  quarantined?: QuarantineFinding[];
  /** What to do with what the run left (§4.5). */
  actions?: Action[];
  /** Files the run's commits change that run programs on the host (§5.16). */
  sensitiveChanges?: SensitiveChange[];
  /** The host branch the work was merged into (`merge-to-head`). */
  mergedInto?: string | null;
  /** Every commit the merge back brought into `mergedInto`; absent when empty. */
  mergedCommits?: { sha: string }[];
  /** What the check after the agent found; absent without `check`. */
  check?: CheckResult;
  /** What the agent asks (status `needsInput`). */
  question?: Question;
  /** The run whose question this run answers. */
  replyTo?: string;
}

/** `slipway/log` params: text appended to a followed run's log. */
export interface LogNotification {
  runId: string;
  text: string;
  /** Byte offset of `text` in the log, when sent. */
  from?: number;
  /** Byte offset after `text`. */
  next?: number;
  /** The run ended: nothing more comes. */
  done?: boolean;
}

export const STATUS_NOTIFICATION = 'slipway/status';
export const RUN_FINISHED_NOTIFICATION = 'slipway/runFinished';
export const LOG_NOTIFICATION = 'slipway/log';
export const RUN_ACTIVITY_NOTIFICATION = 'slipway/runActivity';

/** The `$/progress` token of a run, and back. */
export function progressToken(runId: string): string {
  return `slipway-${runId}`;
}
export function runIdOfToken(token: string | number): string | undefined {
  return typeof token === 'string' && token.startsWith('slipway-run-') ? token.slice('slipway-'.length) : undefined;
}

// ---------------------------------------------------------------------------
// Errors

/** One `ask` mount of a workspace run's `sourceBranchRequired`: its `dst` and the branches to pick from. */
export interface MountChoices {
  dst: string;
  choices: BranchInfo[];
}

/** `data` of a slipway error answer (§7.1). Every field but `kind` is optional. */
export interface ErrorData {
  kind: string;
  /** Whole branch entries, as `slipway.branches` lists them. */
  choices?: BranchInfo[];
  /** A workspace run's `ask` mounts, in mount order (`sourceBranchRequired`). */
  mounts?: MountChoices[];
  worktreePath?: string | null;
  root?: string;
  branch?: string;
  holder?: { pid: number; branch: string; time: number };
  /** What to do next (§4.5). */
  actions?: Action[];
  /** What the user can do, for machines (§7.1): `{do: 'give', field}`, … */
  hints?: { do: string; field?: string }[];
  /** `untrustedConfig`: each file as the user would approve it now. */
  files?: TrustFile[];
}

/** The kinds whose `data.choices` feed the picker-and-retry of the `ask` flow (§8). */
export const SOURCE_ERROR_KINDS: readonly string[] = [
  'sourceBranchRequired',
  'detachedHead',
  'unbornHead',
  'noDefaultBranch',
  'unknownRef',
];

/** A slipway command's error answer, with its `data.kind`. */
export class SlipwayError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly data: ErrorData | undefined,
  ) {
    super(message);
    this.name = 'SlipwayError';
  }
  get kind(): string | undefined {
    return this.data?.kind;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The branch entries of a `choices` array (anything without a name is dropped). */
function branchEntries(raw: unknown[]): BranchInfo[] {
  return raw.filter((c): c is BranchInfo => isRecord(c) && typeof c.name === 'string');
}

/** Reads the error data of a JSON-RPC error (vscode-jsonrpc's `ResponseError` or alike). */
export function toSlipwayError(error: unknown): SlipwayError | undefined {
  if (error instanceof SlipwayError) {
    return error;
  }
  if (!isRecord(error) || typeof error.message !== 'string' || typeof error.code !== 'number') {
    return undefined;
  }
  const raw = error.data;
  let data: ErrorData | undefined;
  if (isRecord(raw) && typeof raw.kind === 'string') {
    data = { kind: raw.kind };
    if (Array.isArray(raw.choices)) {
      data.choices = branchEntries(raw.choices);
    }
    if (Array.isArray(raw.mounts)) {
      data.mounts = raw.mounts.filter(isRecord).flatMap((m) =>
        typeof m.dst === 'string' && Array.isArray(m.choices) ? [{ dst: m.dst, choices: branchEntries(m.choices) }] : [],
      );
    }
    if (typeof raw.worktreePath === 'string' || raw.worktreePath === null) {
      data.worktreePath = raw.worktreePath;
    }
    if (typeof raw.root === 'string') {
      data.root = raw.root;
    }
    if (typeof raw.branch === 'string') {
      data.branch = raw.branch;
    }
    if (Array.isArray(raw.actions)) {
      data.actions = raw.actions.filter(isRecord).filter((a) => typeof a.kind === 'string') as unknown as Action[];
    }
    if (Array.isArray(raw.hints)) {
      data.hints = raw.hints.filter(isRecord).filter((h) => typeof h.do === 'string') as unknown as { do: string; field?: string }[];
    }
    if (Array.isArray(raw.files)) {
      data.files = raw.files.filter(
        (f): f is TrustFile & Record<string, unknown> => isRecord(f) && typeof f.path === 'string' && (typeof f.hash === 'string' || f.hash === null),
      );
    }
    const holder = raw.holder;
    if (isRecord(holder) && typeof holder.pid === 'number' && typeof holder.branch === 'string' && typeof holder.time === 'number') {
      data.holder = { pid: holder.pid, branch: holder.branch, time: holder.time };
    }
  }
  return new SlipwayError(error.message, error.code, data);
}

// ---------------------------------------------------------------------------
// Requests

/** `workspace/executeCommand` params: exactly one object argument (§3). */
export interface CommandRequest<A, R> {
  command: CommandName;
  arguments: [A];
  /** Phantom: the answer's type. Never sent. */
  readonly __result?: R;
}

function request<A, R>(command: CommandName, args: A): CommandRequest<A, R> {
  return { command, arguments: [args] };
}

export const requests = {
  branches: (args: RootArgs) => request<RootArgs, BranchesResult>('slipway.branches', args),
  resolveSource: (args: ResolveSourceArgs) => request<ResolveSourceArgs, ResolveSourceResult>('slipway.resolveSource', args),
  createWorktree: (args: CreateWorktreeArgs) => request<CreateWorktreeArgs, CreateWorktreeResult>('slipway.createWorktree', args),
  list: (args: RootArgs) => request<RootArgs, ListResult>('slipway.list', args),
  run: (args: RunArgs) => request<RunArgs, RunStarted>('slipway.run', args),
  handoff: (args: HandoffArgs) => request<HandoffArgs, RunStarted>('slipway.handoff', args),
  cancel: (args: CancelArgs) => request<CancelArgs, CancelResult>('slipway.cancel', args),
  reply: (args: ReplyArgs) => request<ReplyArgs, RunStarted>('slipway.reply', args),
  close: (args: CloseArgs) => request<CloseArgs, CloseResult>('slipway.close', args),
  status: (args: StatusArgs) => request<StatusArgs, PathStatus>('slipway.status', args),
  workspaces: (args: WorkspacesArgs = {}) => request<WorkspacesArgs, WorkspacesResult>('slipway.workspaces', args),
  diff: (args: DiffArgs & { path?: undefined }) => request<DiffArgs, DiffResult>('slipway.diff', args),
  diffFile: (args: DiffArgs & { path: string }) => request<DiffArgs, DiffFileText>('slipway.diff', args),
  land: (args: LandArgs) => request<LandArgs, LandResult>('slipway.land', args),
  discard: (args: DiscardArgs) => request<DiscardArgs, DiscardResult>('slipway.discard', args),
  closeDryRun: (args: CloseArgs) => request<CloseArgs, DryRunResult>('slipway.close', { ...args, dryRun: true }),
  discardDryRun: (args: DiscardArgs) => request<DiscardArgs, DryRunResult>('slipway.discard', { ...args, dryRun: true }),
  seen: (args: SeenArgs) => request<SeenArgs, { runIds: string[]; held: number }>('slipway.seen', args),
  runs: (args: RunsArgs) => request<RunsArgs, RunsResult>('slipway.runs', args),
  log: (args: LogArgs) => request<LogArgs, LogResult>('slipway.log', args),
  trust: (args: TrustArgs) => request<TrustArgs, TrustResult>('slipway.trust', args),
  runAttempts: (args: AttemptsRunArgs) => request<AttemptsRunArgs, GroupStarted>('slipway.run', args),
  attempts: (args: AttemptsArgs) => request<AttemptsArgs, AttemptsResult>('slipway.attempts', args),
  attemptGroups: (args: RootArgs) => request<RootArgs, AttemptGroupsResult>('slipway.attemptGroups', args),
  landAttempt: (args: LandAttemptArgs) => request<LandAttemptArgs, LandAttemptResult>('slipway.landAttempt', args),
};

/** Whatever sends `workspace/executeCommand`: a LanguageClient or a raw jsonrpc connection. */
export interface CommandTransport {
  executeCommand(params: { command: string; arguments: unknown[] }): Promise<unknown>;
}

/** Typed access to the commands over a transport. Errors become `SlipwayError`. */
export class SlipwayApi {
  constructor(private readonly transport: CommandTransport) {}

  async send<A, R>(req: CommandRequest<A, R>): Promise<R> {
    try {
      // The answer's shape is the protocol's promise; the builders fix R per command.
      return (await this.transport.executeCommand({ command: req.command, arguments: req.arguments })) as R;
    } catch (error) {
      throw toSlipwayError(error) ?? error;
    }
  }

  branches(root: string): Promise<BranchesResult> {
    return this.send(requests.branches({ root }));
  }
  resolveSource(args: ResolveSourceArgs): Promise<ResolveSourceResult> {
    return this.send(requests.resolveSource(args));
  }
  createWorktree(args: CreateWorktreeArgs): Promise<CreateWorktreeResult> {
    return this.send(requests.createWorktree(args));
  }
  list(root: string): Promise<ListResult> {
    return this.send(requests.list({ root }));
  }
  run(args: RunArgs): Promise<RunStarted> {
    return this.send(requests.run(args));
  }
  handoff(args: HandoffArgs): Promise<RunStarted> {
    return this.send(requests.handoff(args));
  }
  cancel(args: CancelArgs): Promise<CancelResult> {
    return this.send(requests.cancel(args));
  }
  /** Answers a `needsInput` run: a new run resumes its session; its id. */
  reply(args: ReplyArgs): Promise<RunStarted> {
    return this.send(requests.reply(args));
  }
  close(args: CloseArgs): Promise<CloseResult> {
    return this.send(requests.close(args));
  }
  /** With `agent`, the answer carries that agent's interactive command line in the worktree. */
  status(path: string, agent?: Agent): Promise<PathStatus> {
    return this.send(requests.status(agent === undefined ? { path } : { path, agent }));
  }
  workspaces(): Promise<WorkspacesResult> {
    return this.send(requests.workspaces({}));
  }
  /** The files a worktree changed against its base (or against the tip of another attempt's branch). */
  diff(root: string, worktree: string, against?: string): Promise<DiffResult> {
    return this.send(requests.diff(against === undefined ? { root, worktree } : { root, worktree, against }));
  }
  /** One file's base (or `against`) and worktree texts. */
  diffFile(root: string, worktree: string, path: string, against?: string): Promise<DiffFileText> {
    return this.send(requests.diffFile(against === undefined ? { root, worktree, path } : { root, worktree, path, against }));
  }
  land(args: LandArgs): Promise<LandResult> {
    return this.send(requests.land(args));
  }
  discard(args: DiscardArgs): Promise<DiscardResult> {
    return this.send(requests.discard(args));
  }
  /** What a discard would lose; nothing changes. */
  discardDryRun(args: DiscardArgs): Promise<DryRunResult> {
    return this.send(requests.discardDryRun(args));
  }
  /** What a close would lose; nothing changes. */
  closeDryRun(args: CloseArgs): Promise<DryRunResult> {
    return this.send(requests.closeDryRun(args));
  }
  /** The user has been shown these runs' ends: no other editor is told. */
  seen(runIds: string[]): Promise<{ runIds: string[]; held: number }> {
    return this.send(requests.seen({ runIds }));
  }
  runs(root: string): Promise<RunsResult> {
    return this.send(requests.runs({ root }));
  }
  log(args: LogArgs): Promise<LogResult> {
    return this.send(requests.log(args));
  }
  trust(args: TrustArgs): Promise<TrustResult> {
    return this.send(requests.trust(args));
  }
  /** Starts `attempts` runs of one request as a group. */
  runAttempts(args: AttemptsRunArgs): Promise<GroupStarted> {
    return this.send(requests.runAttempts(args));
  }
  /** A group's attempts side by side. */
  attempts(root: string, groupId: string): Promise<AttemptsResult> {
    return this.send(requests.attempts({ root, groupId }));
  }
  /** The repository's groups of attempts, newest first (a newer sidecar's). */
  attemptGroups(root: string): Promise<AttemptGroupsResult> {
    return this.send(requests.attemptGroups({ root }));
  }
  /** Lands one attempt and discards the others. */
  landAttempt(args: LandAttemptArgs): Promise<LandAttemptResult> {
    return this.send(requests.landAttempt(args));
  }
}

/** A request the sidecar does not know (an older `slipway`): JSON-RPC "method not found" or an unknown command. */
export function isUnknownCommand(error: unknown): boolean {
  const e = toSlipwayError(error);
  return e !== undefined && (e.code === -32601 || e.kind === 'unknownCommand' || /unknown command/i.test(e.message));
}

/**
 * The `ask` flow (§8): send a command with `source`; when the answer is a source error
 * with `choices`, let the user pick one and send the same command again with `named`.
 * `pick` answers undefined when the user dismissed the picker; then so does this.
 */
export async function withSourcePick<T>(
  call: (source: Source | undefined) => Promise<T>,
  source: Source | undefined,
  pick: (error: SlipwayError) => Promise<string | undefined>,
): Promise<T | undefined> {
  try {
    return await call(source);
  } catch (error) {
    const e = toSlipwayError(error);
    if (e === undefined || e.kind === undefined || !SOURCE_ERROR_KINDS.includes(e.kind) || e.data?.choices === undefined) {
      throw error;
    }
    const ref = await pick(e);
    if (ref === undefined) {
      return undefined;
    }
    return call({ policy: 'named', ref });
  }
}

/** Whether the sidecar's error asks for `field` (`data.hints`: `{do: 'give', field}`). */
export function asksFor(error: unknown, field: string): boolean {
  const e = toSlipwayError(error);
  return (e?.data?.hints ?? []).some((h) => h.do === 'give' && h.field === field);
}

/**
 * Sends a command; when the sidecar's plan says a branch is missing (the strategy is
 * `branch`: `give branch`), asks for one (`ask` answers undefined when dismissed) and
 * sends it again with it. Only what the plan says is missing is asked.
 */
export async function withBranchAsk<T>(
  call: (branch: string | undefined) => Promise<T>,
  branch: string | undefined,
  ask: () => Promise<string | undefined>,
): Promise<T | undefined> {
  try {
    return await call(branch);
  } catch (error) {
    if (branch !== undefined || !asksFor(error, 'branch')) {
      throw error;
    }
    const asked = await ask();
    return asked === undefined ? undefined : call(asked);
  }
}

/**
 * The `ask` flow of a workspace run (§5.5): send the run; when the answer is
 * `sourceBranchRequired` with `data.mounts`, let the user answer every mount (in order),
 * then send the run again with those answers as `sources`. `pickAll` answers undefined
 * when the user dismissed a picker; then so does this.
 */
export async function withMountSourcePicks<T>(
  call: (sources: MountSources | undefined) => Promise<T>,
  pickAll: (mounts: MountChoices[], error: SlipwayError) => Promise<MountSources | undefined>,
): Promise<T | undefined> {
  try {
    return await call(undefined);
  } catch (error) {
    const e = toSlipwayError(error);
    const mounts = e?.data?.mounts;
    if (e === undefined || e.kind !== 'sourceBranchRequired' || mounts === undefined || mounts.length === 0) {
      throw error;
    }
    const sources = await pickAll(mounts, e);
    if (sources === undefined) {
      return undefined;
    }
    return call(sources);
  }
}

/** The files of an `untrustedConfig` answer, or undefined for any other error. */
export function untrustedFiles(error: unknown): TrustFile[] | undefined {
  const e = toSlipwayError(error);
  return e?.kind === 'untrustedConfig' && e.data?.files !== undefined && e.data.files.length > 0 ? e.data.files : undefined;
}

/**
 * The trust flow (§5.16): send the command; when the answer is `untrustedConfig`, let
 * the user look at what each file would run and set (`ask` answers true for Trust),
 * approve exactly the content shown with `slipway.trust` (a file that changed since is
 * shown again), then send the command again. Undefined when the user said Cancel.
 */
export async function withTrust<T>(
  call: () => Promise<T>,
  ask: (files: TrustFile[]) => Promise<boolean>,
  approve: (files: TrustArgs['files']) => Promise<unknown>,
): Promise<T | undefined> {
  // One more round per file at most: a run can need the config and a template.
  for (let round = 0; ; round++) {
    try {
      return await call();
    } catch (error) {
      let files = untrustedFiles(error);
      if (files === undefined || round >= 3) {
        throw error;
      }
      for (;;) {
        if (!(await ask(files))) {
          return undefined;
        }
        try {
          await approve(files.map((f) => (f.hash === null ? { path: f.path, removed: true } : { path: f.path, hash: f.hash })));
          break;
        } catch (trustError) {
          // It changed after it was shown: show it as it is now.
          files = untrustedFiles(trustError);
          if (files === undefined) {
            throw trustError;
          }
        }
      }
    }
  }
}
