// Protocol tests of what the Slipway view, Land, Discard and the run log channel send:
// slipway.diff, slipway.runs, slipway.log (+ slipway/log), slipway.land, slipway.discard,
// against the real `slipway lsp`, rendered with the extension's own model functions.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { appendLog, diffFileView, discardRiskView, landedMessage, landModeItems, runNodeView } from '../../src/model';
import { readVocabularies, SlipwayError, type Vocabularies } from '../../src/protocol';
import { type Fixture, makeFixture, writeCommittingAgent } from '../fixtures';
import { Session } from './harness';

describe('slipway lsp: diff, runs, log, land and discard, as the Slipway view uses them', () => {
  let fx: Fixture;
  let session: Session;
  let names: Vocabularies | undefined;
  let worktreePath = '';
  let worktreeId = '';
  let runId = '';

  before(async () => {
    fx = makeFixture();
    const started = await Session.start(fx.env, [fx.repo]);
    session = started.session;
    names = readVocabularies(started.init.capabilities.experimental);
    const created = await session.api.createWorktree({ root: fx.repo, strategy: 'branch', branch: 'feature/review', source: { policy: 'default' } });
    worktreePath = created.path;
    worktreeId = created.id;
    const agent = writeCommittingAgent(fx.dir, 2);
    ({ runId } = await session.api.handoff({
      root: fx.repo,
      worktree: worktreeId,
      agent: { type: 'command', command: ['sh', agent] },
      sandbox: { type: 'none' },
      prompt: 'add two files',
    }));
    const done = await session.runFinished(runId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it('slipway.diff lists committed and uncommitted changes against the base, as the view renders them', async () => {
    fs.writeFileSync(path.join(worktreePath, 'app.txt'), 'app\nmore\n');
    const diff = await session.api.diff(fx.repo, worktreeId);
    assert.equal(diff.base, fx.rev('origin/main'));
    assert.equal(diff.head, fx.rev('feature/review'));
    const byPath = new Map(diff.files.map((f) => [f.path, f]));
    assert.deepEqual([...byPath.keys()].sort(), ['agent-1.txt', 'agent-2.txt', 'app.txt']);
    const added = byPath.get('agent-1.txt');
    assert.ok(added);
    assert.equal(added.status, 'added');
    assert.equal(added.committed, true);
    assert.equal(diffFileView(added).description, 'A · +1 −0');
    const app = byPath.get('app.txt');
    assert.ok(app);
    assert.equal(app.status, 'modified');
    assert.equal(app.uncommitted, true);
    assert.equal(app.committed, false);
    assert.equal(diffFileView(app).description, 'M · +1 −0');
  });

  it('slipway.diff with path serves the base text (the virtual document) and the worktree text', async () => {
    const app = await session.api.diffFile(fx.repo, worktreeId, 'app.txt');
    assert.equal(app.baseText, 'app\n');
    assert.equal(app.worktreeText, 'app\nmore\n');
    assert.equal(app.binary, false);
    const added = await session.api.diffFile(fx.repo, worktreeId, 'agent-1.txt');
    assert.equal(added.baseText ?? null, null);
    assert.equal(added.worktreeText, 'change 1\n');
    // By branch name too: a `worktree` argument is an id, a path or a branch.
    assert.equal((await session.api.diffFile(fx.repo, 'feature/review', 'app.txt')).baseText, 'app\n');
    fs.writeFileSync(path.join(worktreePath, 'app.txt'), 'app\n');
  });

  it('slipway.runs lists the run, newest first, as the Runs view renders it', async () => {
    const { runs } = await session.api.runs(fx.repo);
    const run = runs.find((r) => r.runId === runId);
    assert.ok(run, JSON.stringify(runs));
    assert.equal(run.status, 'completed');
    assert.equal(run.branch, 'feature/review');
    assert.equal(run.worktreePath, worktreePath);
    // The log's last line (slipway writes its own closing line after the agent's).
    assert.ok(run.lastLine, JSON.stringify(run));
    const view = runNodeView(run);
    assert.match(view.tooltip, new RegExp(`last line: ${run.lastLine.replace(/[[\]]/g, '\\$&')}`));
    assert.equal(view.label, 'feature/review');
    assert.match(view.description, /^completed · command/);
  });

  it('slipway.log reads a finished run whole, done', async () => {
    const log = await session.api.log({ runId, from: 0, follow: true });
    assert.match(log.text, /agent got prompt: add two files/);
    assert.equal(log.done, true);
    assert.equal(log.next, Buffer.byteLength(log.text));
    const rest = await session.api.log({ runId, from: log.next });
    assert.equal(rest.text, '');
  });

  it('slipway.log with follow: slipway/log notifications carry the rest until the run ends', async () => {
    const script = 'for i in 1 2 3 4 5; do echo "line $i"; sleep 0.4; done'; // allow-sleep: the agent prints over time so the follow sees the log grow
    const started = await session.api.run({
      root: fx.repo,
      branch: 'feature/chatty',
      source: { policy: 'default' },
      agent: { type: 'command', command: ['sh', '-c', script] },
    });
    const first = await session.api.log({ runId: started.runId, from: 0, follow: true });
    let offset = first.next;
    let text = first.text;
    if (!first.done) {
      await session.until(() => session.logs.some((n) => n.runId === started.runId && n.done === true), 'the last slipway/log', 30_000);
      for (const n of session.logs.filter((x) => x.runId === started.runId)) {
        const step = appendLog(offset, n);
        text += step.text;
        offset = step.offset;
      }
    }
    await session.runFinished(started.runId);
    const finished = session.finished.find((f) => f.runId === started.runId);
    assert.ok(finished);
    assert.equal(text, fs.readFileSync(finished.logFile, 'utf8'));
    for (let i = 1; i <= 5; i++) {
      assert.match(text, new RegExp(`line ${i}`));
    }
    assert.ok(session.logs.some((n) => n.runId === started.runId), 'no slipway/log notification arrived');
  });

  it('initialize names the land modes the Land picker offers', () => {
    assert.ok(names);
    assert.ok(names.landModes.includes('merge'), JSON.stringify(names.landModes));
    assert.deepEqual(landModeItems(names.landModes, 'feature/review', 'main').map((i) => i.how), names.landModes);
  });

  it('slipway.land with merge brings the branch into the host branch', async () => {
    const tip = fx.rev('feature/review');
    const answer = await session.api.land({ root: fx.repo, worktree: worktreeId, how: 'merge' });
    assert.equal(answer.landed, true);
    assert.equal(answer.into, 'main');
    assert.equal(fx.rev('main'), answer.commit);
    fx.git(fx.repo, 'merge-base', '--is-ancestor', tip, 'main');
    assert.ok(fs.existsSync(path.join(fx.repo, 'agent-2.txt')));
    assert.equal(fx.git(fx.repo, 'status', '--porcelain'), '');
    assert.match(landedMessage('feature/review', answer), /^slipway: feature\/review landed into main \(/);
  });

  it('slipway.land with a mode the sidecar does not name is invalidParams naming it, nothing changed', async () => {
    const main = fx.rev('main');
    await assert.rejects(
      session.api.land({ root: fx.repo, worktree: worktreeId, how: 'octopus' }),
      (e: unknown) =>
        e instanceof SlipwayError && e.kind === 'invalidParams' && e.code === -32602 && e.message.includes('octopus'),
    );
    assert.equal(fx.rev('main'), main);
  });

  it('slipway.discard keeps a worktree with uncommitted work until forced, then removes it and its branch', async () => {
    fs.writeFileSync(path.join(worktreePath, 'scratch.txt'), 'unsaved\n');
    const kept = await session.api.discard({ root: fx.repo, worktree: worktreeId });
    assert.equal(kept.removed, false);
    if (kept.removed) {
      return;
    }
    assert.ok(fs.existsSync(path.join(worktreePath, 'scratch.txt')));
    // What the modal lists is the sidecar's dry run: the file, and no landed commit.
    const preview = await session.api.discardDryRun({ root: fx.repo, worktree: worktreeId });
    assert.deepEqual(preview.atRisk, { uncommitted: ['scratch.txt'], commits: [] });
    assert.match(discardRiskView(preview)?.detail ?? '', /uncommitted scratch\.txt/);
    const forced = await session.api.discard({ root: fx.repo, worktree: worktreeId, force: true });
    assert.equal(forced.removed, true);
    assert.ok(!fs.existsSync(worktreePath));
    assert.equal(fx.git(fx.repo, 'branch', '--list', 'feature/review'), '');
    // The landed commits are on main still.
    assert.equal(fx.git(fx.repo, 'log', '-1', '--format=%s', 'main'), 'agent: change 2');
  });
});
