// Pure rendering: what the pickers, the status bar and the notifications show, from
// the sidecar's answers and notifications. No `vscode` import, so node:test covers it.

import * as path from 'node:path';
import { activityTooltip, epochSeconds, formatCost, formatElapsed, formatTokens, shortStep, usageParts } from './activity';
import { literal } from './shown';

export { epochSeconds };
import type {
  Activity,
  Agent,
  AttemptGroup,
  AttemptRow,
  BranchInfo,
  ClosePreserved,
  DiffFile,
  DryRunResult,
  LandAttemptResult,
  LandResult,
  LogNotification,
  QuarantineFinding,
  RunInfo,
  MountChoices,
  MountSources,
  RepositoryStatus,
  RunFinished,
  Sandbox,
  SensitiveChange,
  Source,
  StatusNotification,
  TrustFile,
  WorkspaceInfo,
  WorktreeStatus,
} from './protocol';

// ---------------------------------------------------------------------------
// Branch picker

export type BranchPickEntry =
  | { type: 'separator'; label: string }
  | { type: 'branch'; label: string; description: string; detail: string; ref: string; info: BranchInfo };

/** "3 minutes ago" and the like, from seconds since the epoch. */
export function relativeTime(time: number, now: number): string {
  const secs = Math.max(0, Math.round(now - time));
  const units: [number, string][] = [
    [365 * 86400, 'year'],
    [30 * 86400, 'month'],
    [7 * 86400, 'week'],
    [86400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, unit] of units) {
    if (secs >= size) {
      const n = Math.floor(secs / size);
      return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
    }
  }
  return 'just now';
}

/**
 * QuickPick entries from a `slipway.branches` answer: a "Local" separator and the local
 * branches, then a "Remote" separator and the remote-tracking ones, in the sidecar's order.
 * A local and a remote branch of one name are two entries (they are different starting
 * points). HEAD and the default are marked in the description.
 */
export function branchItems(branches: BranchInfo[], now: number = Date.now() / 1000): BranchPickEntry[] {
  const entries: BranchPickEntry[] = [];
  for (const [kind, title] of [
    ['local', 'Local'],
    ['remote', 'Remote'],
  ] as const) {
    const group = branches.filter((b) => b.kind === kind);
    if (group.length === 0) {
      continue;
    }
    entries.push({ type: 'separator', label: title });
    for (const b of group) {
      const marks: string[] = [];
      if (b.isHead) {
        marks.push('HEAD');
      }
      if (b.isDefault) {
        marks.push('default');
      }
      if (b.upstream) {
        marks.push(`tracks ${literal(b.upstream)}`);
      }
      entries.push({
        type: 'branch',
        label: `${kind === 'local' ? '$(git-branch)' : '$(cloud)'} ${literal(b.name)}`,
        description: marks.join(' · '),
        detail: `${b.commit.slice(0, 10)} · ${literal(b.subject)} · ${relativeTime(b.time, now)}`,
        ref: b.name,
        info: b,
      });
    }
  }
  return entries;
}

// ---------------------------------------------------------------------------
// Workspaces

export interface WorkspacePickEntry {
  label: string;
  description: string;
  detail: string;
  workspace: WorkspaceInfo;
}

function sourceLabel(source: Source): string {
  return source.ref ?? source.policy;
}

/** QuickPick entries for `slipway.workspaces`: name, mounts and workdir; a broken file says why. */
export function workspaceItems(workspaces: WorkspaceInfo[]): WorkspacePickEntry[] {
  return workspaces.map((w) => {
    if (w.error !== undefined || w.mounts === undefined) {
      return { label: `$(warning) ${literal(w.name)}`, description: 'cannot be read', detail: literal(w.error ?? w.path), workspace: w };
    }
    const n = w.mounts.length;
    const asks = w.mounts.filter((m) => m.source.policy === 'ask').length;
    const parts = [`${n} mount${n === 1 ? '' : 's'}`];
    if (asks > 0) {
      parts.push(`${asks} ask${asks === 1 ? 's' : ''} for a branch`);
    }
    if (w.workdir) {
      parts.push(`workdir ${literal(w.workdir)}`);
    }
    return {
      label: `$(folder-library) ${literal(w.name)}`,
      description: parts.join(' · '),
      detail: w.mounts.map((m) => `${literal(m.src)} → ${literal(m.dst)} (${m.isolation}, ${literal(sourceLabel(m.source))})`).join('  '),
      workspace: w,
    };
  });
}

/** One branch picker of a workspace run: which mount it answers, and what it shows. */
export interface MountPickSpec {
  dst: string;
  title: string;
  placeholder: string;
  step: number;
  totalSteps: number;
  items: BranchPickEntry[];
}

/**
 * The pickers for a `sourceBranchRequired` error's `data.mounts`: one per mount, in the
 * sidecar's (mount) order, each titled with the mount's `dst` and offering its `choices`
 * (whole branch entries, so each shows its tip).
 */
