// Unit tests of the pure parts: pickers, status bar, notifications, settings, errors.

import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  agentFromSettings,
  branchItems,
  closePreservedView,
  mountPickSpecs,
  relativeTime,
  resolveBinary,
  runFinishedView,
  sandboxFromSettings,
  sourceFromSettings,
  sourcesFromAnswers,
  statusView,
  workspaceItems,
  worktreeItems,
} from '../../src/model';
import {
  type BranchInfo,
  requests,
  runIdOfToken,
  progressToken,
  SlipwayApi,
  SlipwayError,
  type StatusNotification,
  toSlipwayError,
  withMountSourcePicks,
  withSourcePick,
  type MountSources,
  type WorkspaceInfo,
  type WorktreeStatus,
} from '../../src/protocol';
import { runFinished, worktree } from './builders';

const NOW = 1_800_000_000;

function branch(name: string, kind: 'local' | 'remote', extra: Partial<BranchInfo> = {}): BranchInfo {
  return {
    name,
    kind,
    remote: kind === 'remote' ? name.split('/')[0] : null,
    commit: 'f68bb0d6b440dfca27a12c3d43da6fc1346dd2e6',
    subject: `tip of ${name}`,
    time: NOW - 3 * 3600,
    isHead: false,
    isDefault: false,
    upstream: null,
    ...extra,
  };
}

// The shape of docs/protocol.md §5.1's example answer.
const BRANCHES: BranchInfo[] = [
  branch('feature/login', 'local'),
  branch('main', 'local', { isHead: true, upstream: 'origin/main' }),
  branch('origin/feature/search', 'remote'),
  branch('origin/main', 'remote', { isDefault: true }),
];

function status(worktrees: WorktreeStatus[], extra: { running?: number; dirtyPreserved?: number } = {}): StatusNotification {
  return {
    repositories: [
      {
        root: '/r',
        commonDir: '/r/.git',
        worktrees,
        runs: [],
        running: extra.running ?? 0,
        dirtyPreserved: extra.dirtyPreserved ?? 0,
      },
    ],
  };
}

describe('branch QuickPick items from a slipway.branches answer', () => {
  const items = branchItems(BRANCHES, NOW);

  it('groups Local then Remote under separators, in the sidecar order', () => {
    assert.deepEqual(
      items.map((i) => (i.type === 'separator' ? `-- ${i.label}` : i.ref)),
      ['-- Local', 'feature/login', 'main', '-- Remote', 'origin/feature/search', 'origin/main'],
    );
  });

  it('shows a local and a remote branch of one name as two entries', () => {
    const refs = items.flatMap((i) => (i.type === 'branch' ? [i.ref] : []));
    assert.ok(refs.includes('main') && refs.includes('origin/main'));
  });

  it('marks HEAD, the default and the upstream', () => {
    const byRef = new Map(items.flatMap((i) => (i.type === 'branch' ? [[i.ref, i] as const] : [])));
    assert.equal(byRef.get('main')?.description, 'HEAD · tracks origin/main');
    assert.equal(byRef.get('origin/main')?.description, 'default');
    assert.equal(byRef.get('feature/login')?.description, '');
  });

  it('labels local and remote with distinct icons, details with sha, subject and age', () => {
    const login = items.find((i) => i.type === 'branch' && i.ref === 'feature/login');
    assert.ok(login?.type === 'branch');
    assert.equal(login.label, '$(git-branch) feature/login');
    assert.equal(login.detail, 'f68bb0d6b4 · tip of feature/login · 3 hours ago');
    const remote = items.find((i) => i.type === 'branch' && i.ref === 'origin/feature/search');
    assert.ok(remote?.type === 'branch' && remote.label === '$(cloud) origin/feature/search');
  });

  it('leaves out a group that is empty', () => {
    const onlyLocal = branchItems([branch('main', 'local')], NOW);
    assert.deepEqual(
      onlyLocal.map((i) => i.type),
      ['separator', 'branch'],
    );
    assert.deepEqual(branchItems([], NOW), []);
  });


  it('formats ages', () => {
    assert.equal(relativeTime(NOW - 30, NOW), 'just now');
    assert.equal(relativeTime(NOW - 60, NOW), '1 minute ago');
    assert.equal(relativeTime(NOW - 2 * 86400, NOW), '2 days ago');
    assert.equal(relativeTime(NOW - 400 * 86400, NOW), '1 year ago');
  });
});

