// Protocol tests of what the Attempts view sends: slipway.run with attempts and a check,
// slipway.attemptGroups, slipway.attempts, slipway.diff against another attempt, and
// slipway.landAttempt, against the real `slipway lsp`, rendered with the extension's
// own model functions.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { attemptGroupView, attemptLandedView, attemptPickItems, attemptRowView } from '../../src/model';
import { type GroupStarted, OPTIONAL_COMMANDS } from '../../src/protocol';
import { ATTEMPT_AGENT, type Fixture, makeFixture } from '../fixtures';
import { type InitializeAnswer, Session } from './harness';

describe('slipway lsp: a group of attempts, as the Attempts view uses it', () => {
  let fx: Fixture;
  let session: Session;
  let init: InitializeAnswer;
  let started: GroupStarted;

  before(async () => {
    fx = makeFixture();
    ({ session, init } = await Session.start(fx.env, [fx.repo]));
    const agent = path.join(fx.dir, 'attempt-agent.sh');
    fs.writeFileSync(agent, ATTEMPT_AGENT, { mode: 0o755 });
    started = await session.api.runAttempts({
      root: fx.repo,
      branch: 'feature/try',
      source: { policy: 'default' },
      agent: { type: 'command', command: ['sh', agent] },
      sandbox: { type: 'none' },
      prompt: 'write some lines',
      attempts: 3,
      // Attempt 1 writes one line: its check fails.
      check: 'test "$(wc -l < lines.txt)" -ge 2',
    });
    for (const runId of started.runIds) {
      const done = await session.runFinished(runId, 60_000);
      assert.equal(done.status, 'completed', JSON.stringify(done));
    }
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it('slipway.run with attempts answers the group and a run per attempt, each on <branch>/i', () => {
    assert.match(started.groupId, /\S/);
    assert.equal(started.runIds.length, 3);
    for (const i of [1, 2, 3]) {
      assert.equal(fx.git(fx.repo, 'log', '-1', '--format=%s', `feature/try/${i}`), `attempt ${i}`);
    }
  });

  it('slipway.attemptGroups lists the group, newest first, as the view renders it', async () => {
    const advertised = new Set(init.capabilities.executeCommandProvider?.commands ?? []);
    assert.deepEqual(OPTIONAL_COMMANDS.filter((c) => !advertised.has(c)), []);
    const { groups } = await session.api.attemptGroups(fx.repo);
    const group = groups.find((g) => g.groupId === started.groupId);
    assert.ok(group, JSON.stringify(groups));
    assert.equal(group.attempts, 3);
    assert.equal(group.running, 0);
    assert.equal(group.prompt, 'write some lines');
    const view = attemptGroupView(group, group.created);
    assert.equal(view.label, 'write some lines');
    assert.equal(view.description, '3 attempts · just now');
  });

  it('slipway.attempts compares the attempts with their check results, as the rows show them', async () => {
    const answer = await session.api.attempts(fx.repo, started.groupId);
    assert.equal(answer.groupId, started.groupId);
    assert.deepEqual(answer.rows.map((r) => r.runId), started.runIds);
    const [one, two, three] = answer.rows;
    assert.equal(one.check?.passed, false, JSON.stringify(one));
    assert.equal(two.check?.passed, true, JSON.stringify(two));
    assert.equal(three.check?.passed, true, JSON.stringify(three));
    assert.equal(three.filesChanged, 2);
    assert.equal(three.linesAdded, 4);
    assert.match(attemptRowView(one).description, /^check ✗ · 2 files \+2 −0 · \d+s$/);
    assert.match(attemptRowView(three).description, /^check ✓ · 2 files \+4 −0 · \d+s$/);
    assert.equal(attemptRowView(one).icon, 'error');
    assert.deepEqual(attemptPickItems(answer.rows, 3).map((i) => i.row.branch), ['feature/try/1', 'feature/try/2']);
  });

  it("slipway.diff of an attempt lists its changes; with against, its files against another attempt's tip", async () => {
    const own = await session.api.diff(fx.repo, 'feature/try/3');
    assert.deepEqual(own.files.map((f) => `${f.status} ${f.path}`), ['added attempt.txt', 'added lines.txt']);
    const against = await session.api.diff(fx.repo, 'feature/try/3', 'feature/try/2');
    assert.deepEqual(
      against.files.map((f) => `${f.status} ${f.path} +${f.additions} -${f.deletions}`),
      ['modified attempt.txt +1 -1', 'modified lines.txt +1 -0'],
    );
    const text = await session.api.diffFile(fx.repo, 'feature/try/3', 'attempt.txt', 'feature/try/2');
    assert.equal(text.baseText, 'attempt 2\n');
    assert.equal(text.worktreeText, 'attempt 3\n');
  });

  it('slipway.landAttempt lands one and keeps the others whose work is found nowhere else; with force they go', async () => {
    const winner = fx.rev('feature/try/3');
    const first = await session.api.landAttempt({ root: fx.repo, groupId: started.groupId, index: 3, how: 'merge' });
    assert.equal(first.landed.into, 'main');
    fx.git(fx.repo, 'merge-base', '--is-ancestor', winner, 'main');
    assert.deepEqual(first.discarded, []);
    assert.deepEqual(first.kept.map((k) => k.index), [1, 2]);
    const kept = attemptLandedView('feature/try/3', first);
    assert.equal(kept.warning, true);
    assert.match(kept.message, /^slipway: attempt #3 \(feature\/try\/3\) landed into main \(.*\); kept #1, #2$/);
    assert.match(kept.detail, /^#1 feature\/try\/1 was kept: .+\n#2 feature\/try\/2 was kept: .+$/);

    const forced = await session.api.landAttempt({ root: fx.repo, groupId: started.groupId, index: 3, how: 'merge', force: true });
    assert.deepEqual(forced.discarded, [1, 2]);
    assert.match(attemptLandedView('feature/try/3', forced).message, /; discarded #1, #2$/);
    const branches = fx.git(fx.repo, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/feature/try').split('\n');
    assert.deepEqual(branches, ['feature/try/3']);
    const rows = (await session.api.attempts(fx.repo, started.groupId)).rows;
    assert.deepEqual(rows.map((r) => r.branchPresent), [false, false, true]);
    assert.equal(fs.readFileSync(path.join(fx.repo, 'attempt.txt'), 'utf8'), 'attempt 3\n');
  });
});
