// Unit tests of what a user who walked away sees when coming back: each run's latest
// activity (`slipway/runActivity`) in the Runs view, the runs status item and the
// progress notification, and the finish summary counting every commit that landed.

import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatCost,
  formatElapsed,
  formatTokens,
  progressMessage,
  RunBoard,
  runsStatusView,
  usageParts,
} from '../../src/activity';
import { runFinishedView, runNodeView } from '../../src/model';
import type { Activity, RunInfo, StatusNotification } from '../../src/protocol';
import { runFinished } from './builders';

const NOW = 1_800_000_000;

function activity(extra: Partial<Activity> = {}): Activity {
  return { files: [], filesTouched: 0, turns: 0, toolCalls: 0, inputTokens: 0, outputTokens: 0, ...extra };
}

function running(extra: Partial<RunInfo> = {}): RunInfo {
  return {
    runId: 'run-1-a',
    status: 'running',
    agent: 'claude-code',
    sandbox: 'none',
    branch: 'feature/x',
    worktreePath: '/r/.slipway/worktrees/x',
    startedAt: NOW - 185,
    endedAt: null,
    iterations: 0,
    lastLine: null,
    elapsedSecs: 180,
    activity: null,
    ...extra,
  };
}

function status(runs: { runId: string; state: 'running' | 'finished'; branch: string | null }[], root = '/r'): StatusNotification {
  return {
    repositories: [
      { root, commonDir: `${root}/.git`, worktrees: [], runs: runs.map((r) => ({ ...r, worktreePath: null })), running: runs.length, dirtyPreserved: 0 },
    ],
  };
}

describe('activity in words', () => {
  it('shortens tokens, elapsed time and cost', () => {
    assert.equal(formatTokens(950), '950');
    assert.equal(formatTokens(1234), '1.2k');
    assert.equal(formatTokens(12_345), '12k');
    assert.equal(formatTokens(4_100_000), '4.1M');
    assert.equal(formatElapsed(45), '45s');
    assert.equal(formatElapsed(185), '3m 05s');
    assert.equal(formatElapsed(2 * 3600 + 4 * 60 + 9), '2h 04m');
    assert.equal(formatCost(0.0412), '$0.04');
    assert.equal(formatCost(0.004), '<$0.01');
    assert.deepEqual(usageParts(activity()), []);
    assert.deepEqual(usageParts(activity({ inputTokens: 10_000, outputTokens: 2_300, costUsd: 0.05 })), ['12k tokens', '$0.05']);
  });

  it('words the progress notification: the step with the usage so far', () => {
    assert.equal(progressMessage('editing src/cli.rs', undefined), 'editing src/cli.rs');
    assert.equal(progressMessage('editing src/cli.rs', activity({ inputTokens: 900, outputTokens: 100, costUsd: 0.02 })), 'editing src/cli.rs (1.0k tokens · $0.02)');
    assert.equal(progressMessage(undefined, activity()), undefined);
  });
});

describe('the board of runs: the latest activity per run', () => {
  it('keeps only the latest activity of each run, apart per run', () => {
    const board = new RunBoard();
    board.activity({ root: '/r', runId: 'run-1-a', activity: activity({ step: 'reading README.md' }) }, NOW);
    board.activity({ root: '/r', runId: 'run-2-b', activity: activity({ step: 'running cargo test' }) }, NOW + 1);
    board.activity({ root: '/r', runId: 'run-1-a', activity: activity({ step: 'editing src/cli.rs', toolCalls: 2 }) }, NOW + 2);
    assert.equal(board.get('run-1-a')?.activity?.step, 'editing src/cli.rs');
    assert.equal(board.get('run-1-a')?.state, 'working');
    assert.equal(board.get('run-2-b')?.activity?.step, 'running cargo test');
    // The latest change first.
    assert.deepEqual(board.of('/r').map((r) => r.runId), ['run-1-a', 'run-2-b']);
  });

  it('takes runs in progress from slipway/status and when they started from slipway.runs, without losing live activity', () => {
    const board = new RunBoard();
    board.status(status([{ runId: 'run-1-a', state: 'running', branch: 'feature/x' }]), NOW);
    assert.equal(board.get('run-1-a')?.branch, 'feature/x');
    board.activity({ root: '/r', runId: 'run-1-a', activity: activity({ step: 'live step' }) }, NOW + 1);
    board.known('/r', [running({ activity: activity({ step: 'older step' }) })], NOW + 2);
    assert.equal(board.get('run-1-a')?.startedAt, NOW - 185);
    assert.equal(board.get('run-1-a')?.activity?.step, 'live step');
    board.known('/r', [running({ runId: 'run-5-e', startedAt: '1970-01-01T00:16:40Z' })], NOW);
    assert.equal(board.get('run-5-e')?.startedAt, 1000);
    // A finished run in a status is one this window hears the end of in runFinished.
    board.status(status([{ runId: 'run-9-z', state: 'finished', branch: 'old' }]), NOW);
    assert.equal(board.get('run-9-z'), undefined);
  });

  it('drops a working run a status listed and lists no more (its end went to another window), not one it never listed', () => {
    const board = new RunBoard();
    board.status(status([{ runId: 'run-1-a', state: 'running', branch: 'feature/x' }]), NOW);
    // A run heard of by its activity before any status names it stays.
    board.activity({ root: '/r', runId: 'run-2-b', activity: activity({ step: 'new' }) }, NOW);
    board.status(status([]), NOW + 1);
    assert.equal(board.get('run-1-a'), undefined);
    assert.equal(board.get('run-2-b')?.state, 'working');
    // Another repository's status leaves this one's runs alone.
    board.status(status([{ runId: 'run-3-c', state: 'running', branch: null }]), NOW + 2);
    board.status(status([], '/other'), NOW + 3);
    assert.equal(board.get('run-3-c')?.state, 'working');
  });

  it('marks a run done at its runFinished, lists the working first, and forgets the done once looked at', () => {
    const board = new RunBoard();
    board.activity({ root: '/r', runId: 'run-1-a', activity: activity({ step: 'a' }) }, NOW);
    board.activity({ root: '/r', runId: 'run-2-b', activity: activity({ step: 'b' }) }, NOW);
    board.activity({ root: '/other', runId: 'run-3-c', activity: activity({ step: 'c' }) }, NOW);
    board.finished(runFinished({ runId: 'run-1-a', branch: 'feature/x' }), NOW + 5);
    assert.equal(board.get('run-1-a')?.state, 'done');
    assert.equal(board.get('run-1-a')?.status, 'completed');
    assert.deepEqual(board.of('/r').map((r) => `${r.runId}:${r.state}`), ['run-2-b:working', 'run-1-a:done']);
    board.clearDone('/r');
    assert.deepEqual(board.of('/r').map((r) => r.runId), ['run-2-b']);
    assert.deepEqual(board.of('/other').map((r) => r.runId), ['run-3-c']);
  });
});