export function mountPickSpecs(mounts: MountChoices[], workspace?: string, now: number = Date.now() / 1000): MountPickSpec[] {
  return mounts.map((m, i) => ({
    dst: m.dst,
    title: `Start ${m.dst} from…${workspace ? ` (workspace ${workspace})` : ''}`,
    placeholder: `Source branch for the mount ${m.dst}`,
    step: i + 1,
    totalSteps: mounts.length,
    items: branchItems(m.choices, now),
  }));
}

/**
 * The `sources` of the second `slipway.run`: each picked ref as a `named` source under its
 * mount's `dst`. Undefined when an answer is missing (a picker was dismissed) or names
 * no picker.
 */
export function sourcesFromAnswers(
  specs: readonly { dst: string }[],
  answers: readonly (string | undefined)[],
): MountSources | undefined {
  if (answers.length !== specs.length) {
    return undefined;
  }
  const sources: MountSources = {};
  for (const [i, spec] of specs.entries()) {
    const ref = answers[i];
    if (ref === undefined || ref === '') {
      return undefined;
    }
    sources[spec.dst] = { policy: 'named', ref };
  }
  return sources;
}

// ---------------------------------------------------------------------------
// Worktree picker

export interface WorktreePickEntry {
  label: string;
  description: string;
  detail: string;
  worktree: WorktreeStatus;
}

export function worktreeDescription(w: WorktreeStatus): string {
  const parts: string[] = [w.state];
  if (w.health === 'missing') {
    parts.push('missing');
  }
  if (w.dirty) {
    parts.push(`${w.changedFiles} changed`);
  }
  if (w.ahead > 0) {
    parts.push(`${w.ahead} commit${w.ahead === 1 ? '' : 's'}`);
  }
  if (w.strategy === 'merge-to-head') {
    parts.push('merge-to-head');
  }
  return parts.join(' · ');
}

export function worktreeItems(worktrees: WorktreeStatus[]): WorktreePickEntry[] {
  return worktrees.map((w) => ({
    label: `${w.state === 'running' ? '$(sync~spin)' : w.dirty ? '$(circle-filled)' : '$(git-branch)'} ${literal(w.branch)}`,
    description: worktreeDescription(w),
    detail: literal(w.why ? `${w.path} — ${w.why}` : w.path),
    worktree: w,
  }));
}

// ---------------------------------------------------------------------------
// Status bar

/**
 * slipway's own glyph (contributes.icons, from media/slipway-icon.woff): the status
 * item must not look like Git's branch item beside it.
 */
export const STATUS_ICON = '$(slipway-logo)';

export interface StatusContext {
  /** Paths to match against worktrees, most specific first: the active editor's file, then the workspace folders. */
  paths: string[];
  /** The worktree this window last created or opened, used when no path is in a worktree. */
  focus?: string;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** Work is at risk: dirty preserved worktrees, or the current worktree is missing. */
  warning: boolean;
  current?: WorktreeStatus;
  repository?: RepositoryStatus;
}

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The worktree that holds the first of `paths` that is in one, with its repository. */
export function findWorktree(
  status: StatusNotification,
  paths: string[],
): { worktree: WorktreeStatus; repository: RepositoryStatus } | undefined {
  for (const p of paths) {
    for (const repository of status.repositories) {
      for (const worktree of repository.worktrees) {
        if (isInside(p, worktree.path)) {
          return { worktree, repository };
        }
      }
    }
  }
  return undefined;
}

/** The status bar item, from the latest `slipway/status` notification. */
export function statusView(status: StatusNotification | undefined, ctx: StatusContext): StatusView {
  if (status === undefined) {
    return { text: `${STATUS_ICON} slipway`, tooltip: 'slipway: waiting for the sidecar', warning: false };
  }
  const found = findWorktree(status, ctx.focus ? [...ctx.paths, ctx.focus] : ctx.paths);
  const repository =
    found?.repository ??
    status.repositories.find((r) => ctx.paths.some((p) => isInside(p, r.root))) ??
    status.repositories[0];
  const current = found?.worktree;
  const parts: string[] = [];
  const tip: string[] = [];
  if (current) {
    parts.push(`${STATUS_ICON} ${literal(current.branch)}${current.dirty ? '*' : ''}`);
    tip.push(`Worktree ${current.branch} (${current.id})`, current.path, worktreeDescription(current));
    if (current.why) {
      tip.push(current.why);
    }
  } else {
    const n = repository?.worktrees.length ?? 0;
    parts.push(`${STATUS_ICON} ${n} worktree${n === 1 ? '' : 's'}`);
    tip.push(repository ? `Repository ${repository.root}` : 'No repository watched');
  }
  if (current?.state === 'running') {
    parts.push('$(sync~spin) agent');
    tip.push(`Agent running: ${current.runId ?? ''}`.trim());
  }
  const othersRunning = (repository?.running ?? 0) - (current?.state === 'running' ? 1 : 0);
  if (othersRunning > 0) {
    parts.push(`$(sync~spin) ${othersRunning} run${othersRunning === 1 ? '' : 's'}`);
    tip.push(`${othersRunning} other run${othersRunning === 1 ? '' : 's'} in progress`);
  }
  const dirtyPreserved = repository?.dirtyPreserved ?? 0;
  if (dirtyPreserved > 0) {
    parts.push(`$(warning) ${dirtyPreserved}`);
    tip.push(
      `${dirtyPreserved} preserved worktree${dirtyPreserved === 1 ? ' has' : 's have'} uncommitted changes (see Problems)`,
    );
  }
  const warning = dirtyPreserved > 0 || current?.health === 'missing';
  tip.push('Click to list worktrees');
  return { text: parts.join(' '), tooltip: tip.join('\n'), warning, current, repository };
}

