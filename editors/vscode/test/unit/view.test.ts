// Unit tests of what the Slipway view, land, discard, the run log and the
// run-finished warnings show (the pure parts in model.ts).

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  appendLog,
  closeConfirmView,
  diffDocQuery,
  diffFileView,
  discardRiskView,
  epochSeconds,
  landedMessage,
  landModeItems,
  parseDiffDocQuery,
  quarantineView,
  runNodeView,
  STATUS_ICON,
  worktreeNodeView,
} from '../../src/model';
import { COMMANDS, type DiffFile, OPTIONAL_COMMANDS, isUnknownCommand, requests, type RunInfo, SlipwayApi } from '../../src/protocol';
import { runFinished, worktree } from './builders';

function file(extra: Partial<DiffFile> = {}): DiffFile {
  return { path: 'src/app.ts', status: 'modified', additions: 3, deletions: 1, binary: false, committed: true, uncommitted: false, ...extra };
}

const finished = runFinished({ commits: [{ sha: 'a' }] });

describe('the Slipway view rows', () => {
  it('shows a worktree with its state and a context value for the inline actions', () => {
    const v = worktreeNodeView(worktree({ ahead: 2, dirty: true, changedFiles: 1 }));
    assert.equal(v.label, 'feature/x');
    assert.equal(v.description, 'active · 1 changed · 2 commits');
    assert.equal(v.icon, 'circle-filled');
    assert.equal(v.contextValue, 'slipway.worktree');
    const running = worktreeNodeView(worktree({ state: 'running', runId: 'run-1' }));
    assert.equal(running.icon, 'sync~spin');
    assert.equal(running.contextValue, 'slipway.worktree.running');
  });

  it('never draws the worktree with Git’s branch icon', () => {
    assert.notEqual(worktreeNodeView(worktree()).icon, 'git-branch');
    assert.equal(STATUS_ICON, '$(slipway-logo)');
  });

  it('shows a changed file by name, folder, status letter and counts', () => {
    const v = diffFileView(file());
    assert.equal(v.label, 'app.ts');
    assert.equal(v.description, 'src · M · +3 −1');
    assert.equal(v.icon, 'diff-modified');
    assert.equal(v.contextValue, 'slipway.file');
    assert.match(v.tooltip, /committed/);
    const added = diffFileView(file({ path: 'new.txt', status: 'added', additions: 1, deletions: 0, committed: false, uncommitted: true }));
    assert.equal(added.description, 'A · +1 −0');
    assert.match(added.tooltip, /uncommitted/);
    assert.equal(diffFileView(file({ binary: true })).description, 'src · M · binary');
    assert.match(diffFileView(file({ status: 'renamed', oldPath: 'src/old.ts' })).tooltip, /renamed from src\/old\.ts/);
  });

  it('shows a run with status, agent, sandbox and age; the last log line in the tooltip', () => {
    const run: RunInfo = {
      runId: 'run-9-z',
      status: 'running',
      agent: 'command',
      sandbox: 'docker',
      branch: 'feature/x',
      worktreePath: '/r/.slipway/worktrees/x',
      startedAt: 1000,
      endedAt: null,
      iterations: 1,
      lastLine: 'agent: change 1',
    };
    const v = runNodeView(run, 1000 + 120);
    assert.equal(v.label, 'feature/x');
    // A running run shows how long it has gone; an ended one when it started.
    assert.equal(v.description, 'running · command in docker · 2m 00s');
    assert.match(v.tooltip, /running for 2m 00s/);
    assert.equal(v.contextValue, 'slipway.run.running');
    assert.match(v.tooltip, /last line: agent: change 1/);
    const done = runNodeView({ ...run, status: 'failed', branch: null, agent: { type: 'codex' }, sandbox: 'none', startedAt: '1970-01-01T00:16:40Z' }, 1000);
    assert.equal(done.label, 'run-9-z');
    assert.equal(done.description, 'failed · codex · just now');
    assert.equal(done.icon, 'error');
    assert.equal(done.contextValue, 'slipway.run');
  });

  it('says a run that asks needs input, with its question in the tooltip, and answered once replied to', () => {
    const asked: RunInfo = {
      runId: 'run-7-q',
      status: 'needsInput',
      agent: 'command',
      sandbox: 'none',
      branch: 'feature/asks',
      worktreePath: '/r/.slipway/worktrees/asks',
      startedAt: 1000,
      endedAt: 1010,
      iterations: 1,
      lastLine: null,
      question: { text: 'Should I also update the docs?', reason: 'asked' },
    };
    const v = runNodeView(asked, 1000);
    assert.equal(v.description, 'needs input · command · just now');
    assert.equal(v.icon, 'question');
    assert.match(v.tooltip, /asks: Should I also update the docs\?/);
    const answered = runNodeView(asked, 1000, undefined, true);
    assert.equal(answered.description, 'answered · command · just now');
    assert.notEqual(answered.icon, 'question');
    assert.match(answered.tooltip, /asked: Should I also update the docs\?/);
    assert.equal(runNodeView({ ...asked, status: 'timedOut', question: undefined }, 1000).description, 'timed out · command · just now');
  });

  it('reads run times in seconds, milliseconds or RFC 3339', () => {
    assert.equal(epochSeconds(1000), 1000);
    assert.equal(epochSeconds(1_700_000_000_000), 1_700_000_000);
    assert.equal(epochSeconds('1970-01-01T00:00:10Z'), 10);
    assert.equal(epochSeconds('soon'), undefined);
    assert.equal(epochSeconds(null), undefined);
  });

  it('round-trips a diff document reference, and refuses anything else', () => {
    const ref = { root: '/r', worktree: 'feature-x-1', path: 'src/a b.ts', side: 'base' as const };
    assert.deepEqual(parseDiffDocQuery(diffDocQuery(ref)), ref);
    assert.equal(parseDiffDocQuery('not json'), undefined);
    assert.equal(parseDiffDocQuery(JSON.stringify({ ...ref, side: 'left' })), undefined);
  });
});

