// The slipway extension: renders the sidecar's answers and opens what it names.
// Every decision (where a branch starts, what a close keeps, how a run goes) is the
// sidecar's; this file only asks the user, sends one request, and shows the answer.

import * as vscode from 'vscode';
import { runsStatusView } from './activity';
import {
  agentFromSettings,
  attemptLandedView,
  attemptPickItems,
  type BranchPickEntry,
  branchItems,
  closePreservedView,
  DIFF_SCHEME,
  discardRiskView,
  landAttemptConfirm,
  landedMessage,
  landModeItems,
  quarantineView,
  mountPickSpecs,
  runFinishedView,
  sandboxFromSettings,
  sensitiveView,
  sourceFromSettings,
  sourcesFromAnswers,
  statusView,
  type StatusView,
  trustView,
  workspaceItems,
  worktreeItems,
} from './model';
import {
  type Agent,
  type BranchInfo,
  type InteractiveCommand,
  isUnknownCommand,
  type MountChoices,
  type MountSources,
  type RunFinished,
  type Sandbox,
  type SlipwayApi,
  type SlipwayError,
  type Source,
  type StatusNotification,
  type TrustFile,
  type Vocabularies,
  toSlipwayError,
  withBranchAsk,
  withMountSourcePicks,
  withSourcePick,
  withTrust,
  type WorkspaceInfo,
  type WorktreeStatus,
  type WorktreeStrategy,
} from './protocol';
import * as say from './say';
import { literal, literalMaybe, shown, shownItems, shownLines } from './shown';
import { userSetting } from './settings';
import { Sidecar } from './sidecar';
import {
  type AttemptNode,
  AttemptsProvider,
  DiffDocuments,
  isNode,
  openDiff,
  openDiffOf,
  RunLogs,
  RunsProvider,
  WorktreesProvider,
} from './view';

type OpenHow = 'newWindow' | 'thisWindow' | 'addToWorkspace';

class Cancelled extends Error {}

/** `vscode.window.showQuickPick` with its rows and title shown safely (they name branches and files). */
function pick<T extends vscode.QuickPickItem>(items: readonly T[], options: vscode.QuickPickOptions = {}): Thenable<T | undefined> {
  return vscode.window.showQuickPick(shownItems(items), { ...options, title: options.title === undefined ? undefined : shown(options.title) });
}