describe('the runs status item', () => {
  it('hides without runs', () => {
    assert.equal(runsStatusView([], NOW).visible, false);
  });

  it("shows one working run's branch and latest step, with elapsed, tokens and cost in the tooltip", () => {
    const board = new RunBoard();
    board.status(status([{ runId: 'run-1-a', state: 'running', branch: 'feature/x' }]), NOW - 65);
    board.activity(
      { root: '/r', runId: 'run-1-a', activity: activity({ step: 'editing src/cli.rs', inputTokens: 12_000, outputTokens: 300, costUsd: 0.12 }) },
      NOW,
    );
    const v = runsStatusView(board.of('/r'), NOW);
    assert.equal(v.visible, true);
    assert.equal(v.text, '$(sync~spin) feature/x: editing src/cli.rs');
    assert.match(v.tooltip, /feature\/x — working: editing src\/cli\.rs \(1m 05s, 12k tokens, \$0\.12\)/);
  });

  it('says done when the run ended, and counts several runs by state', () => {
    const board = new RunBoard();
    board.activity({ root: '/r', runId: 'run-1-a', activity: activity({ step: 'x' }) }, NOW);
    board.finished(runFinished({ runId: 'run-1-a', branch: 'feature/x' }), NOW + 30);
    assert.equal(runsStatusView(board.of('/r'), NOW + 40).text, '$(check) feature/x: done');
    board.finished(runFinished({ runId: 'run-1-a', branch: 'feature/x', status: 'failed' }), NOW + 30);
    assert.equal(runsStatusView(board.of('/r'), NOW + 40).text, '$(error) feature/x: failed');
    board.activity({ root: '/r', runId: 'run-2-b', activity: activity({ step: 'running cargo test' }) }, NOW + 41);
    board.activity({ root: '/r', runId: 'run-3-c', activity: activity({}) }, NOW + 42);
    const v = runsStatusView(board.of('/r'), NOW + 50);
    assert.equal(v.text, '$(sync~spin) 2 working · $(check) 1 done');
    const lines = v.tooltip.split('\n');
    assert.deepEqual(lines.slice(1, 4), [
      'run-3-c — working (8s)',
      'run-2-b — working: running cargo test (9s)',
      'feature/x — failed: x (30s)',
    ]);
  });
});

describe('a run row with its activity', () => {
  it('shows the latest step, elapsed, tokens and cost; files and turns in the tooltip', () => {
    const a = activity({ step: 'editing src/cli.rs', files: ['src/cli.rs', 'src/main.rs'], filesTouched: 2, turns: 5, toolCalls: 3, inputTokens: 20_000, outputTokens: 1_500, costUsd: 0.31 });
    const v = runNodeView(running({ activity: a }), NOW);
    assert.equal(v.description, 'running · editing src/cli.rs · claude-code · 3m 05s · 22k tokens · $0.31');
    assert.match(v.tooltip, /step: editing src\/cli\.rs/);
    assert.match(v.tooltip, /files touched \(2\): src\/cli\.rs, src\/main\.rs/);
    assert.match(v.tooltip, /5 turns, 3 tool calls/);
    assert.match(v.tooltip, /tokens: 20k in, 1\.5k out/);
    assert.match(v.tooltip, /cost: \$0\.31/);
  });

  it('prefers the live activity to the one slipway.runs answered', () => {
    const v = runNodeView(running({ activity: activity({ step: 'old' }) }), NOW, activity({ step: 'running cargo test' }));
    assert.match(v.description, /^running · running cargo test · /);
  });

  it('shows how long an ended run took, and no step', () => {
    const v = runNodeView(running({ status: 'completed', endedAt: NOW - 5, elapsedSecs: 180, activity: activity({ step: 'done', outputTokens: 40 }) }), NOW);
    assert.equal(v.description, 'completed · claude-code · 3 minutes ago · 40 tokens');
    assert.match(v.tooltip, /took 3m 00s/);
  });
});

describe('the finish summary counts what landed', () => {
  it('counts mergedCommits, not only the run’s commits', () => {
    const v = runFinishedView(
      runFinished({ commits: [{ sha: 'b' }], mergedInto: 'main', mergedCommits: [{ sha: 'a' }, { sha: 'b' }], preservedWorktreePath: null }),
    );
    assert.equal(v.message, 'slipway: run completed on feature/x: 2 commits merged into main');
  });

  it('counts the run’s commits when nothing was merged back', () => {
    assert.equal(runFinishedView(runFinished({ commits: [{ sha: 'a' }] })).message, 'slipway: run completed on feature/x: 1 commit');
  });
});