describe('land and discard', () => {
  it('offers exactly the sidecar’s land modes, in its order', () => {
    assert.deepEqual(
      landModeItems(['rebase', 'merge', 'octopus'], 'feature/x', 'main').map((i) => [i.label, i.how]),
      [
        ['rebase', 'rebase'],
        ['merge', 'merge'],
        ['octopus', 'octopus'],
      ],
    );
    assert.match(landModeItems(['squash'], 'feature/x', 'main')[0].description, /feature\/x → main/);
    assert.deepEqual(landModeItems([], 'feature/x', 'main'), []);
  });

  it('says where a land went', () => {
    assert.equal(
      landedMessage('feature/x', { landed: true, into: 'main', commit: '0123456789abcdef', kind: 'fastForward' }),
      'slipway: feature/x landed into main (fastForward, 0123456789)',
    );
  });

  it('asks nothing before a discard that loses nothing', () => {
    const v = discardRiskView({ branch: 'feature/x', path: '/r/wt', atRisk: { uncommitted: [], commits: [] }, actions: [] });
    assert.equal(v, undefined);
  });

  it("lists exactly the dry run's commits and files, Keep first", () => {
    const v = discardRiskView({
      branch: 'feature/x',
      path: '/r/.slipway/worktrees/x',
      atRisk: { uncommitted: ['scratch.txt'], commits: [{ sha: '0123456789abcdef', subject: 'the work' }] },
      actions: [],
    });
    assert.ok(v);
    assert.equal(v.message, 'Discard feature/x? 1 commit and 1 uncommitted file would be lost');
    assert.match(v.detail, /commit 0123456789 the work/);
    assert.match(v.detail, /uncommitted scratch\.txt/);
    assert.match(v.detail, /deletes the branch feature\/x/);
    assert.equal(v.keep, 'Keep It');
    assert.equal(v.lose, 'Discard and Lose It');
  });

  it('confirms Close Worktree… of a finished run with what it does', () => {
    const v = closeConfirmView('feature/x', '/r/.slipway/worktrees/x');
    assert.equal(v.button, 'Close Worktree');
    assert.match(v.detail, /removed when it is clean/);
  });
});

describe('quarantine findings of a finished run', () => {
  it('says nothing when the run left nothing', () => {
    assert.equal(quarantineView(finished), undefined);
    assert.equal(quarantineView({ ...finished, quarantined: [] }), undefined);
  });

  it('warns with each finding and where it went', () => {
    const v = quarantineView({
      ...finished,
      quarantined: [
        { path: 'vendor/.git', finding: 'nestedGit', detail: '', movedTo: '/r/.slipway/quarantine/run-1-a/vendor/.git' },
        { path: 'link', finding: 'escapingSymlink', detail: '-> /etc', movedTo: null },
      ],
    });
    assert.ok(v);
    assert.match(v.message, /left 2 things your git would execute; quarantined: vendor\/\.git, link/);
    assert.match(v.detail, /vendor\/\.git: a \.git inside the worktree — moved to \/r\/\.slipway\/quarantine/);
    assert.match(v.detail, /link: a symlink that leaves the worktree \(-> \/etc\) — reported only/);
  });
});

