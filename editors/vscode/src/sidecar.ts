// Starts `slipway lsp` with vscode-languageclient and keeps what it pushes.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { progressMessage, RunBoard } from './activity';
import { binarySearchDirs, resolveBinary } from './model';
import {
  type Activity,
  LOG_NOTIFICATION,
  type LogNotification,
  PROTOCOL_VERSION,
  RUN_ACTIVITY_NOTIFICATION,
  RUN_FINISHED_NOTIFICATION,
  type RunActivityNotification,
  type RunFinished,
  runIdOfToken,
  STATUS_NOTIFICATION,
  SlipwayApi,
  type StatusNotification, readVocabularies, type Vocabularies } from './protocol';
import * as say from './say';
import { shownMaybe } from './shown';
import { userSetting } from './settings';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Opens the Settings editor on `slipway.path`. The setting is machine-scoped, so in a
 * remote window (code-server, SSH, containers) it lives in the Remote tab: the User tab
 * would show "No Settings Found".
 */
async function openPathSetting(): Promise<void> {
  if (vscode.env.remoteName) {
    try {
      await vscode.commands.executeCommand('workbench.action.openRemoteSettings', 'slipway.path');
      return;
    } catch {
      // an older VS Code without a query argument: fall through
    }
  }
  await vscode.commands.executeCommand('workbench.action.openSettings', 'slipway.path');
}

type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/**
 * One run's progress: a cancellable notification fed by the sidecar's `$/progress`.
 * Cancel sends `slipway.cancel`.
 */
class RunProgress {
  private finish: (() => void) | undefined;
  private done = false;
  private reported = 0;
  private progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  private pending: ProgressValue[] = [];
  /** The latest step and activity: each message shows both. */
  private step: string | undefined;
  private latest: Activity | undefined;

  constructor(
    readonly runId: string,
    onCancel: (runId: string) => void,
  ) {
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `slipway: agent run ${runId}`, cancellable: true },
      (progress, token) => {
        this.progress = progress;
        token.onCancellationRequested(() => onCancel(runId));
        for (const value of this.pending) {
          this.apply(value);
        }
        this.pending = [];
        return new Promise<void>((resolve) => {
          if (this.done) {
            resolve();
          } else {
            this.finish = resolve;
          }
        });
      },
    );
  }

  apply(value: ProgressValue): void {
    if (this.progress === undefined) {
      this.pending.push(value);
      return;
    }
    if (value.kind === 'end') {
      this.end();
      return;
    }
    if (value.kind === 'report' && value.message !== undefined) {
      this.step = value.message;
    }
    const message = value.kind === 'begin' ? 'started' : progressMessage(value.message ?? this.step, this.latest);
    let increment: number | undefined;
    if (typeof value.percentage === 'number') {
      const pct = Math.max(0, Math.min(100, value.percentage));
      increment = Math.max(0, pct - this.reported);
      this.reported += increment;
    }
    this.progress.report({ message: shownMaybe(message), increment });
  }

  /** A `slipway/runActivity`: its step (or the last one) with the usage so far. */
  activity(a: Activity): void {
    this.latest = a;
    this.step = a.step ?? this.step;
    if (this.progress !== undefined && !this.done) {
      this.progress.report({ message: shownMaybe(progressMessage(this.step, a)) });
    }
  }

  end(): void {
    this.done = true;
    this.finish?.();
    this.finish = undefined;
  }
}

export class Sidecar implements vscode.Disposable {
  client: LanguageClient | undefined;
  api: SlipwayApi | undefined;
  /** The names the running sidecar accepts (from its `initialize` answer). */
  vocabularies: Vocabularies | undefined;
  status: StatusNotification | undefined;
  private readonly statusEmitter = new vscode.EventEmitter<StatusNotification | undefined>();
  readonly onStatus = this.statusEmitter.event;
  private readonly finishedEmitter = new vscode.EventEmitter<RunFinished>();
  readonly onRunFinished = this.finishedEmitter.event;
  private readonly logEmitter = new vscode.EventEmitter<LogNotification>();
  /** `slipway/log`: what a followed run's log gained. */
  readonly onLog = this.logEmitter.event;
  /** Every run's state and latest activity, kept from the notifications below. */
  readonly board = new RunBoard();
  private readonly activityEmitter = new vscode.EventEmitter<RunActivityNotification>();
  /** `slipway/runActivity`, after the board took it in. */
  readonly onActivity = this.activityEmitter.event;
  private readonly runs = new Map<string, RunProgress>();
  private readonly disposables: { dispose(): unknown }[] = [];

  constructor(readonly output: vscode.LogOutputChannel) {}

