// What each run's agent is doing, for a user who walked away and comes back: the
// latest `slipway/runActivity` of every run, and how the status bar, the Runs view and
// the progress notification word it. No `vscode` import, so node:test covers it.

import { literal } from './shown';
import type { Activity, RunActivityNotification, RunFinished, RunInfo, RunStatus, StatusNotification } from './protocol';

/** Seconds since the epoch of a `RunInfo` time (a number, or an RFC 3339 string). */
export function epochSeconds(t: number | string | null): number | undefined {
  if (typeof t === 'number') {
    return t > 1e12 ? t / 1000 : t;
  }
  if (typeof t === 'string' && t !== '') {
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? undefined : ms / 1000;
  }
  return undefined;
}

/** "950", "12.3k", "4.1M": a token count short enough for a status bar. */
export function formatTokens(n: number): string {
  if (n < 1000) {
    return String(n);
  }
  if (n < 1_000_000) {
    return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  }
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** "45s", "3m 05s", "2h 04m": how long a run has gone. */
export function formatElapsed(secs: number): string {
  const s = Math.max(0, Math.floor(secs));
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  }
  return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
}

/** "$0.04"; a cost below a cent still shows it is not nothing. */
export function formatCost(usd: number): string {
  return usd > 0 && usd < 0.01 ? '<$0.01' : `$${usd.toFixed(2)}`;
}

/** The usage so far in words: "12.3k tokens · $0.04"; empty before the agent reported any. */
export function usageParts(a: Activity | null | undefined): string[] {
  if (!a) {
    return [];
  }
  const parts: string[] = [];
  const tokens = (a.inputTokens ?? 0) + (a.outputTokens ?? 0);
  if (tokens > 0) {
    parts.push(`${formatTokens(tokens)} tokens`);
  }
  if (typeof a.costUsd === 'number') {
    parts.push(formatCost(a.costUsd));
  }
  return parts;
}

/** A step cut to `max` characters, so one long line does not push everything else away. */
export function shortStep(step: string, max = 60): string {
  return step.length <= max ? step : `${step.slice(0, max - 1)}…`;
}

/** The lines of a tooltip about an activity: step, files, turns, tokens, cost. */
export function activityTooltip(a: Activity | null | undefined): string[] {
  if (!a) {
    return [];
  }
  const lines: string[] = [];
  if (a.step) {
    lines.push(`step: ${a.step}`);
  }
  if (a.filesTouched > 0) {
    const shown = a.files.slice(0, 10);
    const more = a.filesTouched - shown.length;
    lines.push(`files touched (${a.filesTouched}): ${shown.join(', ')}${more > 0 ? `, … and ${more} more` : ''}`);
  }
  if (a.turns > 0 || a.toolCalls > 0) {
    lines.push(`${a.turns} turn${a.turns === 1 ? '' : 's'}, ${a.toolCalls} tool call${a.toolCalls === 1 ? '' : 's'}`);
  }
  if (a.inputTokens > 0 || a.outputTokens > 0) {
    lines.push(`tokens: ${formatTokens(a.inputTokens)} in, ${formatTokens(a.outputTokens)} out`);
  }
  if (typeof a.costUsd === 'number') {
    lines.push(`cost: ${formatCost(a.costUsd)}`);
  }
  return lines;
}

/**
 * The message of a run's progress notification: the sidecar's step (from `$/progress`
 * or the activity) with the usage so far, so one glance says what it does and costs.
 */
export function progressMessage(step: string | undefined, a: Activity | null | undefined): string | undefined {
  const usage = usageParts(a).join(' · ');
  if (step === undefined || step === '') {
    return usage === '' ? undefined : usage;
  }
  return usage === '' ? step : `${step} (${usage})`;
}

// ---------------------------------------------------------------------------
// Every run this window knows of

/** `working` until the sidecar reports its end, then `done`. */
export type RunState = 'working' | 'done';

