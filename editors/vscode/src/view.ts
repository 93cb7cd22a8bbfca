// The Slipway view (its own activity bar container): worktrees with the files they
// changed (`slipway.diff`), and runs (`slipway.runs`); the base side of a file's diff
// as a virtual document; a run's log in an output channel that follows it.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  appendLog,
  attemptGroupView,
  attemptRowView,
  DIFF_SCHEME,
  diffDocQuery,
  diffFileView,
  diffTitle,
  type GroupSummary,
  parseDiffDocQuery,
  runNodeView,
  type TreeItemView,
  worktreeNodeView,
} from './model';
import {
  type AttemptRow,
  type DiffFile,
  type GroupStarted,
  isUnknownCommand,
  type LogNotification,
  type RunInfo,
  toSlipwayError,
  type WorktreeStatus,
} from './protocol';
import { answeredIn } from './activity';
import { shown, shownLines } from './shown';
import type { Sidecar } from './sidecar';

export type WorktreeNode = { kind: 'worktree'; root: string; worktree: WorktreeStatus };
export type FileNode = { kind: 'file'; root: string; worktree: WorktreeStatus; base: string; file: DiffFile };
export type RunNode = { kind: 'run'; root: string; run: RunInfo; answered?: boolean };
export type GroupNode = { kind: 'group'; root: string; group: GroupSummary };
/** An attempt, with its group's other attempts (the "Diff Against Attempt…" picker offers them). */
export type AttemptNode = { kind: 'attempt'; root: string; groupId: string; row: AttemptRow; rows: AttemptRow[] };
/** A file an attempt's branch changed: `worktreePath` when its worktree is there. */
export type AttemptFileNode = { kind: 'attemptFile'; root: string; attempt: AttemptNode; worktreePath?: string; base: string; file: DiffFile };
type NoteNode = { kind: 'note'; id: string; text: string; icon: string; tooltip?: string };
export type ViewNode = WorktreeNode | FileNode | RunNode | GroupNode | AttemptNode | AttemptFileNode | NoteNode;

export function isNode(x: unknown): x is ViewNode {
  return typeof x === 'object' && x !== null && 'kind' in x && typeof (x).kind === 'string';
}

function item(v: TreeItemView, collapsible: vscode.TreeItemCollapsibleState): vscode.TreeItem {
  // Labels name files and branches that came out of a repository or a sandbox.
  const t = new vscode.TreeItem(shown(v.label), collapsible);
  t.description = typeof v.description === 'string' ? shown(v.description) : v.description;
  t.tooltip = typeof v.tooltip === 'string' ? shownLines(v.tooltip) : v.tooltip;
  t.iconPath = new vscode.ThemeIcon(v.icon);
  t.contextValue = v.contextValue;
  return t;
}

function note(id: string, error: unknown, what: string): NoteNode {
  if (isUnknownCommand(error)) {
    return { kind: 'note', id, text: `this slipway has no ${what}: update it`, icon: 'info' };
  }
  const e = toSlipwayError(error);
  const message = e ? e.message : error instanceof Error ? error.message : String(error);
  return { kind: 'note', id, text: message, icon: 'error', tooltip: message };
}

function noteItem(n: NoteNode): vscode.TreeItem {
  const t = new vscode.TreeItem(shown(n.text), vscode.TreeItemCollapsibleState.None);
  t.id = n.id;
  t.iconPath = new vscode.ThemeIcon(n.icon);
  t.tooltip = shownLines(n.tooltip ?? n.text);
  t.contextValue = 'slipway.note';
  return t;
}

/** Worktrees (from the last `slipway/status`), each expanding to its changed files. */
export class WorktreesProvider implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ViewNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly sidecar: Sidecar) {
    this.subscription = sidecar.onStatus(() => this.refresh());
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(n: ViewNode): vscode.TreeItem {
    switch (n.kind) {
      case 'worktree': {
        const t = item(worktreeNodeView(n.worktree), vscode.TreeItemCollapsibleState.Collapsed);
        t.id = `worktree:${n.worktree.id}`;
        t.resourceUri = vscode.Uri.file(n.worktree.path);
        // The file icon theme would draw a folder: keep the state icon.
        t.iconPath = new vscode.ThemeIcon(worktreeNodeView(n.worktree).icon);
        return t;
      }
      case 'file': {
        const v = diffFileView(n.file);
        const t = item(v, vscode.TreeItemCollapsibleState.None);
        t.id = `file:${n.worktree.id}:${n.file.path}`;
        t.command = { command: 'slipway.openDiff', title: 'Open Changes', arguments: [n] };
        return t;
      }
      case 'note':
        return noteItem(n);
      case 'run':
        return item(runNodeView(n.run, undefined, undefined, n.answered), vscode.TreeItemCollapsibleState.None);
    }
    return new vscode.TreeItem('');
  }