// ---------------------------------------------------------------------------
// Run finished

/** `Close Worktree…` asks first (it deletes the worktree); `Dismiss` only hides the notification. */
export type RunAction = 'Reply…' | 'Review' | 'Land…' | 'Open' | 'Show Log';

export interface RunFinishedView {
  severity: 'info' | 'warning' | 'error';
  message: string;
  actions: RunAction[];
}

export function runFinishedView(p: RunFinished): RunFinishedView {
  // A reply is a run of its own: which question it answered tells it apart from the first.
  const where = `${p.branch ? ` on ${p.branch}` : ''}${p.replyTo ? ` (the reply to ${p.replyTo})` : ''}`;
  // What landed, not only what the run made: a handed-off worktree's earlier commits
  // come home in the same merge.
  const merged = p.mergedCommits ?? [];
  const n = merged.length > 0 ? merged.length : p.commits.length;
  const into = merged.length > 0 && p.mergedInto ? ` merged into ${p.mergedInto}` : '';
  const commits = `${n} commit${n === 1 ? '' : 's'}${into}`;
  let severity: RunFinishedView['severity'];
  let message: string;
  switch (p.status) {
    case 'completed':
      severity = 'info';
      message = `slipway: run completed${where}: ${commits}`;
      break;
    case 'cancelled':
      severity = 'warning';
      message = `slipway: run cancelled${where}: ${commits}`;
      break;
    case 'timedOut':
      severity = 'error';
      message = `slipway: run timed out${where}: ${commits}`;
      break;
    case 'needsInput':
      // The question is what the person must read: first.
      severity = 'warning';
      message = `slipway: the agent${where} asks: ${p.question?.text ?? '(no text)'} (${commits} so far)`;
      break;
    default:
      severity = 'error';
      message =
        p.error?.kind === 'sessionBusy'
          ? `slipway: run failed${where}: the agent session is busy (sessionBusy)`
          : `slipway: run failed${where}: ${commits}`;
  }
  if (p.error && p.status !== 'cancelled') {
    message += ` — ${p.error.message}`;
  }
  if (p.keptBranch) {
    message += ` — ${p.keptBranch}`;
  }
  // What to do next is the sidecar's (`actions`): review and land what is not home yet.
  const actions: RunAction[] = [];
  if (p.status === 'needsInput') {
    actions.push('Reply…');
  }
  const kinds = new Set((p.actions ?? []).map((a) => a.kind));
  if (kinds.has('review')) {
    actions.push('Review');
  }
  if (kinds.has('land')) {
    actions.push('Land…');
  }
  if (p.preservedWorktreePath) {
    actions.push('Open');
  }
  actions.push('Show Log');
  return { severity, message, actions };
}

/** The warning for what the check after a run found and moved away; undefined when nothing. */
export function quarantineView(p: RunFinished): { message: string; detail: string } | undefined {
  const found = p.quarantined ?? [];
  if (found.length === 0) {
    return undefined;
  }
  const what: Record<string, string> = {
    nestedGit: 'a .git inside the worktree',
    escapingSymlink: 'a symlink that leaves the worktree',
    newGitlink: 'a submodule entry the run added',
    refusedEntry: 'an entry the sandbox returned that was not written',
    specialFile: 'a device node, fifo or socket (removed)',
    setIdBits: 'set-id bits (cleared)',
  };
  const line = (f: QuarantineFinding): string =>
    `${f.path}: ${what[f.finding] ?? f.finding}${f.detail ? ` (${f.detail})` : ''}${f.movedTo ? ` — moved to ${f.movedTo}` : ' — reported only'}`;
  const where = p.branch ? ` on ${p.branch}` : '';
  return {
    message: `slipway: the run${where} left ${found.length} thing${found.length === 1 ? '' : 's'} your git would execute; quarantined: ${found.map((f) => f.path).join(', ')}`,
    detail: found.map(line).join('\n'),
  };
}

/** One line for a file a change brought in that runs programs on the host. */
export function sensitiveLine(c: SensitiveChange): string {
  const how: Record<string, string> = { added: 'added', modified: 'changed', deleted: 'removed' };
  return `${c.path} ${how[c.status] ?? c.status}: ${c.why}`;
}