/** One run as the status bar and the Runs view see it. */
export interface TrackedRun {
  runId: string;
  root: string;
  branch: string | null;
  state: RunState;
  activity?: Activity;
  /** Seconds since the epoch: from `slipway.runs`, else when this window first saw the run. */
  startedAt: number;
  endedAt?: number;
  /** How it ended. */
  status?: RunStatus;
  /** What it asks, when it ended `needsInput`. */
  question?: string;
  /** When it last changed, to show the latest first. */
  changedAt: number;
  /** A `slipway/status` has listed it: its leaving the list means it ended. */
  listed?: boolean;
}

/**
 * The latest activity and state of every run this window has heard of: a run is
 * working from its first status, activity or `slipway.runs` entry until its
 * `slipway/runFinished`, then done until the user has looked (`clearDone`).
 */
export class RunBoard {
  private readonly runs = new Map<string, TrackedRun>();

  private touch(runId: string, root: string, now: number): TrackedRun {
    let r = this.runs.get(runId);
    if (r === undefined) {
      r = { runId, root, branch: null, state: 'working', startedAt: now, changedAt: now };
      this.runs.set(runId, r);
    }
    return r;
  }

  /** A `slipway/runActivity`: the run's latest activity. */
  activity(n: RunActivityNotification, now: number): TrackedRun {
    const r = this.touch(n.runId, n.root, now);
    r.activity = n.activity;
    r.changedAt = now;
    return r;
  }

  /**
   * A `slipway/status`: its runs in progress are working, with their branches. A
   * working run it listed before and lists no more ended without a `runFinished` for
   * this window (another window showed it): it leaves the board, its end unknown here.
   */
  status(s: StatusNotification, now: number): void {
    for (const repo of s.repositories) {
      const listed = new Set<string>();
      for (const summary of repo.runs ?? []) {
        listed.add(summary.runId);
        if (summary.state !== 'running' && !this.runs.has(summary.runId)) {
          // An end this window will hear of in its runFinished.
          continue;
        }
        const r = this.touch(summary.runId, repo.root, now);
        r.branch = summary.branch ?? r.branch;
        r.listed = true;
      }
      for (const [id, r] of this.runs) {
        if (r.root === repo.root && r.state === 'working' && r.listed === true && !listed.has(id)) {
          this.runs.delete(id);
        }
      }
    }
  }

  /** A `slipway.runs` answer: when the running ones started, and their activity until a live one comes. */
  known(root: string, infos: RunInfo[], now: number): void {
    for (const info of infos) {
      if (info.status === 'needsInput' && info.question && !this.runs.has(info.runId) && !answeredIn(infos, info.runId)) {
        const r = this.touch(info.runId, root, now);
        r.state = 'done';
        r.status = 'needsInput';
        r.question = info.question.text;
        r.branch = info.branch ?? r.branch;
        continue;
      }
      if (info.status !== 'running') {
        continue;
      }
      const r = this.touch(info.runId, root, now);
      r.branch = info.branch ?? r.branch;
      r.startedAt = epochSeconds(info.startedAt) ?? r.startedAt;
      if (r.activity === undefined && info.activity) {
        r.activity = info.activity;
      }
    }
  }

  /** A `slipway/runFinished`: the run is done (or waits for an answer). */
  finished(p: RunFinished, now: number): TrackedRun {
    if (p.replyTo !== undefined && p.status !== 'failed' && p.status !== 'cancelled') {
      this.runs.delete(p.replyTo);
    }
    const r = this.touch(p.runId, p.root, now);
    r.question = p.question?.text;
    r.state = 'done';
    r.status = p.status;
    r.endedAt = now;
    r.changedAt = now;
    r.branch = p.branch || r.branch;
    return r;
  }

  get(runId: string): TrackedRun | undefined {
    return this.runs.get(runId);
  }

  /** A reply went to run `runId`: it waits no more. */
  answered(runId: string): void {
    this.runs.delete(runId);
  }

  /** The runs of `root` (every root: undefined) waiting for an answer, latest first. */
  waiting(root: string | undefined): TrackedRun[] {
    return this.of(root).filter(needsInput);
  }