  async getChildren(n?: ViewNode): Promise<ViewNode[]> {
    if (n === undefined) {
      const repos = this.sidecar.status?.repositories ?? [];
      return repos.flatMap((r) => r.worktrees.map((worktree): ViewNode => ({ kind: 'worktree', root: r.root, worktree })));
    }
    if (n.kind !== 'worktree') {
      return [];
    }
    const api = this.sidecar.api;
    if (api === undefined) {
      return [{ kind: 'note', id: `note:${n.worktree.id}`, text: 'the sidecar is not running', icon: 'error' }];
    }
    try {
      const diff = await api.diff(n.root, n.worktree.id);
      if (diff.files.length === 0) {
        return [{ kind: 'note', id: `note:${n.worktree.id}`, text: 'no changes against the base', icon: 'check' }];
      }
      return diff.files.map((file): ViewNode => ({ kind: 'file', root: n.root, worktree: n.worktree, base: diff.base, file }));
    } catch (error) {
      return [note(`note:${n.worktree.id}`, error, 'slipway.diff')];
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/**
 * Runs of every watched repository, newest first (`slipway.runs`). A run's
 * `slipway/runActivity` redraws its row only: no new `slipway.runs` a few times a second.
 */
export class RunsProvider implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ViewNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: vscode.Disposable[];
  /** The rows shown, by run id: an activity redraws the same node. */
  private shown = new Map<string, RunNode>();

  constructor(private readonly sidecar: Sidecar) {
    this.subscriptions = [
      sidecar.onStatus(() => this.refresh()),
      sidecar.onRunFinished(() => this.refresh()),
      sidecar.onActivity((n) => {
        const node = this.shown.get(n.runId);
        if (node !== undefined) {
          this.changed.fire(node);
        }
      }),
    ];
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  getTreeItem(n: ViewNode): vscode.TreeItem {
    if (n.kind === 'note') {
      return noteItem(n);
    }
    if (n.kind !== 'run') {
      return new vscode.TreeItem('');
    }
    const live = n.run.status === 'running' ? this.sidecar.board.get(n.run.runId)?.activity : undefined;
    const t = item(runNodeView(n.run, Date.now() / 1000, live, n.answered), vscode.TreeItemCollapsibleState.None);
    t.id = `run:${n.run.runId}`;
    t.command = { command: 'slipway.showRunLog', title: 'Show Log', arguments: [n] };
    return t;
  }

  async getChildren(n?: ViewNode): Promise<ViewNode[]> {
    if (n !== undefined) {
      return [];
    }
    const api = this.sidecar.api;
    const repos = this.sidecar.status?.repositories ?? [];
    if (api === undefined || repos.length === 0) {
      return [];
    }
    const out: ViewNode[] = [];
    const shown = new Map<string, RunNode>();
    for (const r of repos) {
      try {
        const { runs } = await api.runs(r.root);
        this.sidecar.board.known(r.root, runs, Date.now() / 1000);
        for (const run of runs) {
          const node: RunNode = { kind: 'run', root: r.root, run, answered: answeredIn(runs, run.runId) };
          shown.set(run.runId, node);
          out.push(node);
        }
      } catch (error) {
        out.push(note(`note:runs:${r.root}`, error, 'slipway.runs'));
      }
    }
    this.shown = shown;
    return out;
  }

  dispose(): void {
    for (const s of this.subscriptions) {
      s.dispose();
    }
    this.changed.dispose();
  }
}

/**
 * Attempts: the groups of every watched repository (`slipway.attemptGroups`; from an
 * older sidecar, the groups this window started), each expanding to its attempts
 * (`slipway.attempts`) whose branch is still there, each expanding to its changed files.
 * A `slipway/runFinished` of one of the groups' runs redraws the view.
 */
export class AttemptsProvider implements vscode.TreeDataProvider<ViewNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ViewNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscriptions: vscode.Disposable[];
  /** Groups this window started, by repository, newest first: the list when the sidecar has no `slipway.attemptGroups`. */
  private readonly started = new Map<string, GroupSummary[]>();
  /** The runs of the groups shown: their end redraws the view. */
  private readonly groupRuns = new Set<string>();
  /** A shown group has runs going whose ids this window has not seen (not expanded yet). */
  private unseenRunning = false;
  /** The attempt this window landed, by group. */
  private readonly landed = new Map<string, number>();

  constructor(private readonly sidecar: Sidecar) {
    this.subscriptions = [
      sidecar.onRunFinished((p) => {
        if (this.groupRuns.has(p.runId) || this.unseenRunning) {
          this.refresh();
        }
      }),
    ];
  }

  refresh(): void {
    this.changed.fire(undefined);
  }

  /** A group this window started (`slipway.run` with `attempts` answered it). */
  addStarted(root: string, answer: GroupStarted, prompt: string | undefined): void {
    const list = this.started.get(root) ?? [];
    list.unshift({ groupId: answer.groupId, created: Date.now() / 1000, attempts: answer.runIds.length, running: answer.runIds.length, prompt: prompt ?? null });
    this.started.set(root, list);
    for (const id of answer.runIds) {
      this.groupRuns.add(id);
    }
    this.refresh();
  }

  /** `index` of `groupId` was landed here: its row says so. */
  markLanded(groupId: string, index: number): void {
    this.landed.set(groupId, index);
    this.refresh();
  }

  getTreeItem(n: ViewNode): vscode.TreeItem {
    switch (n.kind) {
      case 'group': {
        const t = item(attemptGroupView(n.group), vscode.TreeItemCollapsibleState.Expanded);
        t.id = `group:${n.group.groupId}`;
        return t;
      }
      case 'attempt': {
        const t = item(attemptRowView(n.row, this.landed.get(n.groupId) === n.row.index), vscode.TreeItemCollapsibleState.Collapsed);
        t.id = `attempt:${n.groupId}:${n.row.index}`;
        return t;
      }
      case 'attemptFile': {
        const t = item(diffFileView(n.file), vscode.TreeItemCollapsibleState.None);
        t.id = `attemptFile:${n.attempt.groupId}:${n.attempt.row.index}:${n.file.path}`;
        t.contextValue = 'slipway.attemptFile';
        t.command = { command: 'slipway.openDiff', title: 'Open Changes', arguments: [n] };
        return t;
      }
      case 'note':
        return noteItem(n);
    }
    return new vscode.TreeItem('');
  }

  async getChildren(n?: ViewNode): Promise<ViewNode[]> {
    const api = this.sidecar.api;
    if (api === undefined) {
      return [];
    }
    if (n === undefined) {
      return this.groups();
    }
    try {
      if (n.kind === 'group') {
        const answer = await api.attempts(n.root, n.group.groupId);
        const rows = answer.rows.filter((r) => r.branchPresent);
        for (const r of answer.rows) {
          this.groupRuns.add(r.runId);
        }
        // A group known from its start counts its running attempts from the rows.
        const running = answer.rows.filter((r) => r.status === 'running').length;
        if (this.started.get(n.root)?.includes(n.group) && n.group.running !== running) {
          n.group.running = running;
          this.changed.fire(n);
        }
        if (rows.length === 0) {
          return [{ kind: 'note', id: `note:${n.group.groupId}`, text: 'no attempt left: landed or discarded', icon: 'check' }];
        }
        return rows.map((row): ViewNode => ({ kind: 'attempt', root: n.root, groupId: n.group.groupId, row, rows }));
      }
      if (n.kind === 'attempt') {
        const diff = await api.diff(n.root, n.row.branch);
        const worktreePath = this.worktreeOf(n.root, n.row.branch)?.path;
        if (diff.files.length === 0) {
          return [{ kind: 'note', id: `note:${n.groupId}:${n.row.index}`, text: 'no changes against the base', icon: 'check' }];
        }
        return diff.files.map((file): ViewNode => ({ kind: 'attemptFile', root: n.root, attempt: n, worktreePath, base: diff.base, file }));
      }
    } catch (error) {
      return [note(`note:${n.kind}:${n.kind === 'group' ? n.group.groupId : ''}`, error, n.kind === 'group' ? 'slipway.attempts' : 'slipway.diff')];
    }
    return [];
  }

  /** The worktree of `branch` in the last status, if it has one. */
  worktreeOf(root: string, branch: string): WorktreeStatus | undefined {
    return this.sidecar.status?.repositories.find((r) => r.root === root)?.worktrees.find((w) => w.branch === branch);
  }

  private async groups(): Promise<ViewNode[]> {
    const api = this.sidecar.api;
    const repos = this.sidecar.status?.repositories ?? [];
    if (api === undefined) {
      return [];
    }
    const out: ViewNode[] = [];
    let unseen = false;
    for (const r of repos) {
      let groups: GroupSummary[];
      try {
        groups = (await api.attemptGroups(r.root)).groups;
      } catch (error) {
        if (!isUnknownCommand(error)) {
          out.push(note(`note:groups:${r.root}`, error, 'slipway.attemptGroups'));
          continue;
        }
        groups = this.started.get(r.root) ?? [];
      }
      for (const group of groups) {
        unseen ||= group.running > 0;
        out.push({ kind: 'group', root: r.root, group });
      }
    }
    this.unseenRunning = unseen;
    return out;
  }

  dispose(): void {
    for (const s of this.subscriptions) {
      s.dispose();
    }
    this.changed.dispose();
  }
}

/** `slipway-base:` documents: one side of a worktree file, from `slipway.diff` with `path` (and `against`). */
export class DiffDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly sidecar: Sidecar) {}