/** The warning for files a run or a land brought in that run programs; undefined when none. */
export function sensitiveView(changes: SensitiveChange[] | undefined, what: string): { message: string; detail: string } | undefined {
  if (!changes || changes.length === 0) {
    return undefined;
  }
  return {
    message: `slipway: ${what} changed ${changes.length === 1 ? 'a file' : `${changes.length} files`} that run${changes.length === 1 ? 's' : ''} programs on your machine — read before your tools do: ${changes.map((c) => c.path).join(', ')}`,
    detail: changes.map(sensitiveLine).join('\n'),
  };
}

/** One row of the trust picker: an answer (Cancel, Trust), a file, or what a file does. */
export type TrustRow =
  | { type: 'separator'; label: string }
  | { type: 'row'; label: string; description?: string; detail?: string; answer?: 'cancel' | 'trust' };

/**
 * The picker asking to trust repository files (`untrustedConfig`): Cancel first (the
 * active row, so Enter cancels), then Trust, then each file with every command it would
 * run and every default it would set. Only the Trust row approves.
 */
export function trustView(files: TrustFile[]): { title: string; placeholder: string; rows: TrustRow[] } {
  const names = files.map((f) => path.posix.basename(f.path)).join(', ');
  const rows: TrustRow[] = [
    { type: 'row', label: '$(close) Cancel', description: 'run nothing', answer: 'cancel' },
    {
      type: 'row',
      label: '$(shield) Trust',
      description: `approve ${files.map((f) => (f.hash ? `${literal(path.posix.basename(f.path))} at ${f.hash.slice(0, 10)}` : `${literal(path.posix.basename(f.path))} gone`)).join(', ')}`,
      detail: 'only if you have read it and want this to run on your machine',
      answer: 'trust',
    },
  ];
  for (const f of files) {
    const link = f.symlinkTo ? ` (a symlink to ${literal(f.symlinkTo)})` : '';
    const state = f.hash === null ? 'is gone: the defaults it set no longer apply' : f.trustedHash ? 'has changed since you trusted it' : 'is not trusted yet';
    rows.push({ type: 'separator', label: `${literal(f.path)}${link} ${state}` });
    for (const c of f.commands) {
      rows.push({ type: 'row', label: `runs: ${literal(c.command)}`, description: literal(c.source) });
    }
    for (const setting of f.settings) {
      rows.push({ type: 'row', label: `sets: ${literal(setting.key)} = ${literal(setting.value)}` });
    }
  }
  return {
    title: `Trust ${names}? It runs programs or chooses the sandbox`,
    placeholder: 'Enter cancels; pick Trust to approve exactly this content',
    rows,
  };
}

/** The confirmation before `Close Worktree…` of a run-finished notification. */
export function closeConfirmView(branch: string, worktreePath: string): { message: string; detail: string; button: string } {
  return {
    message: `Close the worktree of ${branch}?`,
    detail: `${worktreePath} is removed when it is clean (the branch ${branch} stays). A worktree with uncommitted changes is kept, and you are asked again.`,
    button: 'Close Worktree',
  };
}

// ---------------------------------------------------------------------------
// The Slipway view

export interface TreeItemView {
  label: string;
  description: string;
  tooltip: string;
  /** A codicon id (ThemeIcon). */
  icon: string;
  contextValue: string;
}

/** A worktree row of the view: the branch, its state, and what it holds. */
export function worktreeNodeView(w: WorktreeStatus): TreeItemView {
  const tip = [`${w.branch} (${w.id})`, w.path, worktreeDescription(w)];
  if (w.why) {
    tip.push(w.why);
  }
  return {
    label: w.branch,
    description: worktreeDescription(w),
    tooltip: tip.join('\n'),
    icon: w.state === 'running' ? 'sync~spin' : w.health === 'missing' ? 'warning' : w.dirty ? 'circle-filled' : 'repo-forked',
    contextValue: w.state === 'running' ? 'slipway.worktree.running' : 'slipway.worktree',
  };
}

const STATUS_LETTER: Record<string, string> = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' };
const STATUS_ICON_OF: Record<string, string> = { added: 'diff-added', modified: 'diff-modified', deleted: 'diff-removed', renamed: 'diff-renamed' };

/** A changed-file row under its worktree: the file name, its folder, status and counts. */
export function diffFileView(f: DiffFile): TreeItemView {
  const dir = path.posix.dirname(f.path);
  const letter = STATUS_LETTER[f.status] ?? '?';
  const counts = f.binary ? 'binary' : `+${f.additions} −${f.deletions}`;
  const where = [f.committed ? 'committed' : '', f.uncommitted ? 'uncommitted' : ''].filter((x) => x !== '').join(' + ');
  const description = [dir === '.' ? '' : dir, letter, counts].filter((x) => x !== '').join(' · ');
  const tip = [`${f.path} — ${f.status}${f.oldPath ? ` from ${f.oldPath}` : ''}`, counts];
  if (where) {
    tip.push(where);
  }
  if (f.sensitive) {
    tip.push(`Runs programs: ${f.sensitive.why}`);
  }
  return {
    label: path.posix.basename(f.path),
    description: f.sensitive ? `${description} · runs programs` : description,
    tooltip: tip.join('\n'),
    // A file that runs programs stands out from the other changes.
    icon: f.sensitive ? 'warning' : (STATUS_ICON_OF[f.status] ?? 'file'),
    contextValue: 'slipway.file',
  };
}

