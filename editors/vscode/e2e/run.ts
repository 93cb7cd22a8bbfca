// End to end in a real VS Code: code-server with the packaged .vsix installed, a temp
// repository (with a remote) opened, driven in headless Chromium with playwright-core.
//
// Environment (scripts/vscode-test.sh sets it):
//   CODE_SERVER   …/node_modules/code-server (the npm package folder)
//   NODE24        the node that runs code-server
//   VSIX          the packaged extension
//   SLIPWAY_BIN   the slipway binary
//   ARTIFACTS     where screenshots and logs go
//   CHROMIUM      default /usr/bin/chromium
//
// Prints one `ok - …` / `not ok - …` line per check and writes ARTIFACTS/e2e-result.json
// ({passed, failed}); exits non-zero when any check failed.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Browser, chromium, type Locator, type Page } from 'playwright-core';
import { ATTEMPT_AGENT, type Fixture, makeFixture, writeCommittingAgent } from '../test/fixtures';

function need(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set`);
  }
  return value;
}

const CODE_SERVER = need('CODE_SERVER');
const NODE24 = need('NODE24');
const VSIX = need('VSIX');
const SLIPWAY_BIN = need('SLIPWAY_BIN');
const ARTIFACTS = need('ARTIFACTS');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const STATUS_ITEM = '#workbench\\.parts\\.statusbar [id="slipway.slipway.status"]';
const LAND_ITEM = '#workbench\\.parts\\.statusbar [id="slipway.slipway.land"]';
const DISCARD_ITEM = '#workbench\\.parts\\.statusbar [id="slipway.slipway.discard"]';
const RUNS_ITEM = '#workbench\\.parts\\.statusbar [id="slipway.slipway.runs"]';
const QUICK_INPUT = '.quick-input-widget';
const WATCHDOG_MS = 600_000;

let passed = 0;
let failed = 0;
const started = Date.now();

function log(message: string): void {
  const secs = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[e2e ${secs}s] ${message}\n`);
}

async function check(name: string, body: () => Promise<void> | void): Promise<boolean> {
  try {
    await body();
    passed++;
    process.stdout.write(`ok - ${name}\n`);
    return true;
  } catch (error) {
    failed++;
    process.stdout.write(`not ok - ${name}\n  ${String(error instanceof Error ? (error.stack ?? error.message) : error).replace(/\n/g, '\n  ')}\n`);
    await afterFailure?.(failed).catch((e: unknown) => process.stdout.write(`  (after the failure: ${String(e)})\n`));
    return false;
  }
}

/**
 * What a failed check leaves for the reader and the checks after it: a screenshot of the
 * moment, and no menu, picker or dialog left open to swallow the next check's clicks.
 */
let afterFailure: ((n: number) => Promise<void>) | undefined;

function assert(cond: unknown, message: string): asserts cond {
  if (!cond) {
    throw new Error(message);
  }
}

/**
 * Opens `row`'s context menu and runs its item `label` from the keyboard. A menu item
 * takes a mouse click only once VS Code has armed it (100 ms after the menu renders, so a
 * right-click's own release cannot pick an item), and a click before that is dropped and
 * leaves the menu open; the item the pointer is over takes Enter at once. The menu's
 * closing is the sign the item ran.
 */
async function contextMenuRun(page: Page, row: Locator, label: string): Promise<void> {
  await row.click({ button: 'right' });
  const menu = page.locator('.monaco-menu');
  const item = menu.locator('.action-item', { has: page.locator('.action-label', { hasText: label }) }).first();
  await item.hover();
  await menu.locator('.action-item.focused', { hasText: label }).first().waitFor({ state: 'visible', timeout: 20_000 });
  await page.keyboard.press('Enter');
  await menu.first().waitFor({ state: 'hidden', timeout: 20_000 });
}

async function poll<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) {
        return value;
      }
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 200)); // allow-sleep: the poll interval of the wait-for-a-condition helper
  }
}

// ---------------------------------------------------------------------------
// Processes

/** Every descendant pid of `root` (by /proc ppid), deepest first. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const child of children.get(pid) ?? []) {
      walk(child);
      out.push(child);
    }
  };
  walk(root);
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills `root` and every process under it, by pid, then waits until they are gone. */
async function killTree(root: number): Promise<void> {
  const pids = [...descendants(root), root];
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    for (const pid of pids) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
    const deadline = Date.now() + 3000;
    while (pids.some(alive) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100)); // allow-sleep: the poll interval of a wait for the processes' death
    }
    if (!pids.some(alive)) {
      break;
    }
  }
  // Children that were started while we were killing.
  for (const pid of descendants(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

interface CodeServer {
  proc: ChildProcess;
  url: string;
  log: string;
}

function codeServerArgs(dirs: { config: string; userData: string; extensions: string }): string[] {
  return [
    path.join(CODE_SERVER, 'out', 'node', 'entry.js'),
    '--config',
    dirs.config,
    '--user-data-dir',
    dirs.userData,
    '--extensions-dir',
    dirs.extensions,
  ];
}

async function startCodeServer(
  fx: Fixture,
  dirs: { config: string; userData: string; extensions: string },
  env: NodeJS.ProcessEnv,
): Promise<CodeServer> {
  const logFile = path.join(ARTIFACTS, 'code-server.log');
  const out = fs.openSync(logFile, 'w');
  const proc = spawn(
    NODE24,
    [
      ...codeServerArgs(dirs),
      '--bind-addr',
      '127.0.0.1:0',
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--reconnection-grace-time',
      '5',
      '--disable-workspace-trust',
      fx.repo,
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  fs.writeFileSync(path.join(ARTIFACTS, 'code-server.pid'), String(proc.pid));
  let text = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not listen in 60 s:\n${text}`)), 60_000); // allow-sleep: a deadline for the event, not a wait
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      fs.writeSync(out, chunk);
      const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${code}:\n${text}`));
    });
  });
  proc.stdout?.on('data', (chunk: Buffer) => fs.writeSync(out, chunk));
  proc.stderr?.on('data', (chunk: Buffer) => fs.writeSync(out, chunk));
  await poll('code-server /healthz', async () => {
    const res = await fetch(`${url}/healthz`);
    return res.ok ? true : undefined;
  });
  return { proc, url, log: logFile };
}

// ---------------------------------------------------------------------------
// The workbench

function isLoopback(url: string): boolean {
  try {
    const u = new URL(url);
    if (u.protocol === 'data:' || u.protocol === 'blob:' || u.protocol === 'about:') {
      return true;
    }
    const host = u.hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\./.test(host);
  } catch {
    return false;
  }
}

async function runCommand(page: Page, title: string): Promise<void> {
  const input = page.locator(`${QUICK_INPUT} .quick-input-box input`);
  const row = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: title }).first();
  // The palette closes when something else takes the focus while it opens (a view the
  // previous command revealed settling, a run's notification): that is the workbench,
  // not the extension under test, so the palette is opened again, at most twice more.
  for (let attempt = 1; ; attempt += 1) {
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible' });
    try {
      await input.fill(`>${title}`, { timeout: 10_000 });
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await input.press('Enter');
      return;
    } catch (error) {
      const closed = !(await input.isVisible());
      if (!closed || attempt >= 3) {
        throw error;
      }
      await shot(page, `palette-closed-${title.replace(/[^A-Za-z]+/g, '-')}-${attempt}.png`);
      log(`the command palette closed before "${title}" ran (attempt ${attempt}); opening it again`);
    }
  }
}

async function answerInput(page: Page, promptText: string, value: string): Promise<void> {
  const widget = page.locator(QUICK_INPUT);
  await widget.locator('.quick-input-message', { hasText: promptText }).waitFor({ state: 'visible', timeout: 15_000 });
  const input = widget.locator('.quick-input-box input');
  await input.fill(value);
  await input.press('Enter');
}

