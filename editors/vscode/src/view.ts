// The Slipway view (its own activity bar container): worktrees with the files they
// changed (`slipway.diff`), and runs (`slipway.runs`); the base side of a file's diff
// as a virtual document; a run's log in an output channel that follows it.

import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  appendLog,
  DIFF_SCHEME,
  diffDocQuery,
  diffFileView,
  parseDiffDocQuery,
  runNodeView,
  type TreeItemView,
  worktreeNodeView,
} from './model';
import {
  type DiffFile,
  isUnknownCommand,
  type LogNotification,
  type RunInfo,
  toSlipwayError,
  type WorktreeStatus,
} from './protocol';
import type { Sidecar } from './sidecar';

export type WorktreeNode = { kind: 'worktree'; root: string; worktree: WorktreeStatus };
export type FileNode = { kind: 'file'; root: string; worktree: WorktreeStatus; base: string; file: DiffFile };
export type RunNode = { kind: 'run'; root: string; run: RunInfo };
type NoteNode = { kind: 'note'; id: string; text: string; icon: string; tooltip?: string };
export type ViewNode = WorktreeNode | FileNode | RunNode | NoteNode;

export function isNode(x: unknown): x is ViewNode {
  return typeof x === 'object' && x !== null && 'kind' in x && typeof (x).kind === 'string';
}

function item(v: TreeItemView, collapsible: vscode.TreeItemCollapsibleState): vscode.TreeItem {
  const t = new vscode.TreeItem(v.label, collapsible);
  t.description = v.description;
  t.tooltip = v.tooltip;
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
  const t = new vscode.TreeItem(n.text, vscode.TreeItemCollapsibleState.None);
  t.id = n.id;
  t.iconPath = new vscode.ThemeIcon(n.icon);
  t.tooltip = n.tooltip ?? n.text;
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
        return item(runNodeView(n.run), vscode.TreeItemCollapsibleState.None);
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
    const t = item(runNodeView(n.run, Date.now() / 1000, live), vscode.TreeItemCollapsibleState.None);
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
          const node: RunNode = { kind: 'run', root: r.root, run };
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

/** `slipway-base:` documents: one side of a worktree file, from `slipway.diff` with `path`. */
export class DiffDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly sidecar: Sidecar) {}

  static uri(root: string, worktree: string, file: string, side: 'base' | 'worktree'): vscode.Uri {
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${file}`, query: diffDocQuery({ root, worktree, path: file, side }) });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const ref = parseDiffDocQuery(uri.query);
    const api = this.sidecar.api;
    if (ref === undefined || api === undefined) {
      throw new Error(`slipway: cannot read ${uri.toString()}`);
    }
    const answer = await api.diffFile(ref.root, ref.worktree, ref.path);
    if (answer.binary) {
      return '(binary file)';
    }
    return (ref.side === 'base' ? answer.baseText : answer.worktreeText) ?? '';
  }
}

/** Opens the diff editor of a changed file: its base (virtual) against the worktree file. */
export async function openDiff(n: FileNode): Promise<void> {
  const { file, worktree, root } = n;
  const left = DiffDocuments.uri(root, worktree.id, file.path, 'base');
  const right =
    file.status === 'deleted' ? DiffDocuments.uri(root, worktree.id, file.path, 'worktree') : vscode.Uri.file(path.join(worktree.path, file.path));
  const title = `${path.posix.basename(file.path)} (${n.base.slice(0, 8)} ↔ ${worktree.branch})`;
  await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
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