describe('status bar text from a slipway/status notification', () => {
  const wt = worktree();

  it('waits for the first notification', () => {
    const v = statusView(undefined, { paths: [] });
    assert.equal(v.text, '$(slipway-logo) slipway');
    assert.equal(v.warning, false);
  });

  it('shows the branch of the worktree holding the active file', () => {
    const v = statusView(status([wt]), { paths: [`${wt.path}/src/a.rs`, '/r'] });
    assert.equal(v.text, '$(slipway-logo) feature/x');
    assert.equal(v.current?.id, wt.id);
    assert.equal(v.warning, false);
    assert.match(v.tooltip, /Click to list worktrees/);
  });

  it('does not take a sibling with a common prefix for the worktree', () => {
    const v = statusView(status([wt]), { paths: [`${wt.path}-other/file`] });
    assert.equal(v.current, undefined);
  });

  it('marks a dirty worktree', () => {
    const v = statusView(status([worktree({ dirty: true, changedFiles: 2 })]), { paths: [wt.path] });
    assert.equal(v.text, '$(slipway-logo) feature/x*');
    assert.match(v.tooltip, /2 changed/);
  });

  it('shows the running agent', () => {
    const v = statusView(status([worktree({ state: 'running', runId: 'run-1-a' })], { running: 1 }), { paths: [wt.path] });
    assert.equal(v.text, '$(slipway-logo) feature/x $(sync~spin) agent');
    assert.match(v.tooltip, /run-1-a/);
  });

  it('counts other runs and dirty preserved worktrees, with the warning background', () => {
    const other = worktree({ id: 'o', path: '/r/.slipway/worktrees/o', branch: 'o', state: 'preserved', dirty: true, changedFiles: 1 });
    const v = statusView(status([wt, other], { running: 2, dirtyPreserved: 1 }), { paths: [wt.path] });
    assert.equal(v.text, '$(slipway-logo) feature/x $(sync~spin) 2 runs $(warning) 1');
    assert.equal(v.warning, true);
    assert.match(v.tooltip, /1 preserved worktree has uncommitted changes/);
  });

  it('summarises the repository outside any worktree', () => {
    const v = statusView(status([wt, worktree({ id: 'b', path: '/r/.slipway/worktrees/b' })]), { paths: ['/r/src'] });
    assert.equal(v.text, '$(slipway-logo) 2 worktrees');
    assert.equal(v.repository?.root, '/r');
  });

  it('falls back to the focused worktree', () => {
    const v = statusView(status([wt]), { paths: ['/r'], focus: wt.path });
    assert.equal(v.text, '$(slipway-logo) feature/x');
  });

  it('warns about a missing worktree', () => {
    const v = statusView(status([worktree({ health: 'missing' })]), { paths: [wt.path] });
    assert.equal(v.warning, true);
  });

  it('renders worktree picker items', () => {
    const [item] = worktreeItems([worktree({ dirty: true, changedFiles: 3, ahead: 2, why: 'kept' })]);
    assert.equal(item.label, '$(circle-filled) feature/x');
    assert.equal(item.description, 'active · 3 changed · 2 commits');
    assert.equal(item.detail, `${wt.path} — kept`);
  });
});

