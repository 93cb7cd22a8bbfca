// Spawns the real `slipway lsp` and drives it with vscode-jsonrpc, through the
// extension's own SlipwayApi (the same request builders the extension sends).

import { type ChildProcess, spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';
import {
  LOG_NOTIFICATION,
  type LogNotification,
  RUN_ACTIVITY_NOTIFICATION,
  type RunActivityNotification,
  RUN_FINISHED_NOTIFICATION,
  type RunFinished,
  STATUS_NOTIFICATION,
  SlipwayApi,
  type StatusNotification,
} from '../../src/protocol';
import { slipwayBinary } from '../fixtures';

export interface Diagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  code?: string | number;
  source?: string;
  message: string;
}

export interface ProgressEvent {
  token: string | number;
  value: { kind: string; title?: string; message?: string; percentage?: number; cancellable?: boolean };
}

export interface InitializeAnswer {
  capabilities: {
    executeCommandProvider?: { commands: string[] };
    experimental?: { slipwayProtocol?: number };
  };
  serverInfo?: { name: string; version?: string };
}

type Waiter = { pred: () => boolean; resolve: () => void };

export class Session {
  readonly api: SlipwayApi;
  readonly statuses: StatusNotification[] = [];
  readonly finished: RunFinished[] = [];
  readonly logs: LogNotification[] = [];
  readonly activities: RunActivityNotification[] = [];
  readonly progress: ProgressEvent[] = [];
  readonly created: (string | number)[] = [];
  readonly diagnostics = new Map<string, Diagnostic[]>();
  stderr = '';
  private waiters: Waiter[] = [];

  private constructor(
    readonly proc: ChildProcess,
    readonly conn: MessageConnection,
  ) {
    this.api = new SlipwayApi({
      executeCommand: (params) => conn.sendRequest('workspace/executeCommand', params),
    });
    conn.onNotification(STATUS_NOTIFICATION, (p: StatusNotification) => this.push(() => this.statuses.push(p)));
    conn.onNotification(RUN_FINISHED_NOTIFICATION, (p: RunFinished) => this.push(() => this.finished.push(p)));
    conn.onNotification(LOG_NOTIFICATION, (p: LogNotification) => this.push(() => this.logs.push(p)));
    conn.onNotification(RUN_ACTIVITY_NOTIFICATION, (p: RunActivityNotification) => this.push(() => this.activities.push(p)));
    conn.onNotification('textDocument/publishDiagnostics', (p: { uri: string; diagnostics: Diagnostic[] }) =>
      this.push(() => this.diagnostics.set(p.uri, p.diagnostics)),
    );
    conn.onRequest('window/workDoneProgress/create', (p: { token: string | number }) => {
      this.push(() => this.created.push(p.token));
      return null;
    });
    conn.onUnhandledProgress((p) => this.push(() => this.progress.push(p as ProgressEvent)));
    proc.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
  }

  /** Starts `slipway lsp`, initializes with `folders` as workspace folders, sends `initialized`. */
  static async start(env: NodeJS.ProcessEnv, folders: string[]): Promise<{ session: Session; init: InitializeAnswer }> {
    const proc = spawn(slipwayBinary(), ['lsp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    if (!proc.stdout || !proc.stdin) {
      throw new Error('no stdio');
    }
    const conn = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
    const session = new Session(proc, conn);
    conn.listen();
    const init: InitializeAnswer = await conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri: null,
      capabilities: { window: { workDoneProgress: true } },
      workspaceFolders: folders.map((f) => ({ uri: pathToFileURL(f).href, name: f })),
    });
    await conn.sendNotification('initialized', {});
    return { session, init };
  }

  private push(f: () => void): void {
    f();
    this.waiters = this.waiters.filter((w) => {
      if (w.pred()) {
        w.resolve();
        return false;
      }
      return true;
    });
  }

  /** Resolves when `pred` holds (checked now and on every message), or rejects after `ms`. */
  until(pred: () => boolean, what: string, ms = 20000): Promise<void> {
    if (pred()) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { // allow-sleep: a deadline for the event, not a wait
        this.waiters = this.waiters.filter((w) => w.pred !== pred);
        reject(new Error(`timed out after ${ms} ms waiting for ${what}; stderr:\n${this.stderr.slice(-2000)}`));
      }, ms);
      this.waiters.push({
        pred,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  latestStatus(): StatusNotification | undefined {
    return this.statuses[this.statuses.length - 1];
  }

  async runFinished(runId: string, ms = 30000): Promise<RunFinished> {
    await this.until(() => this.finished.some((f) => f.runId === runId), `runFinished of ${runId}`, ms);
    const found = this.finished.find((f) => f.runId === runId);
    if (!found) {
      throw new Error('unreachable');
    }
    return found;
  }

  async stop(): Promise<void> {
    try {
      await Promise.race([this.conn.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 2000))]); // allow-sleep: a deadline for shutdown's answer on the way out
      await this.conn.sendNotification('exit');
    } catch {
      // already gone
    }
    const exited = new Promise<void>((resolve) => {
      if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
        resolve();
      } else {
        this.proc.once('exit', () => resolve());
      }
    });
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 3000); // allow-sleep: a deadline for the exit, then a kill
    await exited;
    clearTimeout(timer);
    this.conn.dispose();
  }
}