function nameOf(x: string | { type: string } | null): string {
  return x === null ? '' : typeof x === 'string' ? x : x.type;
}

const RUN_ICON: Record<string, string> = {
  running: 'sync~spin',
  completed: 'pass',
  failed: 'error',
  timedOut: 'watch',
  cancelled: 'circle-slash',
  needsInput: 'question',
};

// People's words for the statuses that are protocol keys ("needsInput" read as a typo).
const RUN_WORD: Record<string, string> = {
  timedOut: 'timed out',
  needsInput: 'needs input',
};

/** How long a run has gone: until now while it runs, else the sidecar's `elapsedSecs`. */
export function runElapsed(r: RunInfo, now: number): number | undefined {
  const started = epochSeconds(r.startedAt);
  if (r.status === 'running' && started !== undefined) {
    return Math.max(r.elapsedSecs ?? 0, now - started);
  }
  if (r.elapsedSecs !== undefined) {
    return r.elapsedSecs;
  }
  const ended = epochSeconds(r.endedAt);
  return started !== undefined && ended !== undefined ? ended - started : undefined;
}

/**
 * A run row of the view: branch (or id), status, the latest step while it runs,
 * elapsed time and usage; everything else in the tooltip. `live` is a newer
 * activity than the one `slipway.runs` answered (from `slipway/runActivity`);
 * `answered`: a run that asked has a reply, and waits no more.
 */
export function runNodeView(r: RunInfo, now: number = Date.now() / 1000, live?: Activity, answered = false): TreeItemView {
  const started = epochSeconds(r.startedAt);
  const agent = nameOf(r.agent);
  const sandbox = nameOf(r.sandbox);
  const activity = live ?? r.activity ?? undefined;
  const running = r.status === 'running';
  const elapsed = runElapsed(r, now);
  const asking = r.status === 'needsInput' && !answered;
  const word = r.status === 'needsInput' && answered ? 'answered' : (RUN_WORD[r.status] ?? r.status);
  const parts = [word];
  if (running && activity?.step) {
    parts.push(shortStep(activity.step));
  }
  if (agent) {
    parts.push(agent + (sandbox && sandbox !== 'none' ? ` in ${sandbox}` : ''));
  }
  if (running && elapsed !== undefined) {
    parts.push(formatElapsed(elapsed));
  } else if (started !== undefined) {
    parts.push(relativeTime(started, now));
  }
  parts.push(...usageParts(activity));
  const tip = [r.runId, `${word}, ${r.iterations} iteration${r.iterations === 1 ? '' : 's'}`];
  if (r.question) {
    tip.push(`${asking ? 'asks' : 'asked'}: ${r.question.text}`);
  }
  if (elapsed !== undefined) {
    tip.push(`${running ? 'running for' : 'took'} ${formatElapsed(elapsed)}`);
  }
  if (r.worktreePath) {
    tip.push(r.worktreePath);
  }
  tip.push(...activityTooltip(activity));
  if (r.lastLine) {
    tip.push(`last line: ${r.lastLine}`);
  }
  return {
    label: r.branch || r.runId,
    description: parts.join(' · '),
    tooltip: tip.join('\n'),
    icon: r.status === 'needsInput' && answered ? 'comment' : (RUN_ICON[r.status] ?? 'circle-outline'),
    contextValue: running ? 'slipway.run.running' : 'slipway.run',
  };
}

// ---------------------------------------------------------------------------
// Attempts

/** A group the view can list: from `slipway.attemptGroups`, or from a `slipway.run` answer this window sent. */
export type GroupSummary = Pick<AttemptGroup, 'groupId' | 'created' | 'attempts' | 'running'> &
  Partial<Pick<AttemptGroup, 'strategy' | 'into' | 'prompt'>>;

/** A group row: its prompt (else its id), how many attempts, how many still run, and its age. */
export function attemptGroupView(g: GroupSummary, now: number = Date.now() / 1000): TreeItemView {
  const prompt = g.prompt?.split('\n')[0].trim();
  const parts = [`${g.attempts} attempt${g.attempts === 1 ? '' : 's'}`];
  if (g.running > 0) {
    parts.push(`${g.running} running`);
  }
  if (g.strategy === 'merge-to-head' && g.into) {
    parts.push(`→ ${g.into}`);
  }
  parts.push(relativeTime(g.created, now));
  const tip = [`Group ${g.groupId}`, parts.join(' · ')];
  if (g.prompt) {
    tip.push(`prompt: ${g.prompt}`);
  }
  return {
    label: prompt ? shortStep(prompt, 50) : g.groupId,
    description: parts.join(' · '),
    tooltip: tip.join('\n'),
    icon: g.running > 0 ? 'sync~spin' : 'versions',
    contextValue: 'slipway.attemptGroup',
  };
}