describe('following a run log', () => {
  it('appends in order and skips bytes already shown', () => {
    assert.deepEqual(appendLog(0, { runId: 'r', text: 'ab', from: 0, next: 2 }), { text: 'ab', offset: 2 });
    assert.deepEqual(appendLog(2, { runId: 'r', text: 'abcd', from: 0, next: 4 }), { text: 'cd', offset: 4 });
    assert.deepEqual(appendLog(4, { runId: 'r', text: 'cd', from: 2, next: 4 }), { text: '', offset: 4 });
    // Without offsets, the text follows what was read.
    assert.deepEqual(appendLog(4, { runId: 'r', text: 'é' }), { text: 'é', offset: 6 });
  });
});

describe('the new requests', () => {
  it('builds slipway.diff, land, discard, runs and log with one object argument', () => {
    assert.deepEqual(requests.diff({ root: '/r', worktree: 'w' }), { command: 'slipway.diff', arguments: [{ root: '/r', worktree: 'w' }] });
    assert.deepEqual(requests.diffFile({ root: '/r', worktree: 'w', path: 'a' }).arguments, [{ root: '/r', worktree: 'w', path: 'a' }]);
    assert.equal(requests.land({ root: '/r', worktree: 'w', how: 'merge' }).command, 'slipway.land');
    assert.equal(requests.discard({ root: '/r', worktree: 'w' }).command, 'slipway.discard');
    assert.equal(requests.runs({ root: '/r' }).command, 'slipway.runs');
    assert.deepEqual(requests.log({ runId: 'r', from: 0, follow: true }).arguments, [{ runId: 'r', from: 0, follow: true }]);
  });

  it('tells an unknown command from other errors', async () => {
    const api = new SlipwayApi({
      executeCommand: () => Promise.reject({ code: -32602, message: "unknown command 'slipway.runs'", data: { kind: 'unknownCommand' } }),
    });
    await assert.rejects(api.runs('/r'), (e: unknown) => isUnknownCommand(e));
    assert.equal(isUnknownCommand({ code: -32001, message: 'worktree not found', data: { kind: 'worktreeNotFound' } }), false);
  });
});

describe('the manifest', () => {
  // out/test/unit → editors/vscode
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
    main: string;
    contributes: {
      viewsContainers: { activitybar: { id: string; icon: string }[] };
      views: Record<string, { id: string }[]>;
      icons: Record<string, { default: { fontPath: string } }>;
      configurationDefaults: Record<string, Record<string, boolean>>;
      commands: { command: string }[];
      menus: Record<string, { command: string; when?: string }[]>;
    };
  };
  const root = path.resolve(__dirname, '..', '..', '..');

  it('has its own view container with its own SVG icon, and the three views', () => {
    const [container] = manifest.contributes.viewsContainers.activitybar;
    assert.equal(container.id, 'slipway');
    assert.match(fs.readFileSync(path.join(root, container.icon), 'utf8'), /^<svg /);
    assert.deepEqual(manifest.contributes.views.slipway.map((v) => v.id), ['slipway.worktrees', 'slipway.runs', 'slipway.attempts']);
    assert.ok(fs.statSync(path.join(root, manifest.contributes.icons['slipway-logo'].default.fontPath)).size > 0);
  });

  it('hides .slipway from the Explorer and from search by default', () => {
    assert.equal(manifest.contributes.configurationDefaults['files.exclude']['**/.slipway'], true);
    assert.equal(manifest.contributes.configurationDefaults['search.exclude']['**/.slipway'], true);
  });

  it('declares no command the sidecar advertises (the language client registers those itself)', () => {
    const server = new Set<string>([...COMMANDS, ...OPTIONAL_COMMANDS]);
    for (const c of manifest.contributes.commands) {
      assert.ok(!server.has(c.command), `${c.command} collides with the sidecar's command of that name`);
    }
  });

  it('points main at the bundle, and every menu entry at a declared command', () => {
    assert.equal(manifest.main, './out/extension.js');
    const declared = new Set(manifest.contributes.commands.map((c) => c.command));
    for (const [menu, entries] of Object.entries(manifest.contributes.menus)) {
      for (const e of entries) {
        assert.ok(declared.has(e.command), `${menu} names ${e.command}`);
      }
    }
    const inline = manifest.contributes.menus['view/item/context'].filter((e) => e.when?.includes('slipway.worktree'));
    assert.ok(inline.some((e) => e.command === 'slipway.landWorktree') && inline.some((e) => e.command === 'slipway.discardWorktree'));
  });
});