class Extension implements vscode.Disposable {
  private readonly sidecar: Sidecar;
  private readonly item: vscode.StatusBarItem;
  /** Land and Discard of the worktree the editor is in. */
  private readonly landItem: vscode.StatusBarItem;
  private readonly discardItem: vscode.StatusBarItem;
  /** The runs of the current repository: working or done, with the latest step. */
  private readonly runsItem: vscode.StatusBarItem;
  /** The worktree paths of the last status, to notice those removed since. */
  private knownWorktrees = new Set<string>();
  private view: StatusView = statusView(undefined, { paths: [] });
  private readonly disposables: { dispose(): unknown }[] = [];
  private readonly worktreesView: WorktreesProvider;
  private readonly runsView: RunsProvider;
  private readonly attemptsView: AttemptsProvider;
  private readonly logs: RunLogs;
  /** The last transient status bar message; cleared when a run ends so none goes stale. */
  private transient: vscode.Disposable | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    const output = vscode.window.createOutputChannel('slipway', { log: true });
    this.sidecar = new Sidecar(output);
    this.item = vscode.window.createStatusBarItem('status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'slipway';
    this.item.command = 'slipway.listWorktrees';
    this.landItem = vscode.window.createStatusBarItem('land', vscode.StatusBarAlignment.Left, 49);
    this.landItem.name = 'slipway: Land';
    this.landItem.text = '$(git-merge) Land';
    this.discardItem = vscode.window.createStatusBarItem('discard', vscode.StatusBarAlignment.Left, 48);
    this.discardItem.name = 'slipway: Discard';
    this.discardItem.text = '$(trash) Discard';
    this.runsItem = vscode.window.createStatusBarItem('runs', vscode.StatusBarAlignment.Left, 47);
    this.runsItem.name = 'slipway: Runs';
    this.runsItem.command = 'slipway.showRuns';
    this.disposables.push(output, this.sidecar, this.item, this.landItem, this.discardItem, this.runsItem);
    this.worktreesView = new WorktreesProvider(this.sidecar);
    this.runsView = new RunsProvider(this.sidecar);
    this.attemptsView = new AttemptsProvider(this.sidecar);
    this.logs = new RunLogs(this.sidecar);
    this.disposables.push(
      this.worktreesView,
      this.runsView,
      this.attemptsView,
      this.logs,
      vscode.window.createTreeView('slipway.attempts', { treeDataProvider: this.attemptsView, showCollapseAll: true }),
      vscode.window.createTreeView('slipway.worktrees', { treeDataProvider: this.worktreesView, showCollapseAll: true }),
      vscode.window.createTreeView('slipway.runs', { treeDataProvider: this.runsView }),
      vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, new DiffDocuments(this.sidecar)),
    );
    this.disposables.push(
      this.sidecar.onStatus((status) => {
        this.closeRemovedTabs(status);
        this.render();
      }),
      this.sidecar.onRunFinished((p) => {
        this.render();
        void this.runFinished(p);
      }),
      this.sidecar.onActivity(() => this.renderRuns()),
      vscode.window.onDidChangeActiveTextEditor(() => this.render()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.render()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('slipway.path')) {
          void this.restart();
        }
      }),
    );
    const commands: [string, (...args: unknown[]) => Promise<void>][] = [
      ['slipway.newWorktree', (arg) => this.newWorktree(arg)],
      ['slipway.pickSourceBranch', (arg) => this.pickSourceBranch(arg)],
      ['slipway.openWorktree', (arg) => this.openWorktree(arg)],
      ['slipway.startAgentHere', (arg) => this.startAgentHere(arg)],
      ['slipway.handOff', (arg) => this.handOff(arg)],
      ['slipway.runInNewWorktree', (arg) => this.runInNewWorktree(arg)],
      ['slipway.runOnWorkspace', (arg) => this.runOnWorkspace(arg)],
      ['slipway.closeWorktree', (arg) => this.closeWorktree(arg)],
      ['slipway.cancelRun', (arg) => this.cancelRun(arg)],
      ['slipway.replyToRun', (arg) => this.reply(arg)],
      ['slipway.listWorktrees', () => this.listWorktrees()],
      ['slipway.restartSidecar', () => this.restart()],
      ['slipway.openDiff', (arg) => this.openDiff(arg)],
      ['slipway.landWorktree', (arg) => this.land(arg)],
      ['slipway.discardWorktree', (arg) => this.discard(arg)],
      ['slipway.reviewWorktree', (arg) => this.review(arg)],
      ['slipway.showRunLog', (arg) => this.showRunLog(arg)],
      ['slipway.refreshView', () => this.refreshView()],
      ['slipway.showRuns', () => this.showRuns()],
      ['slipway.runAttempts', (arg) => this.runAttempts(arg)],
      ['slipway.openAttemptDiff', (arg) => this.openAttemptDiff(arg)],
      ['slipway.diffAgainstAttempt', (arg) => this.diffAgainstAttempt(arg)],
      ['slipway.landThisAttempt', (arg) => this.landThisAttempt(arg)],
    ];
    for (const [id, handler] of commands) {
      this.disposables.push(vscode.commands.registerCommand(id, (...args: unknown[]) => this.guard(handler, args)));
    }
  }

  async start(): Promise<void> {
    this.render();
    this.item.show();
    const ok = await this.sidecar.start();
    await vscode.commands.executeCommand('setContext', 'slipway.active', ok);
    this.render();
  }

  private async restart(): Promise<void> {
    await this.sidecar.stop();
    await this.start();
  }

  /** Stops the sidecar (waiting for its shutdown), then drops everything else. */
  async shutdown(): Promise<void> {
    await this.sidecar.stop();
    this.dispose();
  }

  dispose(): void {
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }

  // -------------------------------------------------------------------------
  // Status bar

  private get focus(): string | undefined {
    return this.context.workspaceState.get<string>('slipway.focus');
  }

  private async setFocus(path: string): Promise<void> {
    await this.context.workspaceState.update('slipway.focus', path);
    this.render();
  }

  private contextPaths(): string[] {
    const paths: string[] = [];
    const doc = vscode.window.activeTextEditor?.document.uri;
    if (doc?.scheme === 'file') {
      paths.push(doc.fsPath);
    }
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      if (folder.uri.scheme === 'file') {
        paths.push(folder.uri.fsPath);
      }
    }
    return paths;
  }

  private render(): void {
    const status = this.sidecar.status;
    this.view = statusView(status, { paths: this.contextPaths(), focus: this.focus });
    this.item.text = this.sidecar.api ? shown(this.view.text) : '$(error) slipway';
    this.item.tooltip = this.sidecar.api ? shownLines(this.view.tooltip) : 'slipway: the sidecar is not running (click for details)';
    this.item.backgroundColor =
      this.view.warning || !this.sidecar.api ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const repos = status?.repositories ?? [];
    void vscode.commands.executeCommand('setContext', 'slipway.hasWorktrees', repos.some((r) => r.worktrees.length > 0));
    void vscode.commands.executeCommand('setContext', 'slipway.runActive', repos.some((r) => r.running > 0));
    void vscode.commands.executeCommand('setContext', 'slipway.inWorktree', this.view.current !== undefined);
    this.renderRuns();
    const current = this.sidecar.api ? this.view.current : undefined;
    for (const [item, verb, command] of [
      [this.landItem, 'Land', 'slipway.landWorktree'],
      [this.discardItem, 'Discard', 'slipway.discardWorktree'],
    ] as const) {
      if (current) {
        item.tooltip = shown(`slipway: ${verb} ${current.branch}`);
        // On this worktree, not a picker of every one.
        item.command = { command, title: `${verb} ${current.branch}`, arguments: [vscode.Uri.file(current.path)] };
        item.show();
      } else {
        item.hide();
      }
    }
  }

  /** The runs item, for the repository the status item is about. */
  private renderRuns(): void {
    const runs = this.sidecar.api ? this.sidecar.board.of(this.view.repository?.root) : [];
    const v = runsStatusView(runs, Date.now() / 1000);
    if (!v.visible) {
      this.runsItem.hide();
      return;
    }
    this.runsItem.text = shown(v.text);
    this.runsItem.tooltip = shownLines(v.tooltip);
    // A run waiting for an answer stands out.
    this.runsItem.backgroundColor = v.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.runsItem.show();
  }

  /** The runs item's click: the Runs view; the done runs have been seen and leave the item. */
  private async showRuns(): Promise<void> {
    await vscode.commands.executeCommand('slipway.runs.focus');
    this.sidecar.board.clearDone(this.view.repository?.root);
    this.renderRuns();
  }

  /** Editor tabs of worktrees that are gone (closed, discarded, removed from outside) close too. */
  private closeRemovedTabs(status: StatusNotification | undefined): void {
    if (status === undefined) {
      return;
    }
    const now = new Set(status.repositories.flatMap((r) => r.worktrees.map((w) => w.path)));
    const removed = [...this.knownWorktrees].filter((p) => !now.has(p));
    this.knownWorktrees = now;
    if (removed.length === 0) {
      return;
    }
    const inRemoved = (uri: vscode.Uri): boolean =>
      (uri.scheme === 'file' || uri.scheme === DIFF_SCHEME) && removed.some((p) => uri.path === p || uri.path.startsWith(`${p}/`));
    const stale = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) =>
        t.input instanceof vscode.TabInputTextDiff
          ? inRemoved(t.input.modified) || inRemoved(t.input.original)
          : t.input instanceof vscode.TabInputText && inRemoved(t.input.uri),
      );
    if (stale.length > 0) {
      void vscode.window.tabGroups.close(stale, true);
    }
  }

  // -------------------------------------------------------------------------
  // Helpers

  private async guard(handler: (...args: unknown[]) => Promise<void>, args: unknown[]): Promise<void> {
    try {
      await handler(...args);
    } catch (error) {
      if (error instanceof Cancelled) {
        return;
      }
      const e = toSlipwayError(error);
      const message = e ? e.message : error instanceof Error ? error.message : String(error);
      const actions = e?.data?.worktreePath ? ['Open Worktree'] : [];
      const choice = await say.error(`slipway: ${message}`, ...actions);
      if (choice === 'Open Worktree' && e?.data?.worktreePath) {
        await this.open(e.data.worktreePath);
      }
    }
  }

  private api(): SlipwayApi {
    const api = this.sidecar.api;
    if (api === undefined) {
      void vscode.commands.executeCommand('slipway.restartSidecar');
      throw new Cancelled();
    }
    return api;
  }

  /** The names the sidecar accepts; the extension keeps no lists of its own. */
  private names(): Vocabularies {
    const names = this.sidecar.vocabularies;
    if (names === undefined) {
      void say.error('slipway: the sidecar does not say which names it accepts; update the slipway binary.');
      throw new Cancelled();
    }
    return names;
  }

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration('slipway');
  }

  /** The agent settings as `agentFromSettings` takes them (the program ones from user settings only). */
  private agentSettings(): { type: string; command: string[]; model: string; effort: string } {
    const c = this.config();
    return {
      type: userSetting('agent.type', ''),
      command: userSetting<string[]>('agent.command', []),
      model: c.get<string>('agent.model', ''),
      effort: c.get<string>('agent.effort', ''),
    };
  }

  /** The agent setting; undefined when unset (the repository's or the user's default applies). */
  private runAgent(): Agent | undefined {
    return this.agentSettings().type === '' ? undefined : this.agent();
  }

  private agent(): Agent {
    if (this.agentSettings().type === '') {
      void say.error('slipway: an interactive agent needs slipway.agent.type (e.g. claude-code).', 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'slipway.agent');
        }
      });
      throw new Cancelled();
    }
    const built = agentFromSettings(this.agentSettings(), this.names().agents);
    if ('error' in built) {
      void say.error(`slipway: ${built.error}`, 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'slipway.agent');
        }
      });
      throw new Cancelled();
    }
    return built.agent;
  }

  /** The sandbox setting; undefined when unset (the workspace's or the repository's default applies). */
  private sandbox(): Sandbox | undefined {
    const built = sandboxFromSettings(userSetting('sandbox.type', ''), userSetting('sandbox.image', ''), this.names().sandboxes);
    if ('error' in built) {
      void say.error(`slipway: ${built.error}`);
      throw new Cancelled();
    }
    return built.sandbox;
  }

  private uriArg(arg: unknown): string | undefined {
    if (isNode(arg) && (arg.kind === 'worktree' || arg.kind === 'file')) {
      return arg.worktree.path;
    }
    return arg instanceof vscode.Uri && arg.scheme === 'file' ? arg.fsPath : undefined;
  }

  /** A status bar message for a few seconds; the previous one goes. */
  private flash(text: string): void {
    this.transient?.dispose();
    this.transient = vscode.window.setStatusBarMessage(shown(text), 5000);
  }

  /** The folder to name as `root`: the argument's, the active editor's, the only folder, or a pick. */
  private async root(arg?: unknown): Promise<string> {
    const fromArg = this.uriArg(arg);
    if (fromArg) {
      return fromArg;
    }
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    if (folders.length === 0) {
      void say.error('slipway: open a folder inside a git repository first.');
      throw new Cancelled();
    }
    const doc = vscode.window.activeTextEditor?.document.uri;
    const active = doc ? vscode.workspace.getWorkspaceFolder(doc) : undefined;
    if (active) {
      return active.uri.fsPath;
    }
    if (folders.length === 1) {
      return folders[0].uri.fsPath;
    }
    const picked = await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Repository' });
    if (!picked) {
      throw new Cancelled();
    }
    return picked.uri.fsPath;
  }

  /**
   * The branch picker (Local / Remote) over `choices` (an error's whole branch entries)
   * when given, else over `slipway.branches`. Undefined: dismissed.
   */
  private async pickBranch(root: string, title: string, choices?: BranchInfo[]): Promise<string | undefined> {
    const branches = choices ?? (await this.api().branches(root)).branches;
    const entries: BranchPickEntry[] = branchItems(branches);
    return this.showBranchPick(entries, title);
  }

  /** A QuickPick of branch entries; the picked ref, or undefined when dismissed. */
  private showBranchPick(
    entries: BranchPickEntry[],
    title: string,
    step?: { step: number; totalSteps: number; placeholder: string },
  ): Promise<string | undefined> {
    type Item = vscode.QuickPickItem & { ref?: string };
    const items: Item[] = entries.map((e) =>
      e.type === 'separator'
        ? { label: e.label, kind: vscode.QuickPickItemKind.Separator }
        : { label: e.label, description: e.description, detail: e.detail, ref: e.ref },
    );
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = title;
    qp.placeholder = step?.placeholder ?? 'Type to filter branches';
    if (step && step.totalSteps > 1) {
      qp.step = step.step;
      qp.totalSteps = step.totalSteps;
    }
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    qp.ignoreFocusOut = step !== undefined;
    qp.items = shownItems(items);
    return new Promise<string | undefined>((resolve) => {
      let done = false;
      qp.onDidAccept(() => {
        const ref = qp.selectedItems[0]?.ref;
        if (ref !== undefined) {
          done = true;
          resolve(ref);
          qp.hide();
        }
      });
      qp.onDidHide(() => {
        if (!done) {
          resolve(undefined);
        }
        qp.dispose();
      });
      qp.show();
    });
  }

  /**
   * One branch picker per `ask` mount of a workspace run, in the sidecar's order, then
   * the `sources` to send again. Undefined when a picker was dismissed.
   */
  private async pickMountSources(workspace: WorkspaceInfo, mounts: MountChoices[]): Promise<MountSources | undefined> {
    // The choices are whole branch entries: no `slipway.branches` per mount.
    const specs = mountPickSpecs(mounts, workspace.name);
    const answers: string[] = [];
    for (const spec of specs) {
      const ref = await this.showBranchPick(spec.items, spec.title, spec);
      if (ref === undefined) {
        return undefined;
      }
      answers.push(ref);
    }
    return sourcesFromAnswers(specs, answers);
  }

  private async pickWorkspace(): Promise<WorkspaceInfo> {
    const { workspaces } = await this.api().workspaces();
    if (workspaces.length === 0) {
      void say.info(
        'slipway: no workspaces yet. Create one with `slipway workspace create NAME --mount SRC:DST …`.',
      );
      throw new Cancelled();
    }
    const picked = await pick(workspaceItems(workspaces), {
      title: 'Run the agent on workspace',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (!picked) {
      throw new Cancelled();
    }
    if (picked.workspace.error !== undefined) {
      void say.error(`slipway: workspace ${picked.workspace.name} cannot be read: ${picked.workspace.error}`);
      throw new Cancelled();
    }
    return picked.workspace;
  }

  /**
   * Sends `call`; an `untrustedConfig` answer shows what the files would run and set,
   * with Cancel (the default) and Trust, approves what was shown and sends again.
   * Cancel ends the command with nothing done.
   */
  private async trusting<T>(root: string | undefined, call: () => Promise<T | undefined>): Promise<T | undefined> {
    const api = this.api();
    return withTrust(call, (files) => this.askTrust(files), (files) => api.trust({ root, files }));
  }

  private async askTrust(files: TrustFile[]): Promise<boolean> {
    const view = trustView(files);
    type Item = vscode.QuickPickItem & { answer?: 'cancel' | 'trust' };
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = view.title;
    qp.placeholder = view.placeholder;
    qp.ignoreFocusOut = true;
    qp.matchOnDescription = true;
    qp.items = shownItems(view.rows.map((r) =>
      r.type === 'separator'
        ? { label: r.label, kind: vscode.QuickPickItemKind.Separator }
        : { label: r.label, description: r.description, detail: r.detail, answer: r.answer },
    ));
    // Cancel is the first row, the active one: Enter (and Escape) run nothing.
    const answer = await new Promise<'cancel' | 'trust'>((resolve) => {
      let done = false;
      qp.onDidAccept(() => {
        const picked = qp.selectedItems[0]?.answer;
        if (picked !== undefined) {
          done = true;
          resolve(picked);
          qp.hide();
        }
      });
      qp.onDidHide(() => {
        if (!done) {
          resolve('cancel');
        }
        qp.dispose();
      });
      qp.show();
    });
    if (answer !== 'trust') {
      void say.info('slipway: not trusted; nothing was done.');
      return false;
    }
    return true;
  }

  private sourceFor(root: string) {
    const picked = this.context.workspaceState.get<Record<string, string>>('slipway.pickedSource', {})[root];
    return sourceFromSettings(this.config().get<string>('sourcePolicy', 'ask'), picked, this.names().policies);
  }

  private pickOnSourceError(root: string, what: string) {
    return (e: SlipwayError) =>
      this.pickBranch(root, `${e.kind === 'sourceBranchRequired' ? 'Start' : `${e.message} — start`} ${what} from…`, e.data?.choices);
  }

  /** The strategy setting; undefined when unset (the defaults decide). */
  private strategySetting(): WorktreeStrategy | undefined {
    const s = userSetting<string>('strategy', '');
    return s === '' ? undefined : (s as WorktreeStrategy);
  }

  /** A branch name, or undefined when the input was dismissed. */
  private async askBranchName(prompt: string): Promise<string | undefined> {
    try {
      return await this.branchName(prompt);
    } catch (error) {
      if (error instanceof Cancelled) {
        return undefined;
      }
      throw error;
    }
  }

  private async branchName(prompt: string): Promise<string> {
    const name = await vscode.window.showInputBox({
      title: 'slipway',
      prompt,
      placeHolder: 'feature/my-change',
      validateInput: (v) => (v.trim() === '' ? 'A branch name is needed' : undefined),
    });
    if (name === undefined) {
      throw new Cancelled();
    }
    return name.trim();
  }

  private async prompt(what: string): Promise<string> {
    const prompt = await vscode.window.showInputBox({
      title: 'slipway',
      prompt: `Prompt for ${what}`,
      placeHolder: 'What should the agent do?',
    });
    if (prompt === undefined) {
      throw new Cancelled();
    }
    return prompt;
  }

  /** Worktrees of every watched repository (from the last status), or of `root` (asked). */
  private async worktrees(root?: string): Promise<WorktreeStatus[]> {
    if (root !== undefined) {
      return (await this.api().list(root)).worktrees;
    }
    const status = this.sidecar.status;
    if (status && status.repositories.length > 0) {
      return status.repositories.flatMap((r) => r.worktrees);
    }
    return (await this.api().list(await this.root())).worktrees;
  }

  private async pickWorktree(title: string, list?: WorktreeStatus[]): Promise<WorktreeStatus> {
    const worktrees = list ?? (await this.worktrees());
    if (worktrees.length === 0) {
      void say.info('slipway: no worktrees yet. Run "slipway: New Worktree".');
      throw new Cancelled();
    }
    const current = this.view.current?.path;
    const entries = worktreeItems(worktrees).sort((a, b) => Number(b.worktree.path === current) - Number(a.worktree.path === current));
    const picked = await pick(
      entries.map((e) => ({ ...e, description: e.worktree.path === current ? `current · ${e.description}` : e.description })),
      { title, matchOnDescription: true, matchOnDetail: true },
    );
    if (!picked) {
      throw new Cancelled();
    }
    return picked.worktree;
  }

  /** The worktree a command acts on: the argument's, the current one, or a pick. */
  private async targetWorktree(arg: unknown, title: string, alwaysAsk = false): Promise<WorktreeStatus> {
    if (isNode(arg) && (arg.kind === 'worktree' || arg.kind === 'file')) {
      return arg.worktree;
    }
    const status = this.sidecar.status;
    const fromArg = this.uriArg(arg);
    if (fromArg && status) {
      const found = statusView(status, { paths: [fromArg] }).current;
      if (found) {
        return found;
      }
    }
    if (!alwaysAsk && this.view.current) {
      return this.view.current;
    }
    return this.pickWorktree(title);
  }

  private repoRootOf(w: WorktreeStatus): string {
    const repo = this.sidecar.status?.repositories.find((r) => r.worktrees.some((x) => x.path === w.path));
    return repo?.root ?? w.path;
  }

  private async open(path: string, how?: OpenHow, name?: string): Promise<void> {
    let choice: OpenHow | undefined = how;
    if (choice === undefined) {
      const setting = this.config().get<string>('openWorktreeIn', 'ask');
      if (setting === 'newWindow' || setting === 'thisWindow' || setting === 'addToWorkspace') {
        choice = setting;
      } else {
        const picked = await pick(
          [
            { label: '$(empty-window) Open in New Window', how: 'newWindow' as const },
            { label: '$(window) Open in This Window', how: 'thisWindow' as const },
            { label: '$(root-folder) Add to Workspace', how: 'addToWorkspace' as const },
          ],
          { title: `Open ${path}` },
        );
        if (!picked) {
          throw new Cancelled();
        }
        choice = picked.how;
      }
    }
    await this.setFocus(path);
    const uri = vscode.Uri.file(path);
    if (choice === 'addToWorkspace') {
      const folders = vscode.workspace.workspaceFolders ?? [];
      if (!folders.some((f) => f.uri.fsPath === path)) {
        vscode.workspace.updateWorkspaceFolders(folders.length, 0, { uri, name: name ? `slipway: ${name}` : undefined });
      }
    } else {
      await vscode.commands.executeCommand('vscode.openFolder', uri, { forceNewWindow: choice === 'newWindow' });
    }
  }

  private remember(path: string, command: InteractiveCommand | undefined): Promise<void> {
    const all = this.context.workspaceState.get<Record<string, InteractiveCommand>>('slipway.interactive', {});
    if (command) {
      all[path] = command;
    }
    return Promise.resolve(this.context.workspaceState.update('slipway.interactive', all));
  }

  // -------------------------------------------------------------------------
  // Commands

  private async newWorktree(arg: unknown): Promise<void> {
    const root = await this.root(arg);
    // Unset settings leave strategy and source to the repository's and the user's
    // defaults; the sidecar says what is still missing, and only that is asked.
    const strategy = this.strategySetting();
    const built = agentFromSettings(this.agentSettings(), this.names().agents);
    const agent = 'agent' in built ? built.agent : undefined;
    const api = this.api();
    const created = await this.trusting(root, () =>
      withBranchAsk(
        (branch) =>
          withSourcePick(
            (source) => api.createWorktree({ root, strategy, branch, source, agent }),
            this.sourceFor(root),
            this.pickOnSourceError(root, branch ?? 'the worktree'),
          ),
        undefined,
        () => this.askBranchName('Branch for the new worktree (new or existing)'),
      ),
    );
    if (created === undefined) {
      return;
    }
    await this.remember(created.path, created.interactiveCommand);
    await this.setFocus(created.path);
    const notes = created.notes.length > 0 ? ` (${created.notes.join('; ')})` : '';
    void say
      .info(
        `slipway: worktree ${created.branch} ${created.reused ? 're-used' : 'created'} from ${created.sourceLabel} at ${created.path}${notes}`,
        'Open in New Window',
        'Open Here',
        'Add to Workspace',
        'Start Agent Here',
      )
      .then((choice) => {
        const how: Record<string, OpenHow> = { 'Open in New Window': 'newWindow', 'Open Here': 'thisWindow', 'Add to Workspace': 'addToWorkspace' };
        if (choice === 'Start Agent Here') {
          void this.guard(() => this.startAgentHere(vscode.Uri.file(created.path)), []);
        } else if (choice !== undefined) {
          void this.guard(() => this.open(created.path, how[choice], created.branch), []);
        }
      });
  }

  private async pickSourceBranch(arg: unknown): Promise<void> {
    const root = await this.root(arg);
    const ref = await this.pickBranch(root, 'New worktrees start from…');
    if (ref === undefined) {
      return;
    }
    const resolved = await this.api().resolveSource({ root, source: { policy: 'named', ref } });
    const all = this.context.workspaceState.get<Record<string, string>>('slipway.pickedSource', {});
    all[root] = ref;
    await this.context.workspaceState.update('slipway.pickedSource', all);
    const choice = await say.info(
      `slipway: new branches start from ${resolved.label} (${resolved.commit.slice(0, 10)}) until you pick again.`,
      'Use the Setting Again',
    );
    if (choice) {
      const rest = Object.fromEntries(Object.entries(all).filter(([key]) => key !== root));
      await this.context.workspaceState.update('slipway.pickedSource', rest);
    }
  }

  private async openWorktree(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Open worktree', arg === undefined);
    await this.open(w.path, undefined, w.branch);
  }

  private async startAgentHere(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Start the agent in');
    const agent = this.agent();
    // The worktree's status with `agent` carries the agent's command line there:
    // nothing is created and no branch lock is taken.
    const command: InteractiveCommand | undefined = (await this.api().status(w.path, agent)).interactiveCommand;
    if (command === undefined || command.argv.length === 0) {
      void say.error(`slipway: no interactive command is known for ${w.branch}.`);
      return;
    }
    await this.setFocus(w.path);
    const terminal = vscode.window.createTerminal({
      name: `slipway: ${w.branch}`,
      cwd: command.cwd || w.path,
      shellPath: command.argv[0],
      shellArgs: command.argv.slice(1),
    });
    terminal.show();
  }

  private async handOff(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Hand off');
    const agent = this.runAgent();
    const sandbox = this.sandbox();
    const prompt = await this.prompt(`the unattended run on ${w.branch}`);
    const root = this.repoRootOf(w);
    const api = this.api();
    const started = await this.trusting(root, () =>
      api.handoff({ root, worktree: w.id, agent, sandbox, prompt, maxIterations: this.config().get<number>('maxIterations', 1) }),
    );
    if (started === undefined) {
      return;
    }
    const { runId } = started;
    await this.setFocus(w.path);
    this.flash(`slipway: ${w.branch} handed off (${runId})`);
  }

  private async runInNewWorktree(arg: unknown): Promise<void> {
    const root = await this.root(arg);
    const strategy = this.strategySetting();
    const agent = this.runAgent();
    const sandbox = this.sandbox();
    const prompt = await this.prompt('the run');
    const api = this.api();
    const started = await this.onNewBranch(root, 'the run', 'Branch for the run (new or existing)', (branch, source) =>
      api.run({ root, strategy, branch, source, agent, sandbox, prompt, maxIterations: this.config().get<number>('maxIterations', 1) }),
    );
    if (started) {
      this.flash(`slipway: run ${started.runId} started`);
    }
  }

  /**
   * Sends a request that makes a new branch: trust asked when the repository's files need
   * it, a branch name only when the sidecar says one is missing, a start point when the
   * source policy asks. Undefined when the user dismissed a question.
   */
  private onNewBranch<T>(
    root: string,
    what: string,
    branchPrompt: string,
    send: (branch: string | undefined, source: Source | undefined) => Promise<T>,
  ): Promise<T | undefined> {
    return this.trusting(root, () =>
      withBranchAsk(
        (branch) => withSourcePick((source) => send(branch, source), this.sourceFor(root), this.pickOnSourceError(root, branch ?? what)),
        undefined,
        () => this.askBranchName(branchPrompt),
      ),
    );
  }

  /** N attempts of one prompt as a group (each on its own branch), with an optional check. */
  private async runAttempts(arg: unknown): Promise<void> {
    const root = await this.root(arg);
    const strategy = this.strategySetting();
    const agent = this.runAgent();
    const sandbox = this.sandbox();
    const prompt = await this.prompt('the attempts');
    const count = await vscode.window.showInputBox({
      title: 'slipway',
      prompt: 'How many attempts (1–64)',
      value: '3',
      validateInput: (v) => (/^\d+$/.test(v.trim()) && +v >= 1 && +v <= 64 ? undefined : 'A number from 1 to 64'),
    });
    if (count === undefined) {
      return;
    }
    const check = await vscode.window.showInputBox({
      title: 'slipway',
      prompt: 'Check run in each attempt after its agent (empty: none)',
      placeHolder: 'e.g. cargo test, npm test',
    });
    if (check === undefined) {
      return;
    }
    const api = this.api();
    const attempts = Number(count.trim());
    const started = await this.onNewBranch(root, 'the attempts', 'Branch for the attempts (each gets <branch>/1…N)', (branch, source) =>
      api.runAttempts({
        root,
        strategy,
        branch,
        source,
        agent,
        sandbox,
        prompt,
        attempts,
        check: check.trim() === '' ? undefined : check.trim(),
        maxIterations: this.config().get<number>('maxIterations', 1),
      }),
    );
    if (started) {
      this.attemptsView.addStarted(root, started, prompt);
      await vscode.commands.executeCommand('slipway.attempts.focus');
      this.flash(`slipway: ${started.runIds.length} attempts started (${started.groupId})`);
    }
  }

  private async runOnWorkspace(arg: unknown): Promise<void> {
    const workspace = typeof arg === 'string' ? await this.workspaceNamed(arg) : await this.pickWorkspace();
    // Which repository the run uses is the sidecar's decision: the request names none.
    if (!workspace.repository) {
      void say.error(`slipway: workspace ${workspace.name} has no mount that is a git repository.`);
      return;
    }
    const agent = this.runAgent();
    const sandbox = this.sandbox();
    const prompt = await this.prompt(`the run on workspace ${workspace.name}`);
    const api = this.api();
    const started = await this.trusting(workspace.repository, () =>
      withMountSourcePicks(
        (sources) =>
          api.run({
            workspace: workspace.name,
            sources,
            agent,
            sandbox,
            prompt,
            maxIterations: this.config().get<number>('maxIterations', 1),
          }),
        (mounts) => this.pickMountSources(workspace, mounts),
      ),
    );
    if (started) {
      this.flash(`slipway: run ${started.runId} started on workspace ${workspace.name}`);
    }
  }

  private async workspaceNamed(name: string): Promise<WorkspaceInfo> {
    const found = (await this.api().workspaces()).workspaces.find((w) => w.name === name);
    if (found === undefined) {
      void say.error(`slipway: no workspace named ${name}.`);
      throw new Cancelled();
    }
    return found;
  }

  private async closeWorktree(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Close worktree', arg === undefined);
    await this.close(this.repoRootOf(w), w.id);
  }

  private async close(root: string, worktree: string): Promise<void> {
    const api = this.api();
    const answer = await api.close({ root, worktree });
    if (answer.removed) {
      this.removeFolder(answer.path);
      const kept = answer.branchKept ? ` ${answer.branchKept}` : '';
      void say.info(`slipway: worktree ${answer.branch} removed.${kept}`);
      return;
    }
    const view = closePreservedView(answer);
    const force = 'Remove Anyway (Lose Changes)';
    // The safe choice comes first (it is the dialog's default button).
    const choice = await say.warn(view.message, { modal: true, detail: view.detail }, 'Open Worktree', force);
    if (choice === 'Open Worktree') {
      await this.open(answer.preservedPath, undefined, answer.branch);
    } else if (choice === force) {
      const forced = await api.close({ root, worktree, force: true });
      if (forced.removed) {
        this.removeFolder(forced.path);
        const kept = forced.branchKept ? ` ${forced.branchKept}` : '';
        void say.info(`slipway: worktree ${forced.branch} removed; its uncommitted changes are gone.${kept}`);
      }
    }
  }

  private removeFolder(path: string): void {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const index = folders.findIndex((f) => f.uri.fsPath === path);
    if (index >= 0 && folders.length > 1) {
      vscode.workspace.updateWorkspaceFolders(index, 1);
    }
  }

  private async cancelRun(arg: unknown): Promise<void> {
    const runs = (this.sidecar.status?.repositories ?? []).flatMap((r) =>
      r.runs.filter((x) => x.state === 'running').map((x) => ({ ...x, root: r.root })),
    );
    let target = typeof arg === 'string' ? runs.find((r) => r.runId === arg) : undefined;
    if (target === undefined) {
      if (runs.length === 0) {
        void say.info('slipway: no run in progress.');
        return;
      }
      const picked = await pick(
        runs.map((r) => ({ label: `$(sync~spin) ${literalMaybe(r.branch) ?? '(starting)'}`, description: r.runId, detail: literalMaybe(r.worktreePath ?? r.root), run: r })),
        { title: 'Cancel run' },
      );
      if (!picked) {
        return;
      }
      target = picked.run;
    }
    const answer = await this.api().cancel({ runId: target.runId, root: target.root });
    this.flash(`slipway: ${answer.runId} ${answer.status}`);
  }

  /**
   * `slipway.replyToRun`: answers a run that ended asking. The run (argument, else the one
   * waiting, else picked), then an input box showing its question; a new run resumes
   * its session with the answer.
   */
  private async reply(arg: unknown, known?: { runId: string; root: string; question?: string; branch?: string | null }): Promise<void> {
    let target = known;
    if (target === undefined) {
      const root = this.view.repository?.root;
      if (root !== undefined) {
        this.sidecar.board.known(root, (await this.api().runs(root)).runs, Date.now() / 1000);
      }
      const waiting = this.sidecar.board.waiting(undefined).map((r) => ({ runId: r.runId, root: r.root, question: r.question, branch: r.branch }));
      const named = typeof arg === 'string' ? waiting.find((r) => r.runId === arg) : undefined;
      if (named !== undefined || waiting.length === 1) {
        target = named ?? waiting[0];
      } else if (waiting.length === 0) {
        void say.info('slipway: no run is waiting for input.');
        return;
      } else {
        const picked = await pick(
          waiting.map((r) => ({ label: `$(question) ${literal(r.branch ?? r.runId)}`, description: r.runId, detail: literalMaybe(r.question), run: r })),
          { title: 'Reply to run' },
        );
        if (!picked) {
          return;
        }
        target = picked.run;
      }
    }
    const answer = await vscode.window.showInputBox({
      // The branch is what the user knows the run by; the run id stays in the flash after.
      title: shown(`slipway: reply to the agent on ${target.branch ?? target.runId}`),
      prompt: shownLines(target.question ?? 'The agent asks for input'),
      placeHolder: 'Your answer',
      ignoreFocusOut: true,
      validateInput: (v) => (v.trim() === '' ? 'Give the answer to send to the agent' : undefined),
    });
    if (answer === undefined) {
      return;
    }
    const started = await this.api().reply({ runId: target.runId, answer, root: target.root });
    this.sidecar.board.answered(target.runId);
    this.renderRuns();
    this.flash(`slipway: run ${started.runId} answers ${target.runId}`);
  }

  private async listWorktrees(): Promise<void> {
    if (!this.sidecar.api) {
      await this.restart();
      return;
    }
    const w = await this.pickWorktree('slipway worktrees');
    const actions = [
      { label: '$(empty-window) Open in New Window', run: () => this.open(w.path, 'newWindow', w.branch) },
      { label: '$(window) Open in This Window', run: () => this.open(w.path, 'thisWindow', w.branch) },
      { label: '$(root-folder) Add to Workspace', run: () => this.open(w.path, 'addToWorkspace', w.branch) },
      { label: '$(terminal) Start Agent Here', run: () => this.startAgentHere(vscode.Uri.file(w.path)) },
      { label: '$(rocket) Hand Off to Sandbox', run: () => this.handOff(vscode.Uri.file(w.path)) },
      { label: '$(close) Close Worktree', run: () => this.close(this.repoRootOf(w), w.id) },
    ];
    if (w.state === 'running' && w.runId) {
      const runId = w.runId;
      actions.push({ label: '$(debug-stop) Cancel Run', run: () => this.cancelRun(runId) });
    }
    const picked = await pick(actions, { title: `${w.branch} — ${w.path}` });
    await picked?.run();
  }

  private async runFinished(p: RunFinished): Promise<void> {
    // "handed off", "run … started": stale once the run is over.
    this.transient?.dispose();
    this.transient = undefined;
    const sensitive = sensitiveView(p.sensitiveChanges, `the run${p.branch ? ` on ${p.branch}` : ''}`);
    if (sensitive !== undefined) {
      void say.warn(sensitive.message, { detail: sensitive.detail });
    }
    const quarantine = quarantineView(p);
    if (quarantine !== undefined) {
      void say.warn(quarantine.message, { detail: quarantine.detail }, 'Show Log').then((choice) => {
        if (choice === 'Show Log') {
          void this.guard(() => this.showRunLog(p.runId, p.root, p.logFile), []);
        }
      });
    }
    const view = runFinishedView(p);
    const show =
      view.severity === 'info'
        ? say.info
        : view.severity === 'warning'
          ? say.warn
          : say.error;
    const shown = show(view.message, ...view.actions);
    void this.confirmShown(p.runId);
    const choice = await shown;
    await this.guard(async () => {
      const target = p.actions?.find((a) => a.worktree)?.worktree ?? p.branch;
      if (choice === 'Reply…') {
        await this.reply(undefined, { runId: p.runId, root: p.root, question: p.question?.text, branch: p.branch });
      } else if (choice === 'Open' && p.preservedWorktreePath) {
        await this.open(p.preservedWorktreePath, undefined, p.branch);
      } else if (choice === 'Review') {
        await this.reviewSelector(p.root, target);
      } else if (choice === 'Land…') {
        await this.landSelector(p.root, target, p.branch);
      } else if (choice === 'Show Log') {
        await this.showRunLog(p.runId, p.root, p.logFile);
      }
    }, []);
  }

  /**
   * Tells the sidecar the window showed a run's end. The round trip to the window
   * first (`setContext` runs there) proves it is there to see it: an extension host
   * whose browser tab is gone never gets past it, and the run is told to the next window.
   */
  private async confirmShown(runId: string): Promise<void> {
    await vscode.commands.executeCommand('setContext', 'slipway.lastRunShown', runId);
    try {
      await this.sidecar.api?.seen([runId]);
    } catch (error) {
      if (!isUnknownCommand(error)) {
        this.sidecar.output.warn(`slipway.seen ${runId}: ${String(error)}`);
      }
    }
  }

  // -------------------------------------------------------------------------
  // The Slipway view

  private refreshView(): Promise<void> {
    this.worktreesView.refresh();
    this.runsView.refresh();
    this.attemptsView.refresh();
    return Promise.resolve();
  }

  private async openDiff(arg: unknown): Promise<void> {
    if (!isNode(arg) || (arg.kind !== 'file' && arg.kind !== 'attemptFile')) {
      void say.info('slipway: pick a changed file in the Slipway view.');
      return;
    }
    const folder = arg.kind === 'file' ? arg.worktree.path : arg.worktreePath;
    if (arg.file.binary) {
      void say.info(`slipway: ${arg.file.path} is binary; opening the worktree's file.`);
      if (arg.file.status !== 'deleted' && folder !== undefined) {
        await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(`${folder}/${arg.file.path}`));
      }
      return;
    }
    if (arg.kind === 'file') {
      await openDiff(arg);
      return;
    }
    const { branch } = arg.attempt.row;
    await openDiffOf({ root: arg.root, selector: branch, branch, worktreePath: folder, base: arg.base, file: arg.file });
  }

  private async land(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Land worktree', arg === undefined);
    await this.landSelector(this.repoRootOf(w), w.id, w.branch);
  }

  /** Lands a worktree or a kept branch (`worktree`: a selector). */
  private async landSelector(root: string, worktree: string, branch: string): Promise<void> {
    const modes = this.names().landModes;
    if (modes.length === 0) {
      void say.error('slipway: this sidecar names no land modes (landModes); update the slipway binary.');
      return;
    }
    const picked = await pick(landModeItems(modes, branch, "the host's current branch"), {
      title: `Land ${branch}`,
      placeHolder: 'How the branch comes into the host branch',
    });
    if (!picked) {
      return;
    }
    const answer = await this.api().land({ root, worktree, how: picked.how });
    // The work is home: discarding it now loses nothing, so it asks nothing.
    const choice = await say.info(landedMessage(branch, answer), 'Discard Worktree');
    if (choice) {
      await this.discardSelector(root, worktree);
    }
  }

  private async discard(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Discard worktree', arg === undefined);
    await this.discardSelector(this.repoRootOf(w), w.id);
  }

  /**
   * Discards a worktree (or a kept branch). The sidecar's dry run says what would be
   * lost; only when that is not nothing does a modal list it, with Keep It as its
   * default button (Enter keeps the work).
   */
  private async discardSelector(root: string, worktree: string): Promise<void> {
    const api = this.api();
    const preview = await api.discardDryRun({ root, worktree });
    const risk = discardRiskView(preview);
    let force = false;
    if (risk !== undefined) {
      const choice = await say.warn(risk.message, { modal: true, detail: risk.detail }, risk.keep, risk.lose);
      if (choice !== risk.lose) {
        return;
      }
      force = true;
    }
    const answer = await api.discard({ root, worktree, force });
    if (answer.removed) {
      this.removeFolder(answer.path);
      void say.info(`slipway: ${answer.branch} discarded${force ? ' with its work' : ''}.`);
    } else {
      void say.warn(`slipway: ${answer.branch} was kept: ${answer.reason}`);
    }
  }

  private attemptArg(arg: unknown): AttemptNode {
    if (isNode(arg) && arg.kind === 'attempt') {
      return arg;
    }
    void say.info('slipway: pick an attempt in the Attempts view.');
    throw new Cancelled();
  }

  /** An attempt's changes against where it started (the review picker, on its branch). */
  private async openAttemptDiff(arg: unknown): Promise<void> {
    const a = this.attemptArg(arg);
    await this.reviewSelector(a.root, a.row.branch);
  }

  /** An attempt's files against another attempt's tip. */
  private async diffAgainstAttempt(arg: unknown): Promise<void> {
    const a = this.attemptArg(arg);
    const items = attemptPickItems(a.rows, a.row.index);
    if (items.length === 0) {
      void say.info(`slipway: no other attempt of the group to compare #${a.row.index} with.`);
      return;
    }
    const picked = await pick(items, { title: `Compare attempt #${a.row.index} (${a.row.branch}) with…` });
    if (picked) {
      await this.reviewSelector(a.root, a.row.branch, picked.row.branch);
    }
  }

  /** Lands the attempt (a modal names what goes), then says what was discarded and what was kept. */
  private async landThisAttempt(arg: unknown): Promise<void> {
    const a = this.attemptArg(arg);
    const modes = this.names().landModes;
    const confirm = landAttemptConfirm(a.row, a.rows, modes.length > 0 ? modes : ['merge']);
    const choice = await say.warn(
      confirm.message,
      { modal: true, detail: confirm.detail },
      ...confirm.buttons.map((b) => b.title),
    );
    const how = confirm.buttons.find((b) => b.title === choice)?.how;
    if (how === undefined) {
      return;
    }
    await this.landAttemptWith(a, how, false);
  }

  /** Sends `slipway.landAttempt`; attempts kept for their work can be discarded after all (`force`). */
  private async landAttemptWith(a: AttemptNode, how: string, force: boolean): Promise<void> {
    const answer = await this.api().landAttempt({ root: a.root, groupId: a.groupId, index: a.row.index, how, force });
    this.attemptsView.markLanded(a.groupId, a.row.index);
    const view = attemptLandedView(a.row.branch, answer);
    const sensitive = sensitiveView(answer.landed.sensitiveChanges, `attempt #${a.row.index}`);
    if (sensitive !== undefined) {
      void say.warn(sensitive.message, { detail: sensitive.detail });
    }
    if (!view.warning) {
      void say.info(view.message);
      return;
    }
    const choice = await say.warn(view.message, { detail: view.detail }, view.discardKept);
    if (choice === view.discardKept) {
      await this.landAttemptWith(a, how, true);
    }
  }

  private async review(arg: unknown): Promise<void> {
    const w = await this.targetWorktree(arg, 'Review worktree', arg === undefined);
    await this.reviewSelector(this.repoRootOf(w), w.id);
  }

  /**
   * The changed files of a worktree (or kept branch) in a QuickPick, against its base or
   * against the tip of the branch `against`; the pick opens its diff.
   */
  private async reviewSelector(root: string, worktree: string, against?: string): Promise<void> {
    const diff = await this.api().diff(root, worktree, against);
    const w = (await this.worktrees(root)).find((x) => x.id === worktree || x.branch === worktree);
    const target = against ?? diff.target ?? 'its base';
    if (diff.files.length === 0) {
      void say.info(`slipway: nothing to review in ${worktree}: no change against ${target}.`);
      return;
    }
    const picked = await pick(
      diff.files.map((file) => ({ label: literal(file.path), description: `${file.status} +${file.additions} -${file.deletions}`, file })),
      { title: `Review ${worktree} (against ${target})` },
    );
    if (!picked) {
      return;
    }
    await openDiffOf({
      root,
      selector: w?.id ?? worktree,
      branch: w?.branch ?? worktree,
      worktreePath: w?.path,
      base: diff.base,
      against,
      file: picked.file,
    });
  }

  private async showRunLog(arg: unknown, root?: string, logFile?: string): Promise<void> {
    let runId: string | undefined;
    if (isNode(arg) && arg.kind === 'run') {
      runId = arg.run.runId;
      root = arg.root;
    } else if (isNode(arg) && arg.kind === 'attempt') {
      runId = arg.row.runId;
      root = arg.root;
    } else if (typeof arg === 'string') {
      runId = arg;
    }
    if (runId === undefined) {
      const repoRoot = root ?? (await this.root());
      const { runs } = await this.api().runs(repoRoot);
      const picked = await pick(
        runs.map((r) => ({ label: literal(r.branch || r.runId), description: `${r.status} · ${r.runId}`, detail: literalMaybe(r.lastLine), runId: r.runId })),
        { title: 'Show the log of run' },
      );
      if (!picked) {
        return;
      }
      runId = picked.runId;
      root = repoRoot;
    }
    try {
      await this.logs.show(runId, root);
    } catch (error) {
      if (logFile === undefined || !isUnknownCommand(error)) {
        throw error;
      }
      // An older sidecar without slipway.log: the file, as it is now.
      await vscode.window.showTextDocument(vscode.Uri.file(logFile), { preview: true });
    }
  }
}

let extension: Extension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  extension = new Extension(context);
  context.subscriptions.push(extension);
  await extension.start();
}

export async function deactivate(): Promise<void> {
  const current = extension;
  extension = undefined;
  await current?.shutdown();
}