/** "check ✓" or "check ✗ (exit 1)"; undefined when the attempt has no check result. */
function checkPart(r: AttemptRow): string | undefined {
  if (r.check === null) {
    return undefined;
  }
  if (r.check.passed) {
    return 'check ✓';
  }
  return `check ✗${r.check.exitCode === null ? ' (stopped)' : ''}`;
}

/**
 * An attempt row: `#index agent`, then its state when it is not a plain completion,
 * check ✓/✗, files and lines changed, time and usage ("check ✓ · 3 files +10 −2 · 41s ·
 * 12k tok"); the branch, the check's command and output tail in the tooltip. `landed`:
 * this window landed it.
 */
export function attemptRowView(r: AttemptRow, landed = false): TreeItemView {
  const parts: string[] = [];
  if (landed) {
    parts.push('landed');
  }
  if (r.status !== 'completed') {
    parts.push(r.status ?? 'no record');
  }
  const check = checkPart(r);
  if (check !== undefined) {
    parts.push(check);
  }
  parts.push(`${r.filesChanged} file${r.filesChanged === 1 ? '' : 's'} +${r.linesAdded} −${r.linesRemoved}`);
  if (r.seconds !== null) {
    parts.push(formatElapsed(r.seconds));
  }
  const tokens = r.usage ? r.usage.inputTokens + r.usage.outputTokens : 0;
  if (tokens > 0) {
    parts.push(`${formatTokens(tokens)} tok`);
  }
  if (typeof r.usage?.costUsd === 'number') {
    parts.push(formatCost(r.usage.costUsd));
  }
  const tip = [
    `Attempt ${r.index}: ${r.branch}`,
    `${r.agent}, ${r.status ?? 'no record'}, ${r.commits} commit${r.commits === 1 ? '' : 's'}`,
    r.runId,
  ];
  if (r.check !== null) {
    tip.push(`check \`${r.check.command}\`: ${r.check.passed ? 'passed' : r.check.exitCode === null ? 'stopped (too long)' : `failed (exit ${r.check.exitCode})`}`);
    tip.push(...r.check.tail.slice(-8).map((l) => `  ${l}`));
  }
  const running = r.status === 'running';
  return {
    label: `#${r.index} ${r.agent}`,
    description: parts.join(' · '),
    tooltip: tip.join('\n'),
    icon: running ? 'sync~spin' : r.check ? (r.check.passed ? 'pass' : 'error') : (RUN_ICON[r.status ?? ''] ?? 'circle-outline'),
    // A running attempt cannot be landed yet.
    contextValue: running ? 'slipway.attempt.running' : 'slipway.attempt',
  };
}

/** The picker of "Diff Against Attempt…": every other attempt whose branch is there. */
export function attemptPickItems(rows: readonly AttemptRow[], except: number): { label: string; description: string; row: AttemptRow }[] {
  return rows
    .filter((r) => r.index !== except && r.branchPresent)
    .map((r) => ({ label: `#${r.index} ${literal(r.agent)}`, description: `${literal(r.branch)} · ${attemptRowView(r).description}`, row: r }));
}

/**
 * The modal before "Land This Attempt": what lands where and which attempts go; one
 * button per land mode the sidecar names.
 */
export function landAttemptConfirm(
  r: AttemptRow,
  rows: readonly AttemptRow[],
  modes: readonly string[],
): { message: string; detail: string; buttons: { title: string; how: string }[] } {
  const others = rows.filter((x) => x.index !== r.index && x.branchPresent);
  const lines = [`${r.branch} (${attemptRowView(r).description}) lands into the host's branch.`];
  if (others.length > 0) {
    lines.push('', 'Then the others are discarded:', ...others.map((x) => `  #${x.index} ${x.branch}`));
    lines.push('', 'One whose work is found nowhere else, or with uncommitted files, is kept, and you are told why.');
  }
  return {
    message: `Land attempt #${r.index} and discard the other${others.length === 1 ? '' : 's'}?`,
    detail: lines.join('\n'),
    buttons: modes.map((how) => ({ title: `Land (${how})`, how })),
  };
}

/**
 * What `slipway.landAttempt` did: landed, discarded, and what was kept with why. When
 * some were kept (their work is found nowhere else), `discardKept` is the button that
 * sends the land again with `force`.
 */