function toast(page: Page, text: string | RegExp): Locator {
  return page.locator('.notification-toast', { hasText: text }).first();
}

async function shot(page: Page, name: string, target?: Locator): Promise<string> {
  const file = path.join(ARTIFACTS, name);
  if (target) {
    await target.screenshot({ path: file });
  } else {
    await page.screenshot({ path: file });
  }
  log(`screenshot ${file}`);
  return file;
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const f of fs.readdirSync(ARTIFACTS)) {
    if (f.endsWith('.png')) {
      fs.rmSync(path.join(ARTIFACTS, f));
    }
  }
  const fx = makeFixture('slipway-vscode-e2e-');
  log(`fixture ${fx.dir}`);
  // The agent commits only once the run's progress has been seen in the UI.
  const agentGate = path.join(fx.dir, 'agent-go');
  const agent = writeCommittingAgent(fx.dir, 2, 'agent.sh', agentGate);
  const run = path.join(fx.dir, 'code-server');
  const dirs = {
    config: path.join(run, 'config.yaml'),
    userData: path.join(run, 'user-data'),
    extensions: path.join(run, 'extensions'),
  };
  fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  fs.mkdirSync(dirs.extensions, { recursive: true });
  fs.writeFileSync(dirs.config, 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n');
  fs.writeFileSync(
    path.join(dirs.userData, 'User', 'settings.json'),
    JSON.stringify(
      {
        'chat.disableAIFeatures': true,
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'workbench.welcomePage.walkthroughs.openOnInstall': false,
        'extensions.autoCheckUpdates': false,
        // What VS Code would migrate `false` to: it leaves the file as written.
        'extensions.autoUpdate': 'off',
        'telemetry.telemetryLevel': 'off',
        'update.mode': 'none',
        'git.enabled': false,
        'security.workspace.trust.enabled': false,
        'slipway.agent.type': 'command',
        'slipway.agent.command': ['sh', agent],
        'slipway.sourcePolicy': 'ask',
        'slipway.strategy': 'branch',
      },
      null,
      2,
    ),
  );
  // slipway.path is machine-scoped: in code-server's (remote) window it is read from
  // the remote (Machine) settings, where a code-server user sets it. In the user
  // settings it reached the extension only now and then (as long as the workbench did
  // not know the setting's scope yet), and a Remote value reset to the default fell
  // back to it.
  fs.mkdirSync(path.join(dirs.userData, 'Machine'), { recursive: true });
  fs.writeFileSync(path.join(dirs.userData, 'Machine', 'settings.json'), JSON.stringify({ 'slipway.path': SLIPWAY_BIN }, null, 2));
  const env: NodeJS.ProcessEnv = {
    ...fx.env,
    EXTENSIONS_GALLERY: '{}',
    XDG_CONFIG_HOME: path.join(run, 'xdg-config'),
    XDG_DATA_HOME: path.join(run, 'xdg-data'),
    XDG_CACHE_HOME: path.join(run, 'xdg-cache'),
  };

  // Run Agent on Workspace: repository wsa (a clone with origin/release) and wsb, in the
  // workspace `duo` made with the CLI in code-server's XDG_CONFIG_HOME (the sidecar's).
  const seed = path.join(fx.dir, 'seed');
  fx.git(seed, 'switch', '-q', '-c', 'release', 'main');
  fs.writeFileSync(path.join(seed, 'release.txt'), 'release\n');
  fx.git(seed, 'add', '.');
  fx.git(seed, 'commit', '-q', '-m', 'Release work');
  fx.git(seed, 'push', '-q', fx.origin, 'release');
  fx.git(seed, 'switch', '-q', 'main');
  const wsa = path.join(fx.dir, 'wsa');
  fx.git(fx.dir, 'clone', '-q', fx.origin, wsa);
  const wsb = path.join(fx.dir, 'wsb');
  fs.mkdirSync(wsb);
  fx.git(wsb, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(wsb, 'b.txt'), 'b\n');
  fx.git(wsb, 'add', '.');
  fx.git(wsb, 'commit', '-q', '-m', 'b: initial');
  execFileSync(
    SLIPWAY_BIN,
    ['workspace', 'create', 'duo', '--workdir', '/w/a', '--mount', `${wsa}:/w/a`, '--mount', `${wsb}:/w/b`,
      '--mount-isolation', '/w/a=worktree', '--mount-isolation', '/w/b=clone',
      '--mount-source-branch', '/w/a=ask', '--mount-source-branch', '/w/b=ask'],
    { cwd: fx.dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );

  // The repository's own .vscode/settings.json names an agent program: a file an agent's
  // work can change. The extension reads program settings from user settings only, so
  // this program never runs (checked at the end).
  const plantedAgent = path.join(fx.dir, 'workspace-agent-ran');
  fs.mkdirSync(path.join(fx.repo, '.vscode'), { recursive: true });
  fs.writeFileSync(
    path.join(fx.repo, '.vscode', 'settings.json'),
    JSON.stringify({ 'slipway.agent.type': 'command', 'slipway.agent.command': ['sh', '-c', `touch ${plantedAgent}`] }),
  );
  fs.appendFileSync(path.join(fx.repo, '.git', 'info', 'exclude'), '.vscode/\n');

  let server: CodeServer | undefined;
  let browser: Browser | undefined;
  const watchdog = setTimeout(() => { // allow-sleep: a deadline for the whole run, not a wait
    process.stdout.write(`not ok - the end-to-end run finished within ${WATCHDOG_MS / 1000} s\n`);
    failed++;
    void cleanup().then(() => finish(fx, true));
  }, WATCHDOG_MS);

  const cleanup = async (): Promise<void> => {
    if (browser) {
      const b = browser;
      browser = undefined;
      await b.close().catch(() => undefined);
    }
    if (server?.proc.pid !== undefined) {
      const pid = server.proc.pid;
      server = undefined;
      await killTree(pid);
      log(`killed the code-server tree of pid ${pid}`);
    }
  };

  try {
    await check('code-server installs the packaged .vsix', () => {
      execFileSync(NODE24, [...codeServerArgs(dirs), '--install-extension', VSIX], { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
      const installed = fs.readdirSync(dirs.extensions).filter((d) => d.startsWith('slipway.slipway-'));
      assert(installed.length === 1, `extension folder missing: ${fs.readdirSync(dirs.extensions).join(', ')}`);
    });

    server = await startCodeServer(fx, dirs, env);
    log(`code-server at ${server.url} (pid ${server.proc.pid})`);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, serviceWorkers: 'block' });
    const blocked: string[] = [];
    let allowed = 0;
    // What the page reached: requests that completed, and WebSockets (which
    // the route does not see).
    const reached: string[] = [];
    context.on('requestfinished', (request) => reached.push(request.url()));
    context.on('page', (p) => p.on('websocket', (ws) => reached.push(ws.url())));
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (isLoopback(url)) {
        allowed++;
        return route.continue();
      }
      blocked.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    afterFailure = async (n) => {
      await shot(page, `failed-${n}.png`);
      for (let i = 0; i < 3; i++) {
        await page.keyboard.press('Escape');
      }
    };
    page.setDefaultTimeout(20_000);
    const url = server.url;
    await page.goto(url);

    await check('the workbench starts and loads extensions', async () => {
      await page.waitForFunction(
        () =>
          performance.getEntriesByName('code/didStartWorkbench').length > 0 &&
          performance.getEntriesByName('code/didLoadExtensions').length > 0,
        undefined,
        { timeout: 60_000 },
      );
    });

    const item = page.locator(STATUS_ITEM);
    let lastStatus = '';
    await check('the status bar item shows the repository once the sidecar reports', async () => {
      await item.waitFor({ state: 'visible', timeout: 30_000 });
      await poll('status text "0 worktrees"', async () => {
        const text = await item.innerText();
        lastStatus = text;
        return text.includes('0 worktrees') ? true : undefined;
      }, 30_000).catch((e: unknown) => {
        throw new Error(`${String(e)}; the item reads ${JSON.stringify(lastStatus)}`);
      });
    });

    const remoteCommit = fx.rev('origin/feature/search');
    let worktreePath = '';
    await check('New Worktree: the branch QuickPick has Local and Remote groups, and a remote branch can be picked', async () => {
      await runCommand(page, 'slipway: New Worktree');
      await answerInput(page, 'Branch for the new worktree', 'feature/search-ui');
      const widget = page.locator(QUICK_INPUT);
      const remoteRow = widget.locator('.monaco-list-row', { hasText: 'origin/feature/search' });
      await remoteRow.waitFor({ state: 'visible', timeout: 20_000 });
      const rows = await widget.locator('.monaco-list-row').allInnerTexts();
      const flat = rows.map((r) => r.replace(/\s+/g, ' ').trim());
      log(`picker rows: ${JSON.stringify(flat)}`);
      assert(flat.some((r) => r.includes('Local')), 'no Local separator');
      assert(flat.some((r) => r.includes('Remote')), 'no Remote separator');
      assert(flat.some((r) => /^main\s*HEAD/.test(r)), 'local main is not marked HEAD');
      assert(flat.some((r) => /^origin\/main\s*default/.test(r)), 'origin/main is not marked default');
      await shot(page, 'quickpick.png');
      // Filter, then pick the remote branch.
      await widget.locator('.quick-input-box input').fill('feature/search');
      await poll('filtered rows', async () => ((await widget.locator('.monaco-list-row').count()) <= 3 ? true : undefined));
      await shot(page, 'quickpick-filtered.png');
      await remoteRow.first().click();
      await toast(page, 'worktree feature/search-ui created').waitFor({ state: 'visible', timeout: 20_000 });
    });

    await check('the worktree exists on disk at the remote branch commit', () => {
      const list = fx.git(fx.repo, 'worktree', 'list', '--porcelain');
      const m = /worktree (\S+\/\.slipway\/worktrees\/feature-search-ui[^\n]*)\nHEAD ([0-9a-f]+)\nbranch refs\/heads\/feature\/search-ui/.exec(list);
      assert(m, `no worktree for feature/search-ui in:\n${list}`);
      worktreePath = m[1];
      assert(m[2] === remoteCommit, `worktree HEAD ${m[2]} is not origin/feature/search ${remoteCommit}`);
      assert(fs.existsSync(path.join(worktreePath, 'search.txt')), 'search.txt missing from the worktree');
      assert(fx.rev('HEAD', worktreePath) === remoteCommit, 'HEAD in the worktree differs');
    });

    await check('the status bar item shows the new worktree', async () => {
      await poll('status bar with feature/search-ui', async () => ((await item.innerText()).includes('feature/search-ui') ? true : undefined));
      await shot(page, 'statusbar.png', page.locator('#workbench\\.parts\\.statusbar'));
      await shot(page, 'after-new-worktree.png');
    });

    const beforeHandoff = fx.rev('feature/search-ui');
    await check('Hand Off to Sandbox runs the command agent: cancellable progress with its step', async () => {
      await runCommand(page, 'slipway: Hand Off to Sandbox');
      await answerInput(page, 'Prompt for the unattended run on feature/search-ui', 'add two files');
      // The agent waits at its gate: the run's cancellable progress shows meanwhile.
      const progress = toast(page, 'slipway: agent run');
      await progress.waitFor({ state: 'visible', timeout: 20_000 });
      // The current step follows the agent: its output line, in people's words.
      await poll("the agent's output as the progress step", async () =>
        (await progress.innerText()).includes('agent got prompt: add two files') ? true : undefined,
      );
      assert(!/agentStarted|worktreeReady/.test(await progress.innerText()), `an event key in the progress: ${await progress.innerText()}`);
      const buttons = await progress.locator('.monaco-button').allInnerTexts();
      assert(buttons.includes('Cancel'), `the progress has no Cancel button: ${JSON.stringify(buttons)}`);
      await shot(page, 'run-progress.png');
    });

    const runsItem = page.locator(RUNS_ITEM);
    await check("while the run goes, the runs item and the Runs view show its latest step (slipway/runActivity)", async () => {
      await poll('the runs item with the step', async () =>
        (await runsItem.innerText().catch(() => '')).includes('feature/search-ui: agent got prompt') ? true : undefined,
      );
      await runCommand(page, 'slipway: Show Runs');
      const runsPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) });
      const row = runsPane.locator('.monaco-list-row', { hasText: 'feature/search-ui' }).first();
      await poll('the Runs row with the step', async () =>
        /running · agent got prompt: add two files/.test((await row.innerText().catch(() => '')).replace(/\s+/g, ' ')) ? true : undefined,
      ).catch(async (e: unknown) => {
        await shot(page, 'run-activity-failure.png');
        throw e;
      });
      await shot(page, 'run-activity.png');
      await shot(page, 'statusbar-run-working.png', page.locator('#workbench\\.parts\\.statusbar'));
    });

    await check('the handed-off run finishes: notification, commits, the runs item says done', async () => {
      const before = beforeHandoff;
      fs.writeFileSync(agentGate, '');
      const done = toast(page, 'slipway: run completed on feature/search-ui: 2 commits');
      await done.waitFor({ state: 'visible', timeout: 60_000 });
      await shot(page, 'run-finished.png');
      const actions = await done.locator('.monaco-button').allInnerTexts();
      assert(actions.includes('Review') && actions.includes('Land…') && actions.includes('Open'), `actions are ${JSON.stringify(actions)}`);
      const commits = fx.git(fx.repo, 'log', '--format=%s', `${before}..feature/search-ui`).split('\n');
      assert(JSON.stringify(commits) === JSON.stringify(['agent: change 2', 'agent: change 1']), `commits: ${JSON.stringify(commits)}`);
      assert(fx.git(worktreePath, 'status', '--porcelain') === '', 'the worktree is not clean');
      await poll('the runs item says done', async () =>
        (await runsItem.innerText().catch(() => '')).includes('feature/search-ui: done') ? true : undefined,
      );
    });

    await check('.slipway is absent from the Explorer (files.exclude default), the rest of the repository is there', async () => {
      assert(fs.existsSync(path.join(fx.repo, '.slipway', 'worktrees')), 'no .slipway folder on disk to hide');
      await runCommand(page, 'View: Show Explorer');
      const rows = page.locator('.explorer-folders-view .monaco-list-row');
      await rows.filter({ hasText: 'README.md' }).first().waitFor({ state: 'visible', timeout: 20_000 });
      const names = (await rows.allInnerTexts()).map((r) => r.trim());
      log(`explorer rows: ${JSON.stringify(names)}`);
      assert(names.includes('app.txt'), `app.txt missing from the Explorer: ${JSON.stringify(names)}`);
      assert(!names.some((n) => n.includes('.slipway')), `.slipway is in the Explorer: ${JSON.stringify(names)}`);
      await shot(page, 'explorer.png');
    });

    // The Slipway view: its own activity bar entry, the worktree and its changed files.
    const viewRow = (text: string): Locator => page.locator('.pane-body .monaco-list-row', { hasText: text }).first();
    await check('the Slipway view (own activity bar icon) lists the worktree with its changed files', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      const entry = page.locator('.part.activitybar .action-item .action-label[aria-label^="Slipway"]').first();
      await entry.waitFor({ state: 'visible', timeout: 20_000 });
      const mask = await entry.evaluate(
        (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { maskImage: string; webkitMaskImage: string } }).getComputedStyle(el),
      );
      const image = mask.maskImage || mask.webkitMaskImage;
      assert(image.includes('slipway.svg'), `the activity bar entry does not draw media/slipway.svg: ${image}`);
      await shot(page, 'activitybar.png', page.locator('.part.activitybar'));
      await entry.click();
      const wt = viewRow('feature/search-ui');
      await wt.waitFor({ state: 'visible', timeout: 20_000 });
      await wt.click();
      await viewRow('agent-1.txt').waitFor({ state: 'visible', timeout: 20_000 });
      await viewRow('agent-2.txt').waitFor({ state: 'visible', timeout: 20_000 });
      const rows = (await page.locator('.pane-body .monaco-list-row').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
      log(`view rows: ${JSON.stringify(rows)}`);
      assert(rows.some((r) => /agent-1\.txt.*A/.test(r)), `agent-1.txt is not marked added: ${JSON.stringify(rows)}`);
      // Review compares with where the branch meets main now: search.txt, from
      // origin/feature/search where the worktree started, lands with it.
      assert(rows.some((r) => /search\.txt.*A/.test(r)), `search.txt (not on main) is not listed: ${JSON.stringify(rows)}`);
      await shot(page, 'view.png');
    });

    await check('clicking a changed file opens a diff editor of its base and the worktree file', async () => {
      await viewRow('agent-1.txt').click();
      const diff = page.locator('.monaco-diff-editor').first();
      await diff.waitFor({ state: 'visible', timeout: 20_000 });
      const tab = page.locator('.tabs-container .tab.active');
      await poll('diff tab title', async () => ((await tab.innerText()).includes('agent-1.txt') ? true : undefined));
      // The base side is empty (the file is new); the worktree side holds it. Monaco
      // draws spaces as no-break spaces: \s matches both.
      await poll('the worktree side shows the file', async () =>
        (await diff.innerText()).replace(/\s+/g, ' ').includes('change 1') ? true : undefined,
      );
      await shot(page, 'diff.png');
    });

    await check('a run in the Runs view opens its log in an output channel', async () => {
      const runsPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) });
      const run = runsPane.locator('.monaco-list-row', { hasText: 'feature/search-ui' }).first();
      await run.waitFor({ state: 'visible', timeout: 20_000 });
      const described = (await run.innerText()).replace(/\s+/g, ' ');
      assert(/completed/.test(described), `the run row does not say completed: ${described}`);
      await run.click();
      const panel = page.locator('.part.panel');
      await poll('the log in the output channel', async () =>
        (await panel.innerText()).replace(/\s+/g, ' ').includes('agent got prompt: add two files') ? true : undefined,
      ).catch(async (e: unknown) => {
        await shot(page, 'run-log-failure.png');
        throw e;
      });
      await shot(page, 'run-log.png');
      await runCommand(page, 'View: Toggle Panel Visibility');
    });

    await check("Discard of work found nowhere else lists the sidecar's dry run; Enter keeps it", async () => {
      const wt = viewRow('feature/search-ui');
      await wt.hover();
      await wt.locator('.action-label[aria-label="Discard Worktree…"]').click();
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: 20_000 });
      const text = await dialog.innerText();
      assert(text.includes('Discard feature/search-ui? 2 commits would be lost'), `dialog: ${text}`);
      assert(text.includes('agent: change 1') && text.includes('agent: change 2'), `the dialog does not list the commits: ${text}`);
      assert(text.includes('deletes the branch feature/search-ui'), `the dialog does not say the branch goes: ${text}`);
      await shot(page, 'discard-dialog.png');
      // The default button is the safe one: Enter keeps the work.
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'hidden' });
      // A later round trip through the same client (List Worktrees asks the
      // sidecar) still lists the worktree: a discard sent on Enter is over by then.
      await runCommand(page, 'slipway: List Worktrees');
      const listed = page.locator(QUICK_INPUT).locator('.monaco-list-row', { hasText: 'feature/search-ui' }).first();
      await listed.waitFor({ state: 'visible', timeout: 20_000 });
      await page.keyboard.press('Escape');
      assert(fs.existsSync(worktreePath), 'Enter discarded the worktree');
      assert(fx.git(fx.repo, 'branch', '--list', 'feature/search-ui') !== '', 'Enter deleted the branch');
    });

    await check('Land (a mode the sidecar names) merges the branch into the host branch', async () => {
      const tip = fx.rev('feature/search-ui');
      const host = fx.git(fx.repo, 'symbolic-ref', '--short', 'HEAD');
      const wt = viewRow('feature/search-ui');
      await wt.hover();
      await wt.locator('.action-label[aria-label="Land Worktree…"]').click();
      const widget = page.locator(QUICK_INPUT);
      const merge = widget.locator('.monaco-list-row', { hasText: 'merge' }).first();
      await merge.waitFor({ state: 'visible', timeout: 20_000 });
      const modes = (await widget.locator('.monaco-list-row').allInnerTexts()).map((r) => r.split('\n')[0].trim());
      log(`land modes: ${JSON.stringify(modes)}`);
      await shot(page, 'land-modes.png');
      await merge.click();
      await toast(page, `feature/search-ui landed into ${host}`).waitFor({ state: 'visible', timeout: 30_000 });
      await shot(page, 'landed.png');
      fx.git(fx.repo, 'merge-base', '--is-ancestor', tip, host);
      assert(fs.existsSync(path.join(fx.repo, 'agent-2.txt')), "the host checkout lacks the branch's file");
      assert(fx.git(fx.repo, 'status', '--porcelain') === '', 'the host checkout is not clean after the land');
      assert(fs.existsSync(worktreePath), 'the land removed the worktree');
      await runCommand(page, 'Notifications: Clear All Notifications');
    });

    await check('Close Worktree on a dirty worktree keeps it and shows what would be lost', async () => {
      assert(worktreePath !== '', 'no worktree to close');
      fs.writeFileSync(path.join(worktreePath, 'scratch.txt'), 'unsaved\n');
      // Clear the earlier toasts so the dialog is alone.
      await runCommand(page, 'Notifications: Clear All Notifications');
      await runCommand(page, 'slipway: Close Worktree');
      const pick = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'feature/search-ui' }).first();
      await pick.waitFor({ state: 'visible' });
      await page.locator(`${QUICK_INPUT} .quick-input-box input`).press('Enter');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: 20_000 });
      const text = await dialog.innerText();
      assert(text.includes('scratch.txt'), `the dialog does not name scratch.txt: ${text}`);
      await shot(page, 'close-dialog.png');
      // Keep it: the worktree stays, preserved and dirty.
      await dialog.locator('.monaco-button', { hasText: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      assert(fs.existsSync(path.join(worktreePath, 'scratch.txt')), 'the worktree went away without the force');
    });

    await check('the dirty preserved worktree shows in Problems and as a warning in the status bar', async () => {
      await poll('status bar warning count', async () => (/feature\/search-ui\*[\s\S]*1/.test(await item.innerText()) ? true : undefined));
      const background = await item.evaluate(
        (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor,
      );
      assert(background !== 'rgba(0, 0, 0, 0)' && background !== 'transparent', `no warning background: ${background}`);
      await runCommand(page, 'View: Focus Problems');
      const problem = page.locator('.markers-panel .monaco-list-row', { hasText: 'uncommitted changes in the preserved worktree' }).first();
      await problem.waitFor({ state: 'visible', timeout: 20_000 });
      await shot(page, 'problems.png');
      await shot(page, 'statusbar-warning.png', page.locator('#workbench\\.parts\\.statusbar'));
    });

    await check('closing again with the force removes the worktree and keeps the branch', async () => {
      await runCommand(page, 'slipway: Close Worktree');
      const pick = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'feature/search-ui' }).first();
      await pick.waitFor({ state: 'visible' });
      await page.locator(`${QUICK_INPUT} .quick-input-box input`).press('Enter');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: 20_000 });
      await dialog.locator('.monaco-button', { hasText: 'Remove Anyway' }).click();
      await toast(page, 'worktree feature/search-ui removed').waitFor({ state: 'visible', timeout: 20_000 });
      assert(!fs.existsSync(worktreePath), 'the worktree is still on disk');
      assert(fx.git(fx.repo, 'log', '-1', '--format=%s', 'feature/search-ui') === 'agent: change 2', 'the branch lost its commits');
      await poll('status bar back to 0 worktrees', async () => ((await item.innerText()).includes('0 worktrees') ? true : undefined));
    });

    // A worktree whose work is home already: made and landed by the command line.
    const landed = JSON.parse(
      execFileSync(SLIPWAY_BIN, ['--json', 'worktree', 'create', '--branch', 'feature/landed'], { cwd: fx.repo, env, encoding: 'utf8' }),
    ) as { path: string };
    fs.writeFileSync(path.join(landed.path, 'landed.txt'), 'landed\n');
    fx.git(landed.path, 'add', '.');
    fx.git(landed.path, 'commit', '-q', '-m', 'landed work');
    execFileSync(SLIPWAY_BIN, ['land', 'feature/landed', '--how', 'squash'], { cwd: fx.repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    await check('in a worktree the status bar offers Land and Discard', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      await poll('the status bar knows the landed worktree', async () => ((await item.innerText()).includes('1 worktree') ? true : undefined));
      await runCommand(page, 'slipway: Review Worktree');
      const pickWt = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'feature/landed' }).first();
      await pickWt.waitFor({ state: 'visible' });
      await pickWt.click();
      const pickFile = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'landed.txt' }).first();
      await pickFile.waitFor({ state: 'visible' });
      await pickFile.click();
      await page.locator('.monaco-diff-editor').first().waitFor({ state: 'visible', timeout: 20_000 });
      await poll('the diff tab of landed.txt', async () =>
        ((await page.locator('.tabs-container .tab.active').innerText()).includes('landed.txt') ? true : undefined),
      );
      for (const [sel, text] of [
        [LAND_ITEM, 'Land'],
        [DISCARD_ITEM, 'Discard'],
      ] as const) {
        const it = page.locator(sel);
        await it.waitFor({ state: 'visible', timeout: 20_000 });
        assert((await it.innerText()).includes(text), `the ${text} item reads ${await it.innerText()}`);
      }
      await shot(page, 'statusbar-land-discard.png', page.locator('#workbench\\.parts\\.statusbar'));
    });

    await check('Discard of landed work asks nothing, and the diff tab of the removed worktree closes', async () => {
      await page.locator(DISCARD_ITEM).click();
      await toast(page, 'slipway: feature/landed discarded').waitFor({ state: 'visible', timeout: 20_000 });
      assert(!fs.existsSync(landed.path), 'the landed worktree is still on disk');
      assert((await page.locator('.monaco-dialog-box').count()) === 0, 'a dialog asked about work that is home');
      await poll('the diff tab closed', async () =>
        (await page.locator('.tabs-container .tab', { hasText: 'landed.txt' }).count()) === 0 ? true : undefined,
      );
      await shot(page, 'discarded-landed.png');
    });

    await check('Run Agent on Workspace: one branch picker per ask mount, in order, then the run', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      await runCommand(page, 'slipway: Run Agent on Workspace');
      const widget = page.locator(QUICK_INPUT);
      const duo = widget.locator('.monaco-list-row', { hasText: 'duo' }).first();
      await duo.waitFor({ state: 'visible', timeout: 20_000 });
      await duo.click();
      await answerInput(page, 'Prompt for the run on workspace duo', 'add two files');
      const title = widget.locator('.quick-input-title');
      await poll('picker for /w/a', async () => ((await title.innerText()).includes('Start /w/a from') ? true : undefined));
      await shot(page, 'workspace-picker-a.png');
      const release = widget.locator('.monaco-list-row', { hasText: 'origin/release' }).first();
      await release.waitFor({ state: 'visible', timeout: 20_000 });
      await release.click();
      await poll('picker for /w/b', async () => ((await title.innerText()).includes('Start /w/b from') ? true : undefined));
      const main = widget.locator('.monaco-list-row', { hasText: 'main' }).first();
      await main.waitFor({ state: 'visible', timeout: 20_000 });
      await main.click();
      const done = toast(page, /slipway: run completed.*2 commits/);
      await done.waitFor({ state: 'visible', timeout: 60_000 });
      await shot(page, 'workspace-run-finished.png');
      const release0 = fx.rev('origin/release', wsa);
      const heads = fx.git(wsa, 'for-each-ref', '--format=%(refname:short)', 'refs/heads').split('\n');
      const branch = heads.find((h) => h !== 'main' && fx.git(wsa, 'rev-parse', `${h}~2`) === release0);
      assert(branch !== undefined, `no branch of wsa starts at origin/release: ${JSON.stringify(heads)}`);
    });

    // Attempts: three runs of one prompt from the palette, compared in the Attempts view.
    // The settings' agent script becomes one whose attempt i writes i lines (attempt 1's
    // check fails) while the group runs, and is put back after.
    const attemptsPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Attempts' }) });
    const attemptRow = (text: string): Locator => attemptsPane.locator('.monaco-list-row', { hasText: text }).first();
    const attemptText = async (text: string): Promise<string> => (await attemptRow(text).innerText().catch(() => '')).replace(/\s+/g, ' ');
    await check('Run Attempts…: the Attempts view lists the group, its attempts with their check results', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      const original = fs.readFileSync(agent, 'utf8');
      fs.writeFileSync(agent, ATTEMPT_AGENT);
      try {
        await runCommand(page, 'slipway: Run Attempts…');
        await answerInput(page, 'Prompt for the attempts', 'write some lines');
        await answerInput(page, 'How many attempts', '3');
        await answerInput(page, 'Check run in each attempt', 'test "$(wc -l < lines.txt)" -ge 2');
        await answerInput(page, 'Branch for the attempts', 'feature/tries');
        const main = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'main' }).first();
        await main.waitFor({ state: 'visible', timeout: 20_000 });
        await main.click();
        await attemptRow('write some lines').waitFor({ state: 'visible', timeout: 20_000 });
        // Each row gets its check result once its run has ended (the view redraws on runFinished).
        for (const [i, mark] of [
          [1, '✗'],
          [2, '✓'],
          [3, '✓'],
        ] as const) {
          await poll(`attempt #${i} with its check`, async () =>
            new RegExp(`#${i} command.*check ${mark} · 2 files \\+${i + 1} −0`).test(await attemptText(`#${i} command`)) ? true : undefined,
          60_000).catch(async (e: unknown) => {
            await shot(page, 'attempts-failure.png');
            throw e;
          });
        }
        await poll('the group says none runs', async () => (/3 attempts · just now|3 attempts · \d+ minutes? ago/.test(await attemptText('write some lines')) ? true : undefined));
      } finally {
        fs.writeFileSync(agent, original);
      }
      for (const i of [1, 2, 3]) {
        assert(fx.git(fx.repo, 'log', '-1', '--format=%s', `feature/tries/${i}`) === `attempt ${i}`, `feature/tries/${i} lacks its commit`);
      }
      await runCommand(page, 'Notifications: Clear All Notifications');
      await page.locator(QUICK_INPUT).waitFor({ state: 'hidden' });
      // A wider side bar, so the screenshots show the rows' descriptions whole.
      const bar = await page.locator('.part.sidebar').boundingBox();
      if (bar) {
        await page.mouse.move(bar.x + bar.width + 1, bar.y + bar.height / 2);
        await page.mouse.down();
        await page.mouse.move(bar.x + 640, bar.y + bar.height / 2, { steps: 8 });
        await page.mouse.up();
      }
      await shot(page, 'attempts-view.png');
      await shot(page, 'attempts-pane.png', attemptsPane);
    });

    await check("an attempt expands to its changed files; a click opens the diff editor", async () => {
      await attemptRow('#3 command').click();
      const lines = attemptsPane.locator('.monaco-list-row', { hasText: 'lines.txt' }).first();
      await lines.waitFor({ state: 'visible', timeout: 20_000 });
      await lines.click();
      const diff = page.locator('.monaco-diff-editor').first();
      await diff.waitFor({ state: 'visible', timeout: 20_000 });
      await poll('the diff tab of lines.txt', async () =>
        ((await page.locator('.tabs-container .tab.active').innerText()).includes('lines.txt') ? true : undefined),
      );
      await shot(page, 'attempt-diff.png');
    });

    await check("Diff Against Attempt… offers the group's other attempts and compares the files with the picked one's tip", async () => {
      await contextMenuRun(page, attemptRow('#3 command'), 'Diff Against Attempt…');
      const widget = page.locator(QUICK_INPUT);
      const other = widget.locator('.monaco-list-row', { hasText: '#2 command' }).first();
      await other.waitFor({ state: 'visible', timeout: 20_000 });
      const offered = (await widget.locator('.monaco-list-row').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
      assert(offered.length === 2 && offered.some((r) => r.includes('#1 command')), `the picker offers ${JSON.stringify(offered)}`);
      await other.click();
      const file = widget.locator('.monaco-list-row', { hasText: 'attempt.txt' }).first();
      await file.waitFor({ state: 'visible', timeout: 20_000 });
      await file.click();
      await poll('the diff tab against attempt 2', async () =>
        ((await page.locator('.tabs-container .tab.active').innerText()).includes('feature/tries/2 ↔ feature/tries/3') ? true : undefined),
      );
      // The left side is attempt 2's file, the right side attempt 3's.
      await poll('both attempts in the diff', async () => {
        const text = (await page.locator('.monaco-diff-editor').first().innerText()).replace(/\s+/g, ' ');
        return text.includes('attempt 2') && text.includes('attempt 3') ? true : undefined;
      });
      await shot(page, 'attempt-diff-against.png');
    });

    await check('Land This Attempt lands it, and once told to lose their work the other attempts leave the view', async () => {
      const winner = fx.rev('feature/tries/3');
      const row = attemptRow('#3 command');
      await row.hover();
      await row.locator('.action-label[aria-label="Land This Attempt"]').click();
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: 20_000 });
      const text = await dialog.innerText();
      assert(text.includes('Land attempt #3 and discard the others?'), `dialog: ${text}`);
      assert(text.includes('#1 feature/tries/1') && text.includes('#2 feature/tries/2'), `the dialog does not name the others: ${text}`);
      await shot(page, 'attempt-land-dialog.png');
      await dialog.locator('.monaco-button', { hasText: 'Land (merge)' }).click();
      // Their commits are found nowhere else: kept, with the reason, until told otherwise.
      const kept = toast(page, /attempt #3 \(feature\/tries\/3\) landed into main.*kept #1, #2/);
      await kept.waitFor({ state: 'visible', timeout: 30_000 });
      fx.git(fx.repo, 'merge-base', '--is-ancestor', winner, 'main');
      await shot(page, 'attempt-landed-kept.png');
      await kept.locator('.monaco-button', { hasText: 'Discard Them Too (Lose the Work)' }).click();
      await toast(page, /attempt #3 \(feature\/tries\/3\) landed into main.*discarded #1, #2/).waitFor({ state: 'visible', timeout: 30_000 });
      await poll('only the landed attempt left in the view', async () =>
        (await attemptsPane.locator('.monaco-list-row', { hasText: /#[12] command/ }).count()) === 0 && /landed/.test(await attemptText('#3 command'))
          ? true
          : undefined,
      );
      const branches = fx.git(fx.repo, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/feature/tries');
      assert(branches === 'feature/tries/3', `branches left: ${branches}`);
      await shot(page, 'attempt-landed.png');
      // Leave the repository as the checks after expect it: no worktree of the group.
      execFileSync(SLIPWAY_BIN, ['--repo', fx.repo, 'worktree', 'close', 'feature/tries/3'], { cwd: fx.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
      await runCommand(page, 'Notifications: Clear All Notifications');
    });

    // A run that ends asking, answered as a person would: the question in the notification
    // and the runs item, the answer typed into Reply to Run's input box, and the run that
    // answers it in the same worktree. The settings' agent script becomes one that commits
    // and asks, and (given the answer as its prompt, as a command agent's reply run is)
    // writes the answer into a committed file; it is put back after both checks.
    const QUESTION = 'Should I also update the docs?';
    const ANSWER = 'Yes, the README too';
    const ASKING_AGENT = [
      '#!/bin/sh',
      'set -e',
      'case "$SLIPWAY_PROMPT" in',
      "  'tidy the code')",
      "    echo work > work.txt && git add work.txt && git commit -q -m 'agent: the work'",
      "    echo 'Tidied the code.'",
      '    echo',
      `    echo '${QUESTION}'`,
      '    ;;',
      '  *)',
      "    printf '%s\\n' \"$SLIPWAY_PROMPT\" > answer.txt && git add answer.txt && git commit -q -m 'agent: as answered'",
      "    echo 'Updated them.'",
      '    ;;',
      'esac',
      '',
    ].join('\n');
    const agentBeforeQuestion = fs.readFileSync(agent, 'utf8');
    fs.writeFileSync(agent, ASKING_AGENT);
    let askedWorktree = '';
    const questionRunsPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) });
    // The row of the run that asked, not of the run that answers it (same branch, completed).
    const askedRunRow = questionRunsPane
      .locator('.monaco-list-row', { hasText: 'feature/asks' })
      .filter({ hasText: /needs input|answered/ })
      .first();
    const closeAsked = (): void => {
      execFileSync(SLIPWAY_BIN, ['--repo', fx.repo, 'worktree', 'close', 'feature/asks'], { cwd: fx.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    };
    try {
      await check('a run that asks: the notification shows its question with Reply…, the runs item stands out as needing input', async () => {
        await runCommand(page, 'Notifications: Clear All Notifications');
        await runCommand(page, 'slipway: Run Agent in New Worktree');
        await answerInput(page, 'Prompt for the run', 'tidy the code');
        await answerInput(page, 'Branch for the run', 'feature/asks');
        const main = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'main' }).first();
        await main.waitFor({ state: 'visible', timeout: 20_000 });
        await main.click();
        const asked = toast(page, `asks: ${QUESTION}`);
        await asked.waitFor({ state: 'visible', timeout: 60_000 });
        const said = (await asked.innerText()).replace(/\s+/g, ' ');
        assert(said.includes(`slipway: the agent on feature/asks asks: ${QUESTION} (1 commit so far)`), `the notification says: ${said}`);
        const buttons = await asked.locator('.monaco-button').allInnerTexts();
        assert(buttons.includes('Reply…'), `buttons: ${JSON.stringify(buttons)}`);
        await shot(page, 'question-asked.png');
        await poll('the runs item says needs input', async () =>
          (await runsItem.innerText().catch(() => '')).includes('needs input') ? true : undefined,
        );
        const background = await runsItem.evaluate(
          (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor,
        );
        assert(background !== 'rgba(0, 0, 0, 0)' && background !== 'transparent', `the runs item does not stand out: ${background}`);
        await shot(page, 'question-status.png', page.locator('#workbench\\.parts\\.statusbar'));
        // The Runs view says it in the same words, not the protocol's "needsInput".
        await runCommand(page, 'slipway: Show Runs');
        await poll('the Runs row says needs input', async () =>
          (await askedRunRow.innerText().catch(() => '')).includes('needs input') ? true : undefined,
        );
        // The work so far is on the branch, in the worktree kept for the answer.
        const list = fx.git(fx.repo, 'worktree', 'list', '--porcelain');
        const m = /worktree (\S+)\nHEAD [0-9a-f]+\nbranch refs\/heads\/feature\/asks$/m.exec(list);
        assert(m, `no worktree of feature/asks in:\n${list}`);
        askedWorktree = m[1];
        assert(fx.git(askedWorktree, 'log', '-1', '--format=%s') === 'agent: the work', 'the worktree lacks the work so far');
      });

      await check('Reply to Run: its input box shows the question; the answering run completes in the same worktree with the answer', async () => {
        assert(askedWorktree !== '', 'no run asked');
        // Dismissed, as a person might: the palette's Reply to Run still finds the run.
        await runCommand(page, 'Notifications: Clear All Notifications');
        await runCommand(page, 'slipway: Reply to Run');
        const widget = page.locator(QUICK_INPUT);
        await widget.locator('.quick-input-message', { hasText: QUESTION }).waitFor({ state: 'visible', timeout: 20_000 });
        const input = widget.locator('.quick-input-box input');
        await input.fill(ANSWER);
        await shot(page, 'question-reply-box.png');
        await input.press('Enter');
        await widget.waitFor({ state: 'hidden' });
        // The reply's own summary names the run whose question it answered.
        const done = toast(page, /slipway: run completed on feature\/asks \(the reply to run-\d+-[0-9a-f]+\): 1 commit/);
        await done.waitFor({ state: 'visible', timeout: 60_000 });
        await shot(page, 'question-answered.png');
        const subjects = fx.git(fx.repo, 'log', '-2', '--format=%s', 'feature/asks').split('\n');
        assert(JSON.stringify(subjects) === JSON.stringify(['agent: as answered', 'agent: the work']), `feature/asks: ${JSON.stringify(subjects)}`);
        const answered = fx.git(fx.repo, 'show', 'feature/asks:answer.txt');
        assert(answered === ANSWER, `the agent was told ${JSON.stringify(answered)}`);
        assert(fs.readFileSync(path.join(askedWorktree, 'answer.txt'), 'utf8') === `${ANSWER}\n`, 'the answer was not written in the same worktree');
        const worktrees = fx.git(fx.repo, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l === 'branch refs/heads/feature/asks');
        assert(worktrees.length === 1, `feature/asks has ${worktrees.length} worktrees`);
        await poll('the runs item no longer says needs input', async () =>
          !(await runsItem.innerText().catch(() => '')).includes('needs input') ? true : undefined,
        );
        // The item hides once nothing is left to show; shown, it stands out no more.
        if (await runsItem.isVisible()) {
          const after = await runsItem.evaluate(
            (el) => (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(el).backgroundColor,
          );
          assert(after === 'rgba(0, 0, 0, 0)' || after === 'transparent', `the runs item still stands out: ${after}`);
        }
        await poll('the Runs row of the question says answered', async () =>
          (await askedRunRow.innerText().catch(() => '')).includes('answered') ? true : undefined,
        );
        await shot(page, 'question-status-answered.png');
        // Leave the repository as the checks after expect it: no worktree of the run.
        closeAsked();
        assert(!fs.existsSync(askedWorktree), 'the worktree of feature/asks is still there');
        await runCommand(page, 'Notifications: Clear All Notifications');
      });
    } finally {
      fs.writeFileSync(agent, agentBeforeQuestion);
      // After a failure too: the checks after count the worktrees.
      try {
        if (fx.git(fx.repo, 'worktree', 'list', '--porcelain').includes('branch refs/heads/feature/asks')) {
          closeAsked();
        }
      } catch (error) {
        log(`closing feature/asks after a failure: ${String(error)}`);
      }
    }

    await check('an untrusted slipway.toml: a picker names its hook, Cancel is the active row, Trust approves it and the run goes', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      const marks = path.join(fx.dir, 'trust-marks');
      fs.mkdirSync(marks, { recursive: true });
      const config = path.join(fx.repo, 'slipway.toml');
      // The second hook is harmless but written to read backwards: a right-to-left
      // override would show it as "true # exit.png" if the picker drew it as it is. The
      // third is named like an icon (as `$(reboot)` would be), which VS Code would draw
      // as a glyph, or as nothing, if the picker did not escape it.
      fs.writeFileSync(
        config,
        `version = 2\n[hooks.host]\non_worktree_ready = ["touch ${path.join(marks, 'hook-ran')}", "true # \u202Egnp.tixe", "true '$(pass)'"]\n`,
      );
      const widget = page.locator(QUICK_INPUT);
      const start = async (): Promise<void> => {
        await runCommand(page, 'slipway: Run Agent in New Worktree');
        // The prompt first; the branch only when the sidecar says it is missing,
        // and trust comes before that.
        await answerInput(page, 'Prompt for the run', 'add two files');
        await poll('the trust picker', async () => ((await widget.locator('.quick-input-title').innerText()).includes('Trust slipway.toml?') ? true : undefined));
      };
      await start();
      const rows = (await widget.locator('.monaco-list-row').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
      log(`trust rows: ${JSON.stringify(rows)}`);
      assert(rows.some((r) => r.includes(`runs: touch ${path.join(marks, 'hook-ran')}`)), `the picker does not name the hook: ${JSON.stringify(rows)}`);
      assert(
        rows.some((r) => r.includes('runs: true # \uFFFDgnp.tixe')) && !rows.some((r) => r.includes('\u202E')),
        `the picker draws the reordering character of slipway.toml instead of U+FFFD: ${JSON.stringify(rows)}`,
      );
      assert(
        rows.some((r) => r.includes("runs: true '$(pass)'")),
        `the picker does not show the hook named like an icon as it is written: ${JSON.stringify(rows)}`,
      );
      const active = (await widget.locator('.monaco-list-row.focused').first().innerText()).trim();
      assert(active.includes('Cancel'), `the active (default) row is ${JSON.stringify(active)}, not Cancel`);
      await shot(page, 'trust-picker.png');
      // Enter takes the default: nothing is approved and nothing runs.
      await widget.locator('.quick-input-box input').press('Enter');
      await widget.waitFor({ state: 'hidden' });
      await toast(page, 'not trusted; nothing was done').waitFor({ state: 'visible', timeout: 20_000 });
      assert(fs.readdirSync(marks).length === 0, 'the hook ran after Cancel');
      assert(!fx.git(fx.repo, 'worktree', 'list').includes('feature-trusted'), 'a worktree was made after Cancel');
      // Again, and Trust: the approval is recorded, the same run is sent again (its branch and source asked), and the hook runs.
      await start();
      await widget.locator('.monaco-list-row', { hasText: /approve slipway\.toml at/ }).first().click();
      await answerInput(page, 'Branch for the run', 'feature/trusted');
      const main = widget.locator('.monaco-list-row', { hasText: 'main' }).first();
      await poll('the source picker', async () => ((await widget.locator('.quick-input-title').innerText()).includes('from') ? true : undefined));
      await main.waitFor({ state: 'visible', timeout: 20_000 });
      await main.click();
      // The agent's files are on main already (the land above): it has nothing to commit,
      // and how its run ends is not the point here; that it ran after its hook is.
      await toast(page, /slipway: run \w+( \w+)? on feature\/trusted/).waitFor({ state: 'visible', timeout: 60_000 });
      assert(fs.existsSync(path.join(marks, 'hook-ran')), 'the approved hook did not run');
      // Leave the repository as it was: no worktree, the file gone, its approval dropped.
      const cli = (...args: string[]): string =>
        execFileSync(SLIPWAY_BIN, ['--repo', fx.repo, ...args], { cwd: fx.dir, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      cli('worktree', 'close', 'feature/trusted');
      fs.rmSync(config);
      cli('trust');
      await runCommand(page, 'Notifications: Clear All Notifications');
    });

    await check('a missing binary shows an actionable error whose Open Settings fixes slipway.path', async () => {
      await runCommand(page, 'Notifications: Clear All Notifications');
      // Set a wrong path in the Settings editor, as a user would. slipway.path is
      // machine-scoped: in code-server (a remote window) it is under Remote.
      await runCommand(page, 'Preferences: Open Remote Settings');
      const editor = page.locator('.settings-editor');
      await editor.waitFor({ state: 'visible' });
      await page.keyboard.type('slipway.path');
      const input = editor.locator('.setting-item-contents', { hasText: 'Slipway: Path' }).locator('.setting-item-control input').first();
      await input.waitFor({ state: 'visible' });
      await input.fill('/nonexistent/slipway');
      await input.press('Tab');
      const error = toast(page, "cannot find the slipway binary '/nonexistent/slipway'");
      await error.waitFor({ state: 'visible', timeout: 20_000 });
      const buttons = await error.locator('.monaco-button').allInnerTexts();
      assert(buttons.includes('Open Settings') && buttons.includes('Retry'), `buttons: ${JSON.stringify(buttons)}`);
      await poll('status bar error', async () => (/^\s*slipway\s*$/.test(await item.innerText()) ? true : undefined));
      await shot(page, 'missing-binary.png');
      // The notification's Open Settings shows the setting (in the Remote tab here).
      await error.locator('.monaco-button', { hasText: 'Open Settings' }).click();
      const fix = page.locator('.settings-editor .setting-item-contents', { hasText: 'Slipway: Path' }).locator('.setting-item-control input').first();
      await fix.waitFor({ state: 'visible' });
      await fix.fill(SLIPWAY_BIN);
      await fix.press('Tab');
      await poll('status bar back', async () => ((await item.innerText()).includes('0 worktrees') ? true : undefined));
    });

    await check('a bare slipway.path is found in ~/.cargo/bin, and Retry looks again', async () => {
      // The Settings editor of the check before is still open.
      const cargoBin = path.join(String(env.HOME), '.cargo', 'bin');
      const editor = page.locator('.settings-editor .setting-item-contents', { hasText: 'Slipway: Path' }).locator('.setting-item-control input').first();
      await editor.waitFor({ state: 'visible' });
      await editor.fill('slipway');
      await editor.press('Tab');
      const error = toast(page, "cannot find the slipway binary 'slipway'");
      await error.waitFor({ state: 'visible', timeout: 20_000 });
      const said = await error.innerText();
      assert(said.includes(cargoBin), `the error does not say where it looked: ${said}`);
      await shot(page, 'missing-binary-cargo.png');
      // Installed meanwhile (cargo install puts it there); Retry finds it without a restart.
      fs.mkdirSync(cargoBin, { recursive: true });
      fs.symlinkSync(SLIPWAY_BIN, path.join(cargoBin, 'slipway'));
      await error.locator('.monaco-button', { hasText: 'Retry' }).click();
      await poll('status bar back through ~/.cargo/bin', async () => ((await item.innerText()).includes('0 worktrees') ? true : undefined));
    });

    await check("a window that reconnects is told of the run that ended while it was away", async () => {
      // A fresh window (the Settings editor of the checks before overlays this one).
      await page.goto(url);
      await poll('the status bar of the fresh window', async () => (/worktrees?/.test(await item.innerText()) ? true : undefined), 60_000);
      // The agent waits at its gate again, so the tab surely goes while it works (it
      // used to end within the poll's interval now and then, before `running` was seen).
      fs.rmSync(agentGate);
      await runCommand(page, 'slipway: Run Agent in New Worktree');
      await answerInput(page, 'Prompt for the run', 'while you were away');
      await answerInput(page, 'Branch for the run', 'feature/away');
      const row = page.locator(`${QUICK_INPUT} .monaco-list-row`, { hasText: 'main' }).first();
      await row.waitFor({ state: 'visible', timeout: 20_000 });
      await row.click();
      const record = (): string | undefined => {
        const dir = path.join(fx.repo, '.slipway', 'runs');
        for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json') && !n.endsWith('.request.json'))) {
          const r = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { state: string; branch?: string };
          if (r.branch === 'feature/away') {
            return r.state;
          }
        }
        return undefined;
      };
      await poll('the run started', () => (record() === 'running' ? true : undefined));
      // The tab goes while the agent works; its extension host lingers for the
      // reconnection grace with the sidecar that hears the end.
      await page.close();
      fs.writeFileSync(agentGate, '');
      await poll('the run ended', () => (record() === 'finished' ? true : undefined), 60_000);
      const again = await context.newPage();
      await again.goto(url);
      // However it ended (the agent's files are on main already: its commit fails), it is told.
      const told = again.locator('.notification-toast', { hasText: /slipway: run \w+( \w+)? on feature\/away/ }).first();
      await told.waitFor({ state: 'visible', timeout: 60_000 }).catch(async (e: unknown) => {
        await shot(again, 'reconnected-failure.png');
        await runCommand(again, 'Notifications: Show Notifications').catch(() => undefined);
        await shot(again, 'reconnected-failure-center.png');
        throw e;
      });
      const buttons = await told.locator('.monaco-button').allInnerTexts();
      assert(buttons.includes('Review') && buttons.includes('Land…'), `buttons: ${JSON.stringify(buttons)}`);
      await shot(again, 'reconnected-run-finished.png');
    });

    await check("the agent program in the repository's .vscode/settings.json never ran (user settings only)", () => {
      assert(!fs.existsSync(plantedAgent), 'the workspace settings chose the agent program');
    });

    await check('the browser talked to loopback only (every other request aborted, every request and WebSocket that went through on loopback)', () => {
      log(`aborted requests: ${blocked.length}${blocked.length ? ` (${blocked.slice(0, 5).join(', ')})` : ''}`);
      assert(allowed > 0, 'no request reached code-server through the route');
      assert(reached.some((u) => u.startsWith('ws')), 'no WebSocket was seen: the check would miss one');
      const elsewhere = reached.filter((u) => !isLoopback(u));
      assert(elsewhere.length === 0, `the page reached beyond loopback: ${elsewhere.slice(0, 5).join(', ')}`);
    });
    if (failed > 0) {
      await shot(page, 'failure.png').catch(() => undefined);
    }
  } catch (error) {
    failed++;
    process.stdout.write(`not ok - end-to-end setup\n  ${String(error instanceof Error ? (error.stack ?? error.message) : error)}\n`);
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
  finish(fx, false);
}

function finish(fx: Fixture, timedOut: boolean): void {
  const leftovers = fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(fx.dir);
      } catch {
        return false;
      }
    });
  if (leftovers.length > 0) {
    process.stdout.write(`not ok - every process of the run is gone (left: ${leftovers.join(', ')})\n`);
    failed++;
  } else {
    passed++;
    process.stdout.write('ok - every process of the run is gone\n');
  }
  fs.writeFileSync(path.join(ARTIFACTS, 'e2e-result.json'), JSON.stringify({ passed, failed, timedOut }));
  if (failed === 0) {
    fx.cleanup();
  } else {
    log(`kept ${fx.dir} for inspection`);
  }
  log(`end-to-end checks: ${passed} ok, ${failed} not ok`);
  process.exit(failed === 0 ? 0 : 1);
}

void main();