describe('runFinished and close views', () => {
  const base = runFinished();

  it("announces a completed run with the sidecar's actions: Review and Land, then Open", () => {
    assert.deepEqual(runFinishedView(base), {
      severity: 'info',
      message: 'slipway: run completed on feature/x: 2 commits',
      actions: ['Open', 'Show Log'],
    });
    const actions = [
      { kind: 'review' as const, worktree: 'feature/x' },
      { kind: 'land' as const, worktree: 'feature/x' },
      { kind: 'discard' as const, worktree: 'feature/x', force: true },
    ];
    assert.deepEqual(runFinishedView({ ...base, actions }).actions, ['Review', 'Land…', 'Open', 'Show Log']);
  });

  it('names the run a reply answered, so it reads apart from the run that asked', () => {
    assert.equal(
      runFinishedView({ ...base, replyTo: 'run-1-asked' }).message,
      'slipway: run completed on feature/x (the reply to run-1-asked): 2 commits',
    );
  });

  it('announces a failure with its message and the kept branch, no Open without a worktree', () => {
    const v = runFinishedView({
      ...base,
      status: 'failed',
      commits: [{ sha: 'a' }],
      preservedWorktreePath: null,
      keptBranch: "branch 'slipway/merge-1' was kept",
      error: { kind: 'hostDirty', message: 'the host has changes' },
    });
    assert.equal(v.severity, 'error');
    assert.equal(v.message, "slipway: run failed on feature/x: 1 commit — the host has changes — branch 'slipway/merge-1' was kept");
    assert.deepEqual(v.actions, ['Show Log']);
  });

  it('warns on cancel and errors on timeouts', () => {
    assert.equal(runFinishedView({ ...base, status: 'cancelled', error: { kind: 'cancelled', message: 'x' } }).severity, 'warning');
    assert.equal(runFinishedView({ ...base, status: 'timedOut', branch: '' }).message, 'slipway: run timed out: 2 commits');
  });

  it('shows what a forced close would lose', () => {
    const v = closePreservedView({
      removed: false,
      id: 'x',
      branch: 'feature/x',
      preservedPath: '/r/w',
      reason: 'it has uncommitted changes (2 paths): a, b',
      changedPaths: ['a', 'b'],
      commands: ['cd /r/w', 'git worktree remove --force /r/w'],
    });
    assert.equal(v.message, 'Worktree feature/x has uncommitted changes');
    assert.match(v.detail, /loses these uncommitted changes:\n {2}a\n {2}b/);
    assert.match(v.detail, /Inspect: cd \/r\/w/);
  });
});