  /** Starts the sidecar; false (after telling the user what to do) when it cannot. */
  async start(): Promise<boolean> {
    const setting = userSetting('path', 'slipway');
    // Looked for again on every start: Retry finds a binary installed meanwhile.
    const binary = resolveBinary(setting, process.env.PATH, isExecutable, this.places());
    if (binary === undefined) {
      void this.reportMissing(setting);
      return false;
    }
    this.output.info(`starting ${binary} lsp`);
    const serverOptions: ServerOptions = {
      command: binary,
      args: ['lsp'],
      // No `transport`: TransportKind.stdio would append `--stdio`, which `slipway lsp`
      // refuses. Left out, the client still talks over stdio and adds no argument.
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      diagnosticCollectionName: 'slipway',
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // The extension confirms each run's end it has shown (`slipway.seen`): a window
      // that closed before showing one leaves it to the next window.
      initializationOptions: { confirmsSeen: true },
    };
    const client = new LanguageClient('slipway', 'slipway', serverOptions, clientOptions);
    client.onNotification(STATUS_NOTIFICATION, (params: StatusNotification) => {
      this.status = params;
      this.board.status(params, Date.now() / 1000);
      this.statusEmitter.fire(params);
    });
    client.onNotification(RUN_FINISHED_NOTIFICATION, (params: RunFinished) => {
      this.runs.get(params.runId)?.end();
      this.runs.delete(params.runId);
      this.board.finished(params, Date.now() / 1000);
      this.finishedEmitter.fire(params);
    });
    client.onNotification(RUN_ACTIVITY_NOTIFICATION, (params: RunActivityNotification) => {
      this.board.activity(params, Date.now() / 1000);
      this.runs.get(params.runId)?.activity(params.activity);
      this.activityEmitter.fire(params);
    });
    client.onNotification(LOG_NOTIFICATION, (params: LogNotification) => this.logEmitter.fire(params));
    try {
      await client.start();
    } catch (error) {
      this.output.error(`cannot start ${binary} lsp: ${String(error)}`);
      void vscode.window
        .showErrorMessage(
          `slipway: the sidecar (${binary} lsp) did not start: ${error instanceof Error ? error.message : String(error)}`,
          'Show Log',
          'Open Settings',
        )
        .then((choice) => {
          if (choice === 'Show Log') {
            this.output.show();
          } else if (choice === 'Open Settings') {
            void openPathSetting();
          }
        });
      try {
        await client.dispose();
      } catch {
        // already down
      }
      return false;
    }
    // Runs get our own cancellable progress instead of the client's silent window one.
    this.disposables.push(
      client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
        const runId = runIdOfToken(params.token);
        if (runId !== undefined) {
          this.track(client, params.token, runId);
        }
      }),
    );
    this.client = client;
    this.api = new SlipwayApi({
      executeCommand: (params) =>
        client.sendRequest(ExecuteCommandRequest.type, { command: params.command, arguments: params.arguments }),
    });
    this.vocabularies = readVocabularies(client.initializeResult?.capabilities.experimental);
    const version = client.initializeResult?.capabilities.experimental as { slipwayProtocol?: unknown } | undefined;
    if (typeof version?.slipwayProtocol === 'number' && version.slipwayProtocol > PROTOCOL_VERSION) {
      void vscode.window.showWarningMessage(
        `slipway: the sidecar speaks protocol ${version.slipwayProtocol}, this extension knows ${PROTOCOL_VERSION}; update the extension.`,
      );
    }
    return true;
  }

  private track(client: LanguageClient, token: string | number, runId: string): void {
    if (this.runs.has(runId)) {
      return;
    }
    const run = new RunProgress(runId, (id) => {
      void this.api
        ?.cancel({ runId: id })
        .then((answer) => this.output.info(`cancel ${id}: ${answer.status}`))
        .catch((error: unknown) => {
          void say.error(`slipway: cannot cancel ${id}: ${error instanceof Error ? error.message : String(error)}`);
        });
    });
    this.runs.set(runId, run);
    const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
      run.apply(value);
      if (value.kind === 'end') {
        subscription.dispose();
      }
    });
  }

  /** Where a bare binary name is looked for besides `PATH` (see `binarySearchDirs`). */
  private places(): { home: string; cargoHome?: string } {
    return { home: os.homedir(), cargoHome: process.env.CARGO_HOME };
  }

  private async reportMissing(setting: string): Promise<void> {
    const where = setting.includes('/')
      ? ''
      : ` (looked on PATH and in ${binarySearchDirs(undefined, this.places()).join(', ')})`;
    const choice = await vscode.window.showErrorMessage(
      `slipway: cannot find the slipway binary '${setting}'${where}. Install it (in the slipway repository: cargo install --path .) ` +
        'or set "slipway.path" to its absolute path, then Retry: it looks again.',
      'Open Settings',
      'Retry',
    );
    if (choice === 'Open Settings') {
      await openPathSetting();
    } else if (choice === 'Retry') {
      await vscode.commands.executeCommand('slipway.restartSidecar');
    }
  }

  async stop(): Promise<void> {
    for (const run of this.runs.values()) {
      run.end();
    }
    this.runs.clear();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
    const client = this.client;
    this.client = undefined;
    this.api = undefined;
    this.status = undefined;
    this.board.clear();
    this.statusEmitter.fire(undefined);
    if (client !== undefined) {
      try {
        await client.stop(2000);
      } catch (error) {
        this.output.warn(`stopping the sidecar: ${String(error)}`);
      }
    }
  }

  dispose(): void {
    void this.stop();
    this.statusEmitter.dispose();
    this.finishedEmitter.dispose();
    this.logEmitter.dispose();
    this.activityEmitter.dispose();
  }
}
