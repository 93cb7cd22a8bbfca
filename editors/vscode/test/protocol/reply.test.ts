// Protocol tests of questions: a `command` agent whose last line asks the user ends
// `needsInput` through the real `slipway lsp`; the notification the extension shows
// leads with the question and offers Reply…, the runs item stands out, and
// `slipway.reply` starts the run that answers it, which commits on the same branch.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RunBoard, runsStatusView } from '../../src/activity';
import { runFinishedView } from '../../src/model';
import { SlipwayError } from '../../src/protocol';
import { type Fixture, makeFixture } from '../fixtures';
import { Session } from './harness';

const QUESTION = 'Should I also add a test, or do you want to keep it small?';

/** An agent that commits, then asks unless its prompt is an answer. */
function writeAskingAgent(dir: string): string {
  const file = path.join(dir, 'asking-agent.sh');
  const body = [
    '#!/bin/sh',
    'set -e',
    'case "$SLIPWAY_PROMPT" in',
    '  answer:*) echo t >> test.txt && git add test.txt && git commit -q -m "agent: $SLIPWAY_PROMPT" && echo "Added it." ;;',
    `  *) echo w >> work.txt && git add work.txt && git commit -q -m 'agent: the work' && echo done && echo && echo '${QUESTION}' ;;`,
    'esac',
  ];
  fs.writeFileSync(file, `${body.join('\n')}\n`, { mode: 0o755 });
  return file;
}

describe('slipway.reply: answering a run that asks', () => {
  let fx: Fixture;
  let session: Session;

  before(async () => {
    fx = makeFixture();
    ({ session } = await Session.start(fx.env, [fx.repo]));
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it('shows the question, marks the runs item, and the reply resumes on the same branch', async () => {
    const agent = writeAskingAgent(fx.dir);
    const { runId } = await session.api.run({
      root: fx.repo,
      branch: 'feature/asks',
      source: { policy: 'default' },
      strategy: 'branch',
      agent: { type: 'command', command: ['sh', agent] },
      sandbox: { type: 'none' },
      prompt: 'do it',
    });
    const asked = await session.runFinished(runId);
    assert.equal(asked.status, 'needsInput', JSON.stringify(asked));
    assert.equal(asked.question?.text, QUESTION);
    const view = runFinishedView(asked);
    assert.equal(view.severity, 'warning');
    assert.ok(view.message.includes(`asks: ${QUESTION}`), view.message);
    assert.equal(view.actions[0], 'Reply…');

    const board = new RunBoard();
    board.finished(asked, Date.now() / 1000);
    const item = runsStatusView(board.of(fx.repo), Date.now() / 1000);
    assert.equal(item.text, '$(question) feature/asks: needs input');
    assert.equal(item.warning, true);
    board.clearDone(fx.repo);
    assert.equal(board.waiting(fx.repo).length, 1, 'looking at the runs does not answer it');

    const { runs } = await session.api.runs(fx.repo);
    assert.equal(runs.find((r) => r.runId === runId)?.question?.text, QUESTION);

    const started = await session.api.reply({ runId, answer: 'answer: yes', root: fx.repo });
    assert.notEqual(started.runId, runId);
    const replied = await session.runFinished(started.runId);
    assert.equal(replied.status, 'completed', JSON.stringify(replied));
    assert.equal(replied.replyTo, runId);
    const subjects = fx.git(fx.repo, 'log', '--format=%s', 'feature/asks').trim().split('\n');
    assert.deepEqual(subjects.slice(0, 2), ['agent: answer: yes', 'agent: the work'], 'both runs committed on the branch');
    board.finished(replied, Date.now() / 1000);
    assert.equal(board.waiting(fx.repo).length, 0, 'answered');
    assert.equal(runsStatusView(board.of(fx.repo), Date.now() / 1000).warning, false);

    await assert.rejects(
      session.api.reply({ runId, answer: 'again', root: fx.repo }),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'notWaitingForInput',
    );
  });
});
