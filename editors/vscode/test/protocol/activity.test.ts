// Protocol tests of a run's live activity: the real `slipway lsp` sends
// `slipway/runActivity` as a `command` agent's output changes (its step is its latest
// output line), and the extension's board, Runs row and status item show it.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RunBoard, runsStatusView } from '../../src/activity';
import { runFinishedView, runNodeView } from '../../src/model';
import { type Fixture, makeFixture, writeCommittingAgent } from '../fixtures';
import { Session } from './harness';

/** An agent that says a step, waits for the test's gate file, says the next, and so on. */
function writeSteppingAgent(dir: string, steps: string[]): { file: string; gate: (i: number) => string } {
  const gate = (i: number): string => path.join(dir, `gate-${i}`);
  const lines = ['#!/bin/sh', 'set -e'];
  steps.forEach((step, i) => {
    lines.push(`echo '${step}'`);
    lines.push(`while [ ! -e '${gate(i)}' ]; do sleep 0.05; done # allow-sleep: the agent polls for the test's gate file`);
  });
  const file = path.join(dir, 'stepping-agent.sh');
  fs.writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o755 });
  return { file, gate };
}

describe('slipway/runActivity: what a running agent is doing', () => {
  let fx: Fixture;
  let session: Session;

  before(async () => {
    fx = makeFixture();
    ({ session } = await Session.start(fx.env, [fx.repo]));
    await session.until(() => session.statuses.some((s) => s.repositories.some((r) => r.root === fx.repo)), 'status of the repo');
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it("follows a command agent's latest output line as its step, into the board, the Runs row and the status item", async () => {
    const agent = writeSteppingAgent(fx.dir, ['reading the issue', 'editing app.txt']);
    const board = new RunBoard();
    const { runId } = await session.api.run({
      root: fx.repo,
      branch: 'feature/activity',
      source: { policy: 'default' },
      strategy: 'branch',
      agent: { type: 'command', command: ['sh', agent.file] },
      sandbox: { type: 'none' },
      prompt: 'do it',
    });
    const stepOf = (step: string) => (): boolean => session.activities.some((a) => a.runId === runId && a.activity.step === step);

    await session.until(stepOf('reading the issue'), 'the first step');
    const first = session.activities.find((a) => a.runId === runId);
    assert.equal(first?.root, fx.repo);
    // Only the run's words: the `command` agent has no turns or tokens.
    assert.equal(first?.activity.turns, 0);
    for (const n of session.activities.filter((a) => a.runId === runId)) {
      board.activity(n, Date.now() / 1000);
    }
    assert.equal(board.get(runId)?.activity?.step, 'reading the issue');

    // slipway.runs carries the same activity and the elapsed time while it runs.
    const { runs } = await session.api.runs(fx.repo);
    const info = runs.find((r) => r.runId === runId);
    assert.ok(info, JSON.stringify(runs));
    assert.equal(info.status, 'running');
    assert.equal(info.activity?.step, 'reading the issue');
    assert.equal(typeof info.elapsedSecs, 'number');
    assert.match(runNodeView(info).description, /^running · reading the issue · command · \d+s$/);

    fs.writeFileSync(agent.gate(0), '');
    await session.until(stepOf('editing app.txt'), 'the second step');
    for (const n of session.activities.filter((a) => a.runId === runId)) {
      board.activity(n, Date.now() / 1000);
    }
    // The latest one wins.
    assert.equal(board.get(runId)?.activity?.step, 'editing app.txt');
    board.status(session.latestStatus() ?? { repositories: [] }, Date.now() / 1000);
    const working = runsStatusView(board.of(fx.repo), Date.now() / 1000);
    assert.equal(working.text, '$(sync~spin) feature/activity: editing app.txt');

    fs.writeFileSync(agent.gate(1), '');
    const done = await session.runFinished(runId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    // The last activity comes before the end.
    const last = session.activities.filter((a) => a.runId === runId).pop();
    assert.equal(last?.activity.step, 'editing app.txt');
    board.finished(done, Date.now() / 1000);
    assert.equal(runsStatusView(board.of(fx.repo), Date.now() / 1000).text, '$(check) feature/activity: done');
  });

  it("counts every commit a merge back brought home: the worktree's own and the run's", async () => {
    const created = await session.api.createWorktree({ root: fx.repo, strategy: 'merge-to-head' });
    // The person's own commit in the worktree (an interactive session's), then a hand-off.
    fs.writeFileSync(path.join(created.path, 'mine.txt'), 'mine\n');
    fx.git(created.path, 'add', 'mine.txt');
    fx.git(created.path, 'commit', '-q', '-m', 'my commit');
    const mine = fx.rev('HEAD', created.path);
    const agent = writeCommittingAgent(fx.dir, 1, 'one-commit.sh');
    const { runId } = await session.api.handoff({
      root: fx.repo,
      worktree: created.id,
      agent: { type: 'command', command: ['sh', agent] },
      sandbox: { type: 'none' },
      prompt: 'one more',
    });
    const done = await session.runFinished(runId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.commits.length, 1);
    assert.equal(done.mergedInto, 'main');
    assert.deepEqual(done.mergedCommits?.map((c) => c.sha), [mine, done.commits[0].sha]);
    assert.match(runFinishedView(done).message, /: 2 commits merged into main$/);
  });
});
