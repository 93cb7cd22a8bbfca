// Protocol test of the trust flow the extension runs around Run Agent, New Worktree and
// Hand Off: a repository's slipway.toml with a host hook answers `untrustedConfig`; the
// extension's withTrust shows it (here: a scripted answer), Cancel sends nothing, Trust
// approves exactly the content shown with `slipway.trust` and sends the run again, and
// a file that changes after it was shown is shown again — against the real `slipway lsp`.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { diffFileView, landedMessage, trustView } from '../../src/model';
import { type RunArgs, SlipwayError, type TrustFile, untrustedFiles, withTrust } from '../../src/protocol';
import { type Fixture, makeFixture } from '../fixtures';
import { Session } from './harness';

describe('the trust flow, against the real slipway lsp', () => {
  let fx: Fixture;
  let session: Session;
  let marks = '';

  const marksLeft = (): string[] => fs.readdirSync(marks).sort();
  const worktrees = (): string[] => {
    const dir = path.join(fx.repo, '.slipway', 'worktrees');
    return fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => n !== '.trash') : [];
  };
  const writeConfig = (hook: string): void => {
    fs.writeFileSync(path.join(fx.repo, 'slipway.toml'), `version = 2\n[hooks.host]\non_worktree_ready = ["touch ${path.join(marks, hook)}"]\n`);
  };
  const run = (): RunArgs => ({
    root: fx.repo,
    strategy: 'merge-to-head',
    source: { policy: 'host_head' },
    agent: { type: 'command', command: ['sh', '-c', `touch ${path.join(marks, 'agent-ran')}`] },
    sandbox: { type: 'none' },
    prompt: 'go',
  });

  before(async () => {
    fx = makeFixture('slipway-vscode-trust-');
    marks = path.join(fx.dir, 'marks');
    fs.mkdirSync(marks);
    writeConfig('hook-ran');
    fx.git(fx.repo, 'add', 'slipway.toml');
    fx.git(fx.repo, 'commit', '-q', '-m', 'config with a hook');
    ({ session } = await Session.start(fx.env, [fx.repo]));
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it('answers untrustedConfig naming the hook, with a trust action, and does nothing', async () => {
    await assert.rejects(session.api.run(run()), (e: unknown) => {
      assert.ok(e instanceof SlipwayError);
      assert.equal(e.kind, 'untrustedConfig');
      const files = untrustedFiles(e);
      assert.ok(files);
      assert.equal(files[0].path, path.join(fx.repo, 'slipway.toml'));
      assert.equal(files[0].hash, fx.git(fx.repo, 'hash-object', 'slipway.toml'));
      assert.deepEqual(files[0].commands, [{ source: 'hooks.host.on_worktree_ready', command: `touch ${path.join(marks, 'hook-ran')}` }]);
      const view = trustView(files);
      assert.match(view.title, /Trust slipway\.toml\?/);
      const rows = view.rows.map((r) => r.label);
      assert.deepEqual(rows.slice(0, 2), ['$(close) Cancel', '$(shield) Trust'], 'Cancel first: the active row');
      assert.ok(rows.some((l) => /^runs: touch .*hook-ran$/.test(l)), JSON.stringify(rows));
      assert.ok(rows.some((l) => l.endsWith('is not trusted yet')), JSON.stringify(rows));
      assert.deepEqual(
        view.rows.flatMap((r) => (r.type === 'row' && r.answer ? [r.answer] : [])),
        ['cancel', 'trust'],
        'only Cancel and Trust answer',
      );
      return true;
    });
    assert.deepEqual(marksLeft(), []);
    assert.deepEqual(worktrees(), []);
  });

  it('Cancel sends nothing more and runs nothing', async () => {
    let asked = 0;
    let approved = 0;
    const answer = await withTrust(
      () => session.api.run(run()),
      () => {
        asked++;
        return Promise.resolve(false);
      },
      () => {
        approved++;
        return Promise.resolve();
      },
    );
    assert.equal(answer, undefined);
    assert.equal(asked, 1);
    assert.equal(approved, 0);
    assert.deepEqual(marksLeft(), []);
    assert.deepEqual(worktrees(), []);
  });

  it('a file changed after it was shown is shown again, and nothing is approved', async () => {
    const seen: TrustFile[][] = [];
    const answer = await withTrust(
      () => session.api.run(run()),
      (files) => {
        seen.push(files);
        if (seen.length === 1) {
          // Someone changes the file while the dialog is open.
          writeConfig('other-hook');
          return Promise.resolve(true);
        }
        return Promise.resolve(false);
      },
      (files) => session.api.trust({ root: fx.repo, files }),
    );
    assert.equal(answer, undefined);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[1][0].hash, seen[0][0].hash);
    assert.match(seen[1][0].commands[0].command, /other-hook/);
    assert.deepEqual(marksLeft(), []);
    await assert.rejects(session.api.run(run()), (e: unknown) => e instanceof SlipwayError && e.kind === 'untrustedConfig');
    fx.git(fx.repo, 'checkout', '--', 'slipway.toml');
  });

  it('Trust approves what was shown, and the same run is sent again and runs the hook', async () => {
    let asked = 0;
    const started = await withTrust(
      () => session.api.run(run()),
      () => {
        asked++;
        return Promise.resolve(true);
      },
      (files) => session.api.trust({ root: fx.repo, files }),
    );
    assert.ok(started, 'the run started');
    assert.equal(asked, 1);
    const done = await session.runFinished(started.runId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.deepEqual(marksLeft(), ['agent-ran', 'hook-ran']);
    // Approved once: the next run asks nothing.
    const again = await withTrust(
      () => session.api.run(run()),
      () => Promise.reject(new Error('asked again')),
      () => Promise.reject(new Error('approved again')),
    );
    assert.ok(again);
    await session.runFinished(again.runId);
  });

  it('the review and the land name files that run programs', async () => {
    const created = await session.api.createWorktree({ root: fx.repo, strategy: 'branch', branch: 'feature/env', source: { policy: 'host_head' } });
    fs.writeFileSync(path.join(created.path, '.envrc'), 'export X=1\n');
    fs.writeFileSync(path.join(created.path, 'notes.txt'), 'notes\n');
    fx.git(created.path, 'add', '.');
    fx.git(created.path, 'commit', '-q', '-m', 'env');
    const diff = await session.api.diff(fx.repo, created.id);
    const envrc = diff.files.find((f) => f.path === '.envrc');
    const notes = diff.files.find((f) => f.path === 'notes.txt');
    assert.ok(envrc?.sensitive, JSON.stringify(diff));
    assert.equal(envrc.sensitive.kind, 'shellEnvironment');
    assert.equal(notes?.sensitive ?? undefined, undefined);
    const view = diffFileView(envrc);
    assert.equal(view.icon, 'warning');
    assert.match(view.description, /runs programs/);
    assert.match(view.tooltip, /direnv runs it/);
    const landed = await session.api.land({ root: fx.repo, worktree: created.id, how: 'merge' });
    assert.deepEqual(
      landed.sensitiveChanges?.map((c) => [c.path, c.status, c.kind]),
      [['.envrc', 'added', 'shellEnvironment']],
    );
    assert.match(landedMessage('feature/env', landed), /read them first: \.envrc/);
  });
});
