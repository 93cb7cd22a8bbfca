// Unit tests of the Attempts view's rows, pickers and messages (the pure parts in model.ts).

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  attemptGroupView,
  attemptLandedView,
  attemptPickItems,
  attemptRowView,
  diffDocQuery,
  diffTitle,
  landAttemptConfirm,
  parseDiffDocQuery,
} from '../../src/model';
import { type AttemptRow, type LandAttemptResult, requests } from '../../src/protocol';

function row(extra: Partial<AttemptRow> = {}): AttemptRow {
  return {
    index: 1,
    runId: 'run-1-a',
    agent: 'command',
    branch: 'feature/x/1',
    branchPresent: true,
    status: 'completed',
    check: { command: 'make test', passed: true, exitCode: 0, tail: ['ok'] },
    commits: 2,
    filesChanged: 3,
    linesAdded: 10,
    linesRemoved: 2,
    seconds: 41,
    usage: { inputTokens: 11_000, outputTokens: 1_000, cachedInputTokens: 0 },
    ...extra,
  };
}

describe('the Attempts view rows', () => {
  it('shows an attempt as check, files and lines, time and tokens', () => {
    const v = attemptRowView(row());
    assert.equal(v.label, '#1 command');
    assert.equal(v.description, 'check ✓ · 3 files +10 −2 · 41s · 12k tok');
    assert.equal(v.icon, 'pass');
    assert.equal(v.contextValue, 'slipway.attempt');
    assert.match(v.tooltip, /^Attempt 1: feature\/x\/1\ncommand, completed, 2 commits\nrun-1-a\ncheck `make test`: passed\n {2}ok$/);
  });

  it('marks a failed check with its exit code in the tooltip and its last lines of output', () => {
    const tail = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`);
    const v = attemptRowView(row({ check: { command: 'make test', passed: false, exitCode: 2, tail }, filesChanged: 1, usage: null }));
    assert.equal(v.description, 'check ✗ · 1 file +10 −2 · 41s');
    assert.equal(v.icon, 'error');
    assert.match(v.tooltip, /check `make test`: failed \(exit 2\)/);
    assert.ok(v.tooltip.includes('  line 12') && v.tooltip.includes('  line 5') && !v.tooltip.includes('line 4\n'), v.tooltip);
  });

  it('says a check that ran out of time was stopped', () => {
    const v = attemptRowView(row({ check: { command: 'make slow-test', passed: false, exitCode: null, tail: [] } }));
    assert.match(v.description, /^check ✗ \(stopped\) · /);
    assert.match(v.tooltip, /stopped \(too long\)/);
  });

  it('shows a running attempt as running, without a land action', () => {
    const v = attemptRowView(row({ status: 'running', check: null, seconds: 5, usage: null, filesChanged: 0, linesAdded: 0, linesRemoved: 0 }));
    assert.equal(v.description, 'running · 0 files +0 −0 · 5s');
    assert.equal(v.icon, 'sync~spin');
    assert.equal(v.contextValue, 'slipway.attempt.running');
  });

  it('says how an attempt ended when it did not complete, and when it left no record', () => {
    assert.match(attemptRowView(row({ status: 'failed', check: null })).description, /^failed · 3 files/);
    assert.equal(attemptRowView(row({ status: 'failed', check: null })).icon, 'error');
    assert.match(attemptRowView(row({ status: null, check: null, seconds: null })).description, /^no record · 3 files \+10 −2 · 12k tok$/);
  });

  it('shows the cost when the agent reports one, and the landed attempt as landed', () => {
    const v = attemptRowView(row({ usage: { inputTokens: 500, outputTokens: 20, costUsd: 0.042 } }), true);
    assert.equal(v.description, 'landed · check ✓ · 3 files +10 −2 · 41s · 520 tok · $0.04');
  });

  it('shows a group by its prompt, its count, what still runs, and its age', () => {
    const now = 1_800_000_000;
    const v = attemptGroupView({ groupId: 'g-1', created: now - 120, attempts: 3, running: 2, prompt: 'fix the flaky test\nmore words' }, now);
    assert.equal(v.label, 'fix the flaky test');
    assert.equal(v.description, '3 attempts · 2 running · 2 minutes ago');
    assert.equal(v.icon, 'sync~spin');
    assert.match(v.tooltip, /^Group g-1\n/);
    const m = attemptGroupView({ groupId: 'g-2', created: now, attempts: 1, running: 0, strategy: 'merge-to-head', into: 'main', prompt: null }, now);
    assert.equal(m.label, 'g-2');
    assert.equal(m.description, '1 attempt · → main · just now');
    assert.equal(m.icon, 'versions');
  });
});

describe('comparing and landing attempts', () => {
  const rows = [row(), row({ index: 2, branch: 'feature/x/2' }), row({ index: 3, branch: 'feature/x/3', branchPresent: false })];

  it('offers every other attempt whose branch is there to diff against', () => {
    assert.deepEqual(attemptPickItems(rows, 1).map((i) => i.row.index), [2]);
    assert.deepEqual(attemptPickItems(rows, 2).map((i) => i.label), ['#1 command']);
    assert.match(attemptPickItems(rows, 2)[0].description, /^feature\/x\/1 · check ✓/);
  });

  it('asks before a land with the attempts that go, one button per land mode of the sidecar', () => {
    const c = landAttemptConfirm(rows[1], rows, ['merge', 'squash']);
    assert.equal(c.message, 'Land attempt #2 and discard the other?');
    assert.ok(c.detail.includes('  #1 feature/x/1'), c.detail);
    assert.ok(!c.detail.includes('feature/x/3'), c.detail);
    assert.deepEqual(c.buttons, [{ title: 'Land (merge)', how: 'merge' }, { title: 'Land (squash)', how: 'squash' }]);
  });

  it('says what landed, what was discarded, and what was kept and why', () => {
    const answer: LandAttemptResult = {
      groupId: 'g',
      index: 2,
      landed: { landed: true, into: 'main', commit: '0123456789abcdef', kind: 'fastForward' },
      discarded: [1, 3],
      kept: [],
    };
    const v = attemptLandedView('feature/x/2', answer);
    assert.equal(v.message, 'slipway: attempt #2 (feature/x/2) landed into main (fastForward, 0123456789); discarded #1, #3');
    assert.equal(v.warning, false);
    const kept = attemptLandedView('feature/x/2', { ...answer, discarded: [1], kept: [{ index: 3, branch: 'feature/x/3', reason: 'it has uncommitted files' }] });
    assert.match(kept.message, /discarded #1; kept #3$/);
    assert.equal(kept.detail, '#3 feature/x/3 was kept: it has uncommitted files');
    assert.equal(kept.warning, true);
    assert.equal(kept.discardKept, 'Discard It Too (Lose the Work)');
  });

  it('round-trips a diff document against another attempt, and refuses a bad against', () => {
    const ref = { root: '/r', worktree: 'feature/x/1', path: 'a.txt', side: 'base' as const, against: 'feature/x/2' };
    assert.deepEqual(parseDiffDocQuery(diffDocQuery(ref)), ref);
    assert.equal(parseDiffDocQuery(JSON.stringify({ ...ref, against: 3 })), undefined);
    assert.equal(diffTitle('src/a.txt', 'feature/x/1', 'abcdef0123', 'feature/x/2'), 'a.txt (feature/x/2 ↔ feature/x/1)');
    assert.equal(diffTitle('src/a.txt', 'feature/x/1', 'abcdef0123'), 'a.txt (abcdef01 ↔ feature/x/1)');
  });

  it('builds the attempts requests with one object argument', () => {
    assert.deepEqual(requests.attempts({ root: '/r', groupId: 'g' }), { command: 'slipway.attempts', arguments: [{ root: '/r', groupId: 'g' }] });
    assert.deepEqual(requests.attemptGroups({ root: '/r' }).command, 'slipway.attemptGroups');
    assert.deepEqual(requests.landAttempt({ root: '/r', groupId: 'g', index: 2, how: 'merge' }).arguments, [{ root: '/r', groupId: 'g', index: 2, how: 'merge' }]);
    assert.equal(requests.runAttempts({ root: '/r', attempts: 3, check: 'true' }).command, 'slipway.run');
    assert.deepEqual(requests.diff({ root: '/r', worktree: 'a', against: 'b' }).arguments, [{ root: '/r', worktree: 'a', against: 'b' }]);
  });
});

describe('the manifest of the Attempts view', () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
    contributes: { menus: Record<string, { command: string; when?: string }[]> };
  };

  it('offers Land on finished attempts only, and the diffs and the log on every attempt', () => {
    const item = manifest.contributes.menus['view/item/context'].filter((e) => e.when?.startsWith('view == slipway.attempts'));
    const land = item.filter((e) => e.command === 'slipway.landThisAttempt');
    assert.ok(land.length > 0 && land.every((e) => e.when?.endsWith('viewItem == slipway.attempt')), JSON.stringify(land));
    for (const command of ['slipway.openAttemptDiff', 'slipway.diffAgainstAttempt', 'slipway.showRunLog']) {
      assert.ok(item.some((e) => e.command === command && e.when?.includes('(\\.running)?')), `${command} is not offered on every attempt`);
    }
  });
});