describe('settings to protocol values', () => {
  // The names a sidecar advertises in `initialize` (the extension keeps no lists).
  const AGENTS = ['command', 'claude-code', 'codex', 'opencode', 'pi', 'cursor', 'copilot'];
  const SANDBOXES = ['none', 'docker', 'docker-isolated'];
  const POLICIES = ['host_head', 'current_branch', 'default', 'named', 'ask'];

  it('builds the command agent, and refuses one without a program', () => {
    assert.deepEqual(agentFromSettings({ type: 'command', command: ['sh', '-c', 'x'], model: 'm', effort: '' }, AGENTS), {
      agent: { type: 'command', command: ['sh', '-c', 'x'] },
    });
    assert.ok('error' in agentFromSettings({ type: 'command', command: [], model: '', effort: '' }, AGENTS));
  });

  it('builds named agents with model and effort only when set, from the names the sidecar gives', () => {
    assert.deepEqual(agentFromSettings({ type: 'claude-code', command: [], model: '', effort: '' }, AGENTS), { agent: { type: 'claude-code' } });
    assert.deepEqual(agentFromSettings({ type: 'codex', command: [], model: 'o3', effort: 'high' }, AGENTS), {
      agent: { type: 'codex', model: 'o3', effort: 'high' },
    });
    const unknown = agentFromSettings({ type: 'gpt', command: [], model: '', effort: '' }, AGENTS);
    assert.ok('error' in unknown && unknown.error.includes('claude-code'), JSON.stringify(unknown));
    // A provider the sidecar adds is usable without a new extension.
    assert.deepEqual(agentFromSettings({ type: 'newcomer', command: [], model: '', effort: '' }, [...AGENTS, 'newcomer']), {
      agent: { type: 'newcomer' },
    });
  });

  it('builds sandboxes, docker-isolated included; unset leaves the defaults to the sidecar', () => {
    assert.deepEqual(sandboxFromSettings('none', '', SANDBOXES), { sandbox: { type: 'none' } });
    assert.deepEqual(sandboxFromSettings('docker', 'img', SANDBOXES), { sandbox: { type: 'docker', image: 'img' } });
    assert.deepEqual(sandboxFromSettings('docker-isolated', 'img', SANDBOXES), { sandbox: { type: 'docker-isolated', image: 'img' } });
    assert.ok('error' in sandboxFromSettings('docker', '', SANDBOXES));
    assert.ok('error' in sandboxFromSettings('podman', 'img', SANDBOXES));
    assert.deepEqual(sandboxFromSettings('', '', SANDBOXES), { sandbox: undefined });
  });

  it('prefers a picked source over the policy setting', () => {
    assert.deepEqual(sourceFromSettings('ask', undefined, POLICIES), { policy: 'ask' });
    assert.deepEqual(sourceFromSettings('current-branch', undefined, POLICIES), { policy: 'current_branch' });
    assert.deepEqual(sourceFromSettings('default', 'origin/x', POLICIES), { policy: 'named', ref: 'origin/x' });
    assert.deepEqual(sourceFromSettings('bogus', undefined, POLICIES), { policy: 'ask' });
    // Unset: the repository's and the user's defaults decide; nothing is sent.
    assert.equal(sourceFromSettings('', undefined, POLICIES), undefined);
  });

  it('finds the binary on PATH or at the path given, and reports a missing one', () => {
    const exists = new Set(['/opt/bin/slipway', '/custom/slipway']);
    const isExec = (f: string) => exists.has(f);
    assert.equal(resolveBinary('slipway', '/usr/bin:/opt/bin', isExec), '/opt/bin/slipway');
    assert.equal(resolveBinary('', '/opt/bin', isExec), '/opt/bin/slipway');
    assert.equal(resolveBinary('/custom/slipway', '', isExec), '/custom/slipway');
    assert.equal(resolveBinary('/nope/slipway', '/opt/bin', isExec), undefined);
    assert.equal(resolveBinary('slipway', '/usr/bin', isExec), undefined);
  });

  it('looks in ~/.cargo/bin (where cargo install puts it) when PATH lacks it', () => {
    const isExec = (f: string) => f === '/home/me/.cargo/bin/slipway';
    assert.equal(resolveBinary('slipway', '/usr/bin', isExec, { home: '/home/me' }), '/home/me/.cargo/bin/slipway');
    const cargo = (f: string) => f === '/opt/cargo/bin/slipway';
    assert.equal(resolveBinary('slipway', '/usr/bin', cargo, { home: '/home/me', cargoHome: '/opt/cargo' }), '/opt/cargo/bin/slipway');
    assert.equal(resolveBinary('/abs/slipway', '/usr/bin', isExec, { home: '/home/me' }), undefined, 'a path given is the only place');
  });
});

describe('requests and errors', () => {
  it('sends exactly one object argument', () => {
    assert.deepEqual(requests.close({ root: '/r', worktree: 'x', force: true }), {
      command: 'slipway.close',
      arguments: [{ root: '/r', worktree: 'x', force: true }],
    });
    assert.deepEqual(requests.status({ path: '/r' }).arguments.length, 1);
  });

  it('maps progress tokens to run ids', () => {
    assert.equal(progressToken('run-1-a'), 'slipway-run-1-a');
    assert.equal(runIdOfToken('slipway-run-1-a'), 'run-1-a');
    assert.equal(runIdOfToken('other-token'), undefined);
    assert.equal(runIdOfToken(7), undefined);
  });

  it('reads data.kind and choices (whole branch entries) from a JSON-RPC error', () => {
    const main = branch('main', 'local');
    const e = toSlipwayError({ code: -32001, message: 'choose', data: { kind: 'sourceBranchRequired', choices: [main, 3, 'x'] } });
    assert.ok(e instanceof SlipwayError);
    assert.equal(e.kind, 'sourceBranchRequired');
    assert.deepEqual(e.data?.choices, [main]);
    assert.equal(toSlipwayError(new Error('plain')), undefined);
    assert.equal(toSlipwayError({ code: -32601, message: 'Method not found', data: 'x' })?.kind, undefined);
  });

  it('retries with the picked branch after a source error, and only then', async () => {
    const sent: unknown[] = [];
    const api = new SlipwayApi({
      executeCommand: (params) => {
        sent.push(params.arguments[0]);
        const arg = params.arguments[0] as { source?: { policy: string } };
        if (arg.source?.policy === 'ask') {
          return Promise.reject({ code: -32001, message: 'pick', data: { kind: 'sourceBranchRequired', choices: [branch('origin/x', 'remote')] } });
        }
        return Promise.resolve({ runId: 'run-1-a' });
      },
    });
    const answer = await withSourcePick((source) => api.run({ root: '/r', agent: { type: 'command', command: ['true'] }, source }), { policy: 'ask' }, (e) =>
      Promise.resolve(e.data?.choices?.[0]?.name),
    );
    assert.deepEqual(answer, { runId: 'run-1-a' });
    assert.deepEqual(
      sent.map((a) => (a as { source: unknown }).source),
      [{ policy: 'ask' }, { policy: 'named', ref: 'origin/x' }],
    );
    const dismissed = await withSourcePick(() => api.run({ root: '/r', agent: { type: 'command', command: ['true'] }, source: { policy: 'ask' } }), undefined, () =>
      Promise.resolve(undefined),
    );
    assert.equal(dismissed, undefined);
    await assert.rejects(
      withSourcePick(() => Promise.reject(new SlipwayError('busy', -32001, { kind: 'branchInUse' })), undefined, () => Promise.resolve('x')),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'branchInUse',
    );
  });
});