export function attemptLandedView(
  branch: string,
  a: LandAttemptResult,
): { message: string; detail: string; warning: boolean; discardKept: string } {
  const parts = [landedMessage(`attempt #${a.index} (${branch})`, a.landed)];
  if (a.discarded.length > 0) {
    parts.push(`discarded ${a.discarded.map((i) => `#${i}`).join(', ')}`);
  }
  if (a.kept.length > 0) {
    parts.push(`kept ${a.kept.map((k) => `#${k.index}`).join(', ')}`);
  }
  return {
    message: parts.join('; '),
    detail: a.kept.map((k) => `#${k.index} ${k.branch} was kept: ${k.reason}`).join('\n'),
    warning: a.kept.length > 0,
    discardKept: `Discard ${a.kept.length === 1 ? 'It' : 'Them'} Too (Lose the Work)`,
  };
}

// ---------------------------------------------------------------------------
// Land and discard

const LAND_DESCRIPTION: Record<string, string> = {
  merge: 'fast-forward, else a merge commit',
  squash: "one commit with the branch's changes",
  rebase: "the branch's commits replayed on the target",
};

/** The land-mode picker, in the sidecar's order (`landModes` of initialize): no list of our own. */
export function landModeItems(modes: readonly string[], branch: string, into: string): { label: string; description: string; how: string }[] {
  return modes.map((how) => ({
    label: how,
    description: `${LAND_DESCRIPTION[how] ?? how}: ${literal(branch)} → ${literal(into)}`,
    how,
  }));
}

export function landedMessage(branch: string, r: LandResult): string {
  const changed = r.sensitiveChanges ?? [];
  const read = changed.length > 0 ? ` — it changed files that run programs, read them first: ${changed.map((c) => c.path).join(', ')}` : '';
  return `slipway: ${branch} landed into ${r.into} (${r.kind}, ${r.commit.slice(0, 10)})${read}`;
}

/**
 * The modal before a discard that would lose work: exactly what the sidecar's dry run
 * lists (`atRisk`). Undefined when nothing would be lost: then nothing is asked. `keep`
 * comes first, so the dialog's default (Enter) keeps the work.
 */
export function discardRiskView(d: DryRunResult): { message: string; detail: string; keep: string; lose: string } | undefined {
  const { uncommitted, commits } = d.atRisk;
  if (uncommitted.length === 0 && commits.length === 0) {
    return undefined;
  }
  const what: string[] = [];
  if (commits.length > 0) {
    what.push(`${commits.length} commit${commits.length === 1 ? '' : 's'}`);
  }
  if (uncommitted.length > 0) {
    what.push(`${uncommitted.length} uncommitted file${uncommitted.length === 1 ? '' : 's'}`);
  }
  const lines = [
    `Discarding ${d.branch} removes ${d.path ?? 'the branch'}${d.path ? ` and deletes the branch ${d.branch}` : ''}, and loses:`,
  ];
  const shownCommits = commits.slice(0, 20);
  lines.push(...shownCommits.map((c) => `  commit ${c.sha.slice(0, 10)} ${c.subject}`));
  if (commits.length > shownCommits.length) {
    lines.push(`  … and ${commits.length - shownCommits.length} more commits`);
  }
  const shownFiles = uncommitted.slice(0, 20);
  lines.push(...shownFiles.map((p) => `  uncommitted ${p}`));
  if (uncommitted.length > shownFiles.length) {
    lines.push(`  … and ${uncommitted.length - shownFiles.length} more files`);
  }
  lines.push('', 'Commits on another branch, a remote-tracking ref or a tag, or already landed, are not listed: they stay.');
  return {
    message: `Discard ${d.branch}? ${what.join(' and ')} would be lost`,
    detail: lines.join('\n'),
    keep: 'Keep It',
    lose: 'Discard and Lose It',
  };
}

// ---------------------------------------------------------------------------
// Diff documents

/** What a `slipway-base:` document serves: one side of one file of one worktree. */
export interface DiffDocRef {
  root: string;
  worktree: string;
  path: string;
  side: 'base' | 'worktree';
  /** The base side is this branch's tip (another attempt) instead of the base. */
  against?: string;
}

export const DIFF_SCHEME = 'slipway-base';

/** The query of a diff document's URI (its path is the file's, so the editor shows the name and language). */
export function diffDocQuery(ref: DiffDocRef): string {
  return JSON.stringify(ref);
}

export function parseDiffDocQuery(query: string): DiffDocRef | undefined {
  try {
    const v: unknown = JSON.parse(query);
    if (typeof v !== 'object' || v === null) {
      return undefined;
    }
    const r = v as Record<string, unknown>;
    if (typeof r.root === 'string' && typeof r.worktree === 'string' && typeof r.path === 'string' && (r.side === 'base' || r.side === 'worktree')) {
      const ref: DiffDocRef = { root: r.root, worktree: r.worktree, path: r.path, side: r.side };
      if (typeof r.against === 'string') {
        ref.against = r.against;
      } else if (r.against !== undefined) {
        return undefined;
      }
      return ref;
    }
  } catch {
    // not ours
  }
  return undefined;
}

/** The diff editor's title: against a base commit, or against another branch's tip. */
export function diffTitle(file: string, branch: string, base: string, against?: string): string {
  return `${path.posix.basename(file)} (${against ?? base.slice(0, 8)} ↔ ${branch})`;
}

// ---------------------------------------------------------------------------
// Following a run's log

/**
 * Where a followed log stands: the byte offset read so far. A notification that
 * repeats bytes already shown (its `from` before our offset) is trimmed; one after a
 * gap is shown whole (the gap cannot be filled from here).
 */
export function appendLog(offset: number, n: LogNotification): { text: string; offset: number } {
  const bytes = Buffer.from(n.text, 'utf8');
  const from = n.from ?? offset;
  const next = n.next ?? from + bytes.length;
  if (next <= offset) {
    return { text: '', offset };
  }
  const skip = Math.max(0, offset - from);
  return { text: bytes.subarray(skip).toString('utf8'), offset: next };
}

// ---------------------------------------------------------------------------
// Close

/** What a forced close would lose, for the confirmation dialog. */
export function closePreservedView(r: ClosePreserved): { message: string; detail: string } {
  const shown = r.changedPaths.slice(0, 20);
  const more = r.changedPaths.length - shown.length;
  const lines = [
    `${r.preservedPath} was kept: ${r.reason}.`,
    '',
    'Removing it anyway loses these uncommitted changes:',
    ...shown.map((p) => `  ${p}`),
    ...(more > 0 ? [`  … and ${more} more`] : []),
    '',
    `Inspect: ${r.commands[0] ?? `cd ${r.preservedPath}`}`,
  ];
  return { message: `Worktree ${r.branch} has uncommitted changes`, detail: lines.join('\n') };
}

// ---------------------------------------------------------------------------
// Settings → protocol values

export interface AgentSettings {
  type: string;
  command: string[];
  model: string;
  effort: string;
}

/** The `agent` object from the settings, or why it cannot be built; `agents` are the sidecar's names. */
export function agentFromSettings(s: AgentSettings, agents: readonly string[]): { agent: Agent } | { error: string } {
  if (s.type === 'command') {
    const argv = s.command.filter((a) => typeof a === 'string');
    if (argv.length === 0 || argv[0] === '') {
      return { error: 'The command agent needs a program: set slipway.agent.command (e.g. ["sh", "-c", "./agent.sh"]).' };
    }
    return { agent: { type: 'command', command: argv } };
  }
  if (!agents.includes(s.type)) {
    return { error: `Unknown agent '${s.type}' in slipway.agent.type; the sidecar knows ${agents.join(', ')}.` };
  }
  const agent: Agent = { type: s.type };
  if (s.model) {
    agent.model = s.model;
  }
  if (s.effort) {
    agent.effort = s.effort;
  }
  return { agent };
}

/**
 * The `sandbox` from the settings, or why it cannot be built; `sandboxes` are the
 * sidecar's names. Undefined: none set, the workspace's or the repository's default applies.
 */
export function sandboxFromSettings(
  type: string,
  image: string,
  sandboxes: readonly string[],
): { sandbox: Sandbox | undefined } | { error: string } {
  if (type === '') {
    return { sandbox: undefined };
  }
  if (!sandboxes.includes(type)) {
    return { error: `Unknown sandbox '${type}' in slipway.sandbox.type; the sidecar knows ${sandboxes.join(', ')}.` };
  }
  if (type === 'none') {
    return { sandbox: { type: 'none' } };
  }
  if (!image) {
    return { error: `The ${type} sandbox needs an image: set slipway.sandbox.image.` };
  }
  return { sandbox: { type, image } };
}

/** The `source` to send: a branch picked with Pick Source Branch, else the policy setting (one of `policies`). */
export function sourceFromSettings(policy: string, picked: string | undefined, policies: readonly string[]): Source | undefined {
  if (picked) {
    return { policy: 'named', ref: picked };
  }
  const name = policy.trim().replace(/-/g, '_');
  if (name === '') {
    // Unset: the repository's slipway.toml and the user's config.toml decide.
    return undefined;
  }
  return { policy: name !== 'named' && policies.includes(name) ? name : 'ask' };
}

// ---------------------------------------------------------------------------
// The binary

/**
 * Where the `slipway` binary is: `setting` when it holds a slash, else the first
 * executable of that name on `PATH`. Undefined when there is none.
 */
export function resolveBinary(
  setting: string,
  envPath: string | undefined,
  isExecutable: (file: string) => boolean,
  places: { home?: string; cargoHome?: string } = {},
): string | undefined {
  const name = setting.trim() || 'slipway';
  if (name.includes('/')) {
    return isExecutable(name) ? name : undefined;
  }
  for (const dir of binarySearchDirs(envPath, places)) {
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}

/**
 * Where a bare `slipway.path` is looked for, in order: `PATH`, then where the README's
 * install puts it (`cargo install`: `$CARGO_HOME/bin`, `~/.cargo/bin`), then
 * `~/.local/bin` and `/usr/local/bin`. An editor started from a desktop often lacks
 * `~/.cargo/bin` on its `PATH`.
 */
export function binarySearchDirs(envPath: string | undefined, places: { home?: string; cargoHome?: string } = {}): string[] {
  const dirs = (envPath ?? '').split(path.delimiter).filter((d) => d !== '');
  if (places.cargoHome) {
    dirs.push(path.join(places.cargoHome, 'bin'));
  }
  if (places.home) {
    dirs.push(path.join(places.home, '.cargo', 'bin'), path.join(places.home, '.local', 'bin'));
  }
  dirs.push('/usr/local/bin');
  return dirs.filter((d, i) => dirs.indexOf(d) === i);
}