  static uri(root: string, worktree: string, file: string, side: 'base' | 'worktree', against?: string): vscode.Uri {
    const ref = against === undefined ? { root, worktree, path: file, side } : { root, worktree, path: file, side, against };
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${file}`, query: diffDocQuery(ref) });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseDiffDocQuery(uri.query);
    const api = this.sidecar.api;
    if (ref === undefined || api === undefined) {
      throw new Error(`slipway: cannot read ${uri.toString()}`);
    }
    const answer = await api.diffFile(ref.root, ref.worktree, ref.path, ref.against);
    if (answer.binary) {
      return '(binary file)';
    }
    return (ref.side === 'base' ? answer.baseText : answer.worktreeText) ?? '';
  }
}

/** One changed file to show in the diff editor: of a worktree, or of a branch (an attempt's). */
export interface DiffTarget {
  root: string;
  /** The `worktree` selector: an id, a path or a branch. */
  selector: string;
  branch: string;
  /** The worktree's folder, when there is one: its side is the file itself. */
  worktreePath?: string;
  base: string;
  /** Compared with this branch's tip instead of the base. */
  against?: string;
  file: DiffFile;
}

/** Opens the diff editor of a changed file: its base (virtual) against the worktree file. */
export async function openDiff(n: FileNode): Promise<void> {
  await openDiffOf({ root: n.root, selector: n.worktree.id, branch: n.worktree.branch, worktreePath: n.worktree.path, base: n.base, file: n.file });
}

/** The diff editor of `t`: the base (or `against`) side virtual, the other side the file on disk when it is there. */
export async function openDiffOf(t: DiffTarget): Promise<void> {
  const { file } = t;
  const left = DiffDocuments.uri(t.root, t.selector, file.path, 'base', t.against);
  const right =
    file.status === 'deleted' || t.worktreePath === undefined
      ? DiffDocuments.uri(t.root, t.selector, file.path, 'worktree', t.against)
      : vscode.Uri.file(path.join(t.worktreePath, file.path));
  await vscode.commands.executeCommand('vscode.diff', left, right, shown(diffTitle(file.path, t.branch, t.base, t.against)), { preview: true });
}

interface Followed {
  channel: vscode.OutputChannel;
  offset: number;
  done: boolean;
  /** Notifications that came before the first read answered. */
  pending: LogNotification[] | undefined;
}

/** Runs' logs in output channels (language `log`) that follow them: `slipway.log` with follow, then `slipway/log`. */
export class RunLogs implements vscode.Disposable {
  private readonly followed = new Map<string, Followed>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly sidecar: Sidecar) {
    this.subscription = sidecar.onLog((n) => this.onLog(n));
  }

  static channelName(runId: string): string {
    return `slipway run ${runId}`;
  }

  async show(runId: string, root?: string): Promise<void> {
    const known = this.followed.get(runId);
    if (known !== undefined) {
      known.channel.show(true);
      return;
    }
    const api = this.sidecar.api;
    if (api === undefined) {
      throw new Error('the sidecar is not running');
    }
    const channel = vscode.window.createOutputChannel(RunLogs.channelName(runId), 'log');
    const f: Followed = { channel, offset: 0, done: false, pending: [] };
    this.followed.set(runId, f);
    channel.show(true);
    try {
      const first = await api.log({ runId, root, from: 0, follow: true });
      channel.append(first.text);
      f.offset = first.next;
      const pending = f.pending ?? [];
      f.pending = undefined;
      for (const n of pending) {
        this.apply(f, n);
      }
      if (first.done) {
        this.end(f);
      }
    } catch (error) {
      this.followed.delete(runId);
      channel.dispose();
      throw error;
    }
  }

  private onLog(n: LogNotification): void {
    const f = this.followed.get(n.runId);
    if (f === undefined) {
      return;
    }
    if (f.pending !== undefined) {
      f.pending.push(n);
      return;
    }
    this.apply(f, n);
  }

  private apply(f: Followed, n: LogNotification): void {
    if (f.done) {
      return;
    }
    const next = appendLog(f.offset, n);
    if (next.text !== '') {
      f.channel.append(next.text);
    }
    f.offset = next.offset;
    if (n.done) {
      this.end(f);
    }
  }

  private end(f: Followed): void {
    if (!f.done) {
      f.done = true;
      f.channel.appendLine('');
      f.channel.appendLine('── slipway: the run ended ──');
    }
  }

  dispose(): void {
    this.subscription.dispose();
    for (const f of this.followed.values()) {
      f.channel.dispose();
    }
    this.followed.clear();
  }
}