describe('Run Agent on Workspace: one picker per ask mount', () => {
  const DUO: WorkspaceInfo = {
    name: 'duo',
    path: '/h/.config/slipway/workspaces/duo.toml',
    workdir: '/w/b/sub',
    mounts: [
      { src: '/src/a', dst: '/w/a', readonly: false, isolation: 'worktree', source: { policy: 'ask' } },
      { src: '/src/b', dst: '/w/b', readonly: false, isolation: 'clone', source: { policy: 'ask' } },
      { src: '/src/c', dst: '/w/c', readonly: true, isolation: 'shared', source: { policy: 'named', ref: 'main' } },
    ],
  };
  const MOUNTS = [
    { dst: '/w/a', choices: [branch('main', 'local', { isHead: true }), branch('origin/release', 'remote')] },
    { dst: '/w/b', choices: [branch('main', 'local')] },
  ];

  it('builds the slipway.workspaces request with one empty object argument', () => {
    assert.deepEqual(requests.workspaces(), { command: 'slipway.workspaces', arguments: [{}] });
    const run = requests.run({
      root: '/src/a',
      agent: { type: 'command', command: ['true'] },
      workspace: 'duo',
      sources: { '/w/a': { policy: 'named', ref: 'main' } },
    });
    assert.deepEqual(run.arguments[0].sources, { '/w/a': { policy: 'named', ref: 'main' } });
    assert.equal(run.arguments[0].workspace, 'duo');
  });

  it('makes one picker spec per mount, in order, titled with the dst, offering its choices', () => {
    const specs = mountPickSpecs(MOUNTS, 'duo');
    assert.deepEqual(
      specs.map((s) => [s.dst, s.title, s.step, s.totalSteps]),
      [
        ['/w/a', 'Start /w/a from… (workspace duo)', 1, 2],
        ['/w/b', 'Start /w/b from… (workspace duo)', 2, 2],
      ],
    );
    assert.deepEqual(
      specs[0].items.flatMap((i) => (i.type === 'branch' ? [i.ref] : [])),
      ['main', 'origin/release'],
    );
    assert.match(specs[1].placeholder, /\/w\/b/);
    assert.deepEqual(mountPickSpecs([], 'duo'), []);
  });

  it('shows each mount choice with its tip, from the entries the sidecar gives', () => {
    const specs = mountPickSpecs(MOUNTS, undefined, NOW);
    assert.equal(specs[0].title, 'Start /w/a from…');
    assert.deepEqual(
      specs[0].items.map((i) => (i.type === 'branch' ? i.label : `-- ${i.label}`)),
      ['-- Local', '$(git-branch) main', '-- Remote', '$(cloud) origin/release'],
    );
    const tip = specs[1].items.find((i) => i.type === 'branch');
    assert.ok(tip?.type === 'branch' && tip.detail.includes('tip of main'), JSON.stringify(tip));
  });

  it('assembles the sources map from the answers, keyed by dst', () => {
    const specs = mountPickSpecs(MOUNTS, 'duo');
    assert.deepEqual(sourcesFromAnswers(specs, ['origin/release', 'main']), {
      '/w/a': { policy: 'named', ref: 'origin/release' },
      '/w/b': { policy: 'named', ref: 'main' },
    });
    assert.equal(sourcesFromAnswers(specs, ['origin/release']), undefined);
    assert.equal(sourcesFromAnswers(specs, ['origin/release', undefined]), undefined);
    assert.equal(sourcesFromAnswers(specs, ['', 'main']), undefined);
    assert.deepEqual(sourcesFromAnswers([], []), {});
  });

  it('renders workspace picker items', () => {
    const broken: WorkspaceInfo = { name: 'bad', path: '/h/bad.toml', error: 'missing field mounts' };
    const items = workspaceItems([DUO, broken]);
    assert.equal(items[0].label, '$(folder-library) duo');
    assert.equal(items[0].description, '3 mounts · 2 ask for a branch · workdir /w/b/sub');
    assert.match(items[0].detail, /\/src\/a → \/w\/a \(worktree, ask\)/);
    assert.match(items[0].detail, /\/src\/c → \/w\/c \(shared, main\)/);
    assert.equal(items[1].description, 'cannot be read');
    assert.equal(items[1].detail, 'missing field mounts');

  });

  it('reads data.mounts of sourceBranchRequired, in order', () => {
    const e = toSlipwayError({
      code: -32001,
      message: 'pick',
      data: {
        kind: 'sourceBranchRequired',
        choices: [branch('main', 'local')],
        mounts: [{ dst: '/w/a', choices: [branch('main', 'local'), 7] }, { dst: 3 }, { dst: '/w/b', choices: [] }],
      },
    });
    assert.deepEqual(e?.data?.mounts, [
      { dst: '/w/a', choices: [branch('main', 'local')] },
      { dst: '/w/b', choices: [] },
    ]);
  });

  it('sends the run again with every answer in sources, and gives up when a picker is dismissed', async () => {
    const sent: unknown[] = [];
    const api = new SlipwayApi({
      executeCommand: (params) => {
        const arg = params.arguments[0] as { sources?: Record<string, unknown> };
        sent.push(arg.sources);
        if (arg.sources === undefined) {
          return Promise.reject({ code: -32001, message: 'pick', data: { kind: 'sourceBranchRequired', choices: [branch('main', 'local')], mounts: MOUNTS } });
        }
        return Promise.resolve({ runId: 'run-2-b' });
      },
    });
    const run = (sources: MountSources | undefined) =>
      api.run({ root: '/src/a', agent: { type: 'command', command: ['true'] }, workspace: 'duo', sources });
    const seen: string[] = [];
    const answer = await withMountSourcePicks(run, (mounts) => {
      const specs = mountPickSpecs(mounts, 'duo');
      seen.push(...specs.map((s) => s.title));
      return Promise.resolve(sourcesFromAnswers(specs, ['origin/release', 'main']));
    });
    assert.deepEqual(answer, { runId: 'run-2-b' });
    assert.deepEqual(seen, ['Start /w/a from… (workspace duo)', 'Start /w/b from… (workspace duo)']);
    assert.deepEqual(sent, [
      undefined,
      { '/w/a': { policy: 'named', ref: 'origin/release' }, '/w/b': { policy: 'named', ref: 'main' } },
    ]);
    sent.length = 0;
    assert.equal(await withMountSourcePicks(run, () => Promise.resolve(undefined)), undefined);
    assert.deepEqual(sent, [undefined]);
    await assert.rejects(
      withMountSourcePicks(() => Promise.reject(new SlipwayError('pick', -32001, { kind: 'sourceBranchRequired', choices: [branch('main', 'local')] })), () =>
        Promise.resolve({}),
      ),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'sourceBranchRequired',
    );
  });
});
