// Pure rendering: what the pickers, the status bar and the notifications show, from
// the sidecar's answers and notifications. No `vscode` import, so node:test covers it.

import * as path from 'node:path';
import type {
  Agent,
  BranchInfo,
  ClosePreserved,
  MountChoices,
  MountSources,
  RepositoryStatus,
  RunFinished,
  Sandbox,
  Source,
  StatusNotification,
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
        marks.push(`tracks ${b.upstream}`);
      }
      entries.push({
        type: 'branch',
        label: `${kind === 'local' ? '$(git-branch)' : '$(cloud)'} ${b.name}`,
        description: marks.join(' · '),
        detail: `${b.commit.slice(0, 10)} · ${b.subject} · ${relativeTime(b.time, now)}`,
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
      return { label: `$(warning) ${w.name}`, description: 'cannot be read', detail: w.error ?? w.path, workspace: w };
    }
    const n = w.mounts.length;
    const asks = w.mounts.filter((m) => m.source.policy === 'ask').length;
    const parts = [`${n} mount${n === 1 ? '' : 's'}`];
    if (asks > 0) {
      parts.push(`${asks} ask${asks === 1 ? 's' : ''} for a branch`);
    }
    if (w.workdir) {
      parts.push(`workdir ${w.workdir}`);
    }
    return {
      label: `$(folder-library) ${w.name}`,
      description: parts.join(' · '),
      detail: w.mounts.map((m) => `${m.src} → ${m.dst} (${m.isolation}, ${sourceLabel(m.source)})`).join('  '),
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
    label: `${w.state === 'running' ? '$(sync~spin)' : w.dirty ? '$(circle-filled)' : '$(git-branch)'} ${w.branch}`,
    description: worktreeDescription(w),
    detail: w.why ? `${w.path} — ${w.why}` : w.path,
    worktree: w,
  }));
}

// ---------------------------------------------------------------------------
// Status bar

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
    return { text: '$(git-branch) slipway', tooltip: 'slipway: waiting for the sidecar', warning: false };
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
    parts.push(`$(git-branch) ${current.branch}${current.dirty ? '*' : ''}`);
    tip.push(`Worktree ${current.branch} (${current.id})`, current.path, worktreeDescription(current));
    if (current.why) {
      tip.push(current.why);
    }
  } else {
    const n = repository?.worktrees.length ?? 0;
    parts.push(`$(list-tree) ${n} worktree${n === 1 ? '' : 's'}`);
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

export type RunAction = 'Open' | 'Close' | 'Show Log';

export interface RunFinishedView {
  severity: 'info' | 'warning' | 'error';
  message: string;
  actions: RunAction[];
}

export function runFinishedView(p: RunFinished): RunFinishedView {
  const where = p.branch ? ` on ${p.branch}` : '';
  const n = p.commits.length;
  const commits = `${n} commit${n === 1 ? '' : 's'}`;
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
    default:
      severity = 'error';
      message = `slipway: run failed${where}: ${commits}`;
  }
  if (p.error && p.status !== 'cancelled') {
    message += ` — ${p.error.message}`;
  }
  if (p.keptBranch) {
    message += ` — ${p.keptBranch}`;
  }
  const actions: RunAction[] = [];
  if (p.preservedWorktreePath) {
    actions.push('Open', 'Close');
  }
  actions.push('Show Log');
  return { severity, message, actions };
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
export function sourceFromSettings(policy: string, picked: string | undefined, policies: readonly string[]): Source {
  if (picked) {
    return { policy: 'named', ref: picked };
  }
  const name = policy.replace(/-/g, '_');
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
): string | undefined {
  const name = setting.trim() || 'slipway';
  if (name.includes('/')) {
    return isExecutable(name) ? name : undefined;
  }
  for (const dir of (envPath ?? '').split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) {
      return candidate;
    }
  }
  return undefined;
}