  /** The user has looked at the runs of `root`: its done runs leave the status bar (not those asking). */
  clearDone(root: string | undefined): void {
    for (const [id, r] of this.runs) {
      if (r.state === 'done' && !needsInput(r) && (root === undefined || r.root === root)) {
        this.runs.delete(id);
      }
    }
  }

  /** The runs of `root`, working first, each group latest change first. */
  of(root: string | undefined): TrackedRun[] {
    return [...this.runs.values()]
      .filter((r) => root === undefined || r.root === root)
      .sort((a, b) => (a.state === b.state ? b.changedAt - a.changedAt : a.state === 'working' ? -1 : 1));
  }

  /** Every run is forgotten (the sidecar stopped). */
  clear(): void {
    this.runs.clear();
  }
}

// ---------------------------------------------------------------------------
// The status bar item of the runs

export interface RunsStatusView {
  /** False: nothing to show, the item hides. */
  visible: boolean;
  text: string;
  tooltip: string;
  /** A run waits for an answer: the item stands out (warning background). */
  warning: boolean;
}

const END_WORD: Record<RunStatus, string> = {
  completed: 'done',
  failed: 'failed',
  timedOut: 'timed out',
  cancelled: 'cancelled',
  needsInput: 'needs input',
};

/** A run that ended asking, not answered yet. */
export function needsInput(r: TrackedRun): boolean {
  return r.state === 'done' && r.status === 'needsInput';
}

/** Whether `slipway.runs` lists a reply to `runId` that did not fail. */
export function answeredIn(infos: RunInfo[], runId: string): boolean {
  return infos.some((i) => i.replyTo === runId && i.status !== 'failed' && i.status !== 'cancelled');
}

function runName(r: TrackedRun): string {
  return r.branch || r.runId;
}

/** One run in one line: "feature/x — working: editing src/a.ts (3m 05s, 12.3k tokens, $0.04)". */
export function runLine(r: TrackedRun, now: number): string {
  const state = r.state === 'working' ? 'working' : END_WORD[r.status ?? 'completed'];
  const step = r.activity?.step ? `: ${shortStep(r.activity.step, 80)}` : '';
  const details = [formatElapsed((r.endedAt ?? now) - r.startedAt), ...usageParts(r.activity)];
  return `${runName(r)} — ${state}${step} (${details.join(', ')})`;
}

/**
 * The runs item of the status bar, for the runs of the current repository: one run
 * shows its branch and latest step; several are counted by state. Every run's line
 * is in the tooltip.
 */
export function runsStatusView(runs: TrackedRun[], now: number): RunsStatusView {
  if (runs.length === 0) {
    return { visible: false, text: '', tooltip: '', warning: false };
  }
  const working = runs.filter((r) => r.state === 'working');
  const asking = runs.filter(needsInput);
  const done = runs.filter((r) => r.state === 'done' && !needsInput(r));
  let text: string;
  if (runs.length === 1) {
    const [r] = runs;
    if (r.state === 'working') {
      text = `$(sync~spin) ${literal(runName(r))}: ${r.activity?.step ? literal(shortStep(r.activity.step, 40)) : 'working'}`;
    } else if (needsInput(r)) {
      text = `$(question) ${literal(runName(r))}: needs input`;
    } else {
      text = `${r.status === 'completed' ? '$(check)' : '$(error)'} ${literal(runName(r))}: ${END_WORD[r.status ?? 'completed']}`;
    }
  } else {
    const parts: string[] = [];
    if (working.length > 0) {
      parts.push(`$(sync~spin) ${working.length} working`);
    }
    if (asking.length > 0) {
      parts.push(`$(question) ${asking.length} need${asking.length === 1 ? 's' : ''} input`);
    }
    if (done.length > 0) {
      parts.push(`$(check) ${done.length} done`);
    }
    text = parts.join(' · ');
  }
  const tip = ['slipway runs', ...runs.map((r) => runLine(r, now)), 'Click to show the runs'];
  return { visible: true, text, tooltip: tip.join('\n'), warning: asking.length > 0 };
}
