// Protocol tests: the real `slipway lsp`, driven as the extension drives it.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { branchItems, closePreservedView, runFinishedView, statusView } from '../../src/model';
import { COMMANDS, PROTOCOL_VERSION, progressToken, readVocabularies, SlipwayError, type Source, withSourcePick } from '../../src/protocol';
import { type Fixture, makeFixture, writeCommittingAgent } from '../fixtures';
import { Session } from './harness';

describe('slipway lsp, driven through the extension request builders', () => {
  let fx: Fixture;
  let session: Session;
  let init: Awaited<ReturnType<typeof Session.start>>['init'];
  let worktreePath = '';
  let worktreeId = '';

  before(async () => {
    fx = makeFixture();
    ({ session, init } = await Session.start(fx.env, [fx.repo]));
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  it('advertises every command the extension sends, protocol 1 and the names it accepts (landModes too)', () => {
    // The sidecar may offer more than this extension sends; the attempts commands are among those it sends.
    const advertised = new Set(init.capabilities.executeCommandProvider?.commands ?? []);
    assert.deepEqual(COMMANDS.filter((c) => !advertised.has(c)), []);
    assert.equal(init.capabilities.experimental?.slipwayProtocol, PROTOCOL_VERSION);
    const names = readVocabularies(init.capabilities.experimental);
    assert.ok(names, JSON.stringify(init.capabilities.experimental));
    assert.equal(names.protocol, PROTOCOL_VERSION);
    assert.ok(names.agents.includes('claude-code') && names.agents.includes('command'), JSON.stringify(names));
    assert.deepEqual(names.sandboxes, ['none', 'docker', 'docker-isolated']);
    assert.deepEqual(names.strategies, ['head', 'merge-to-head', 'branch']);
    assert.ok(names.policies.includes('ask') && names.policies.includes('host_head'), JSON.stringify(names));
    // Land offers these names only: the extension keeps no list of its own.
    assert.ok(names.landModes.includes('merge'), `landModes: ${JSON.stringify(names.landModes)}`);
  });

  it('pushes a first slipway/status for the workspace folder', async () => {
    await session.until(() => session.statuses.some((s) => s.repositories.some((r) => r.root === fx.repo)), 'status of the repo');
  });

  it('lists branches that render as Local and Remote groups', async () => {
    const { branches } = await session.api.branches(fx.repo);
    const names = branches.map((b) => `${b.kind}:${b.name}`);
    assert.deepEqual(names, ['local:feature/login', 'local:main', 'remote:origin/feature/search', 'remote:origin/main']);
    const items = branchItems(branches);
    assert.deepEqual(
      items.map((i) => (i.type === 'separator' ? `-- ${i.label}` : i.label)),
      ['-- Local', '$(git-branch) feature/login', '$(git-branch) main', '-- Remote', '$(cloud) origin/feature/search', '$(cloud) origin/main'],
    );
    const main = items.find((i) => i.type === 'branch' && i.ref === 'main');
    assert.ok(main?.type === 'branch' && main.description.includes('HEAD'));
    const def = items.find((i) => i.type === 'branch' && i.ref === 'origin/main');
    assert.ok(def?.type === 'branch' && def.description.includes('default'));
  });

  it('asks for the source with the ask policy, then creates from the picked remote branch', async () => {
    let asked: SlipwayError | undefined;
    const created = await withSourcePick(
      (source: Source | undefined) =>
        session.api.createWorktree({
          root: fx.repo,
          strategy: 'branch',
          branch: 'feature/search-ui',
          source,
          agent: { type: 'command', command: ['bash', '-l'] },
        }),
      { policy: 'ask' },
      (e) => {
        asked = e;
        // The choices are whole entries: the picker needs no `slipway.branches`.
        const pickable = branchItems(e.data?.choices ?? []);
        const remote = pickable.find((i) => i.type === 'branch' && i.ref === 'origin/feature/search');
        return Promise.resolve(remote?.type === 'branch' ? remote.ref : undefined);
      },
    );
    assert.equal(asked?.kind, 'sourceBranchRequired');
    const entry = asked.data?.choices?.find((b) => b.name === 'origin/feature/search');
    assert.ok(entry && entry.kind === 'remote' && entry.commit === fx.rev('origin/feature/search'), JSON.stringify(asked.data));
    assert.ok(created);
    assert.equal(created.branch, 'feature/search-ui');
    assert.equal(created.baseCommit, fx.rev('origin/feature/search'));
    assert.equal(created.sourceLabel, 'origin/feature/search');
    assert.ok(fs.existsSync(path.join(created.path, 'search.txt')));
    assert.equal(fx.rev('HEAD', created.path), fx.rev('origin/feature/search'));
    assert.deepEqual(created.interactiveCommand, { argv: ['bash', '-l'], cwd: created.path });
    worktreePath = created.path;
    worktreeId = created.id;
  });

  it('renders the new worktree in the status bar from slipway/status', async () => {
    await session.until(
      () => session.latestStatus()?.repositories.some((r) => r.worktrees.some((w) => w.path === worktreePath)) === true,
      'status with the worktree',
    );
    const view = statusView(session.latestStatus(), { paths: [path.join(worktreePath, 'search.txt'), fx.repo] });
    assert.equal(view.text, '$(slipway-logo) feature/search-ui');
    assert.equal(view.warning, false);
    assert.equal(view.current?.id, worktreeId);
    const outside = statusView(session.latestStatus(), { paths: [fx.repo] });
    assert.equal(outside.text, '$(slipway-logo) 1 worktree');
  });

  it('re-uses the worktree of an existing branch and answers the interactive command again', async () => {
    const again = await session.api.createWorktree({
      root: worktreePath,
      strategy: 'branch',
      branch: 'feature/search-ui',
      agent: { type: 'command', command: ['sh'] },
    });
    assert.equal(again.reused, true);
    assert.equal(again.path, worktreePath);
    assert.deepEqual(again.interactiveCommand?.argv, ['sh']);
  });

  it('answers slipway.status for a path in the worktree', async () => {
    const st = await session.api.status(worktreePath);
    assert.equal(st.inWorktree, true);
    assert.equal(st.branch, 'feature/search-ui');
    assert.equal(st.root, fx.repo);
  });

  it('hands off to an unattended run: progress, runFinished with the commits', async () => {
    const agent = writeCommittingAgent(fx.dir, 2);
    const before = fx.rev('feature/search-ui');
    const { runId } = await session.api.handoff({
      root: fx.repo,
      worktree: worktreeId,
      agent: { type: 'command', command: ['sh', agent] },
      sandbox: { type: 'none' },
      prompt: 'add two files',
    });
    assert.match(runId, /^run-/);
    const done = await session.runFinished(runId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.commits.length, 2);
    assert.equal(done.branch, 'feature/search-ui');
    assert.equal(done.preservedWorktreePath, worktreePath);
    const log = fx.git(fx.repo, 'rev-list', '--reverse', `${before}..feature/search-ui`).split('\n');
    assert.deepEqual(done.commits.map((c) => c.sha), log);
    assert.equal(fx.git(fx.repo, 'log', '-1', '--format=%s', 'feature/search-ui'), 'agent: change 2');
    const view = runFinishedView(done);
    assert.equal(view.severity, 'info');
    assert.equal(view.message, 'slipway: run completed on feature/search-ui: 2 commits');
    // The sidecar's next actions become the toast's buttons: Review and Land first.
    assert.deepEqual(view.actions, ['Review', 'Land…', 'Open', 'Show Log']);
    assert.match(fs.readFileSync(done.logFile, 'utf8'), /agent got prompt: add two files/);
    // $/progress: create, begin, reports, end on the run's token.
    const token = progressToken(runId);
    assert.ok(session.created.includes(token), `create for ${token}`);
    const kinds = session.progress.filter((p) => p.token === token).map((p) => p.value.kind);
    assert.equal(kinds[0], 'begin');
    assert.equal(kinds[kinds.length - 1], 'end');
    assert.ok(kinds.includes('report'));
  });

  it('preserves a dirty worktree on close, publishes diagnostics, and removes it only when forced', async () => {
    assert.ok(path.isAbsolute(worktreePath), 'an earlier test made the worktree');
    fs.writeFileSync(path.join(worktreePath, 'scratch.txt'), 'unsaved work\n');
    const answer = await session.api.close({ root: fx.repo, worktree: worktreeId });
    assert.equal(answer.removed, false);
    if (answer.removed) {
      return;
    }
    assert.deepEqual(answer.changedPaths, ['scratch.txt']);
    assert.equal(answer.preservedPath, worktreePath);
    const view = closePreservedView(answer);
    assert.match(view.detail, /scratch\.txt/);
    const uri = pathToFileURL(path.join(worktreePath, 'scratch.txt')).href;
    await session.until(() => (session.diagnostics.get(uri)?.length ?? 0) > 0, 'diagnostic for scratch.txt');
    const diag = session.diagnostics.get(uri)?.[0];
    assert.equal(diag?.code, 'dirty-preserved-worktree');
    assert.equal(diag.source, 'slipway');
    assert.equal(diag.severity, 2);
    await session.until(() => session.latestStatus()?.repositories[0]?.dirtyPreserved === 1, 'dirtyPreserved 1');
    const warn = statusView(session.latestStatus(), { paths: [fx.repo] });
    assert.equal(warn.warning, true);
    assert.match(warn.text, /\$\(warning\) 1/);
    const forced = await session.api.close({ root: fx.repo, worktree: worktreeId, force: true });
    assert.equal(forced.removed, true);
    assert.ok(!fs.existsSync(worktreePath));
    await session.until(() => session.diagnostics.get(uri)?.length === 0, 'diagnostic cleared');
    // the branch and its commits stay
    assert.equal(fx.git(fx.repo, 'log', '-1', '--format=%s', 'feature/search-ui'), 'agent: change 2');
  });

  it('cancels a run through slipway.cancel', async () => {
    const { runId } = await session.api.run({
      root: fx.repo,
      branch: 'feature/stall',
      source: { policy: 'default' },
      agent: { type: 'command', command: ['sh', '-c', 'echo stalling; sleep 60'] }, // allow-sleep: the agent stalls until the test cancels it
    });
    await session.until(
      () => session.progress.some((p) => p.token === progressToken(runId) && /^command started \(pid \d+\)$/.test(p.value.message ?? '')),
      'agent started',
    );
    // Then the step line follows the agent: its latest output, in people's words.
    await session.until(
      () => session.progress.some((p) => p.token === progressToken(runId) && p.value.message === 'stalling'),
      "the agent's output as the step",
    );
    const answer = await session.api.cancel({ runId });
    assert.equal(answer.status, 'cancelling');
    const done = await session.runFinished(runId);
    assert.equal(done.status, 'cancelled');
    assert.equal(runFinishedView(done).severity, 'warning');
  });

  it('answers errors with a stable data.kind', async () => {
    await assert.rejects(
      session.api.createWorktree({ root: fx.repo, strategy: 'branch', branch: 'main' }),
      // A failed create leaves nothing behind, so its error names no worktree.
      (e: unknown) => e instanceof SlipwayError && e.kind === 'branchCheckedOut' && e.data?.worktreePath === undefined,
    );
    await assert.rejects(
      session.api.createWorktree({ root: fx.repo, strategy: 'branch', branch: 'bad..name' }),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'invalidBranchName',
    );
    await assert.rejects(
      session.api.handoff({ root: fx.repo, worktree: 'nope', agent: { type: 'command', command: ['true'] } }),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'worktreeNotFound',
    );
    await assert.rejects(
      session.api.resolveSource({ root: fx.repo, source: { policy: 'named', ref: 'feature/nope' } }),
      (e: unknown) => e instanceof SlipwayError && e.kind === 'unknownRef' && (e.data?.choices ?? []).some((b) => b.name === 'origin/main'),
    );
  });

  it('resolves the default policy to origin/main', async () => {
    const r = await session.api.resolveSource({ root: fx.repo, source: { policy: 'default' } });
    assert.equal(r.commit, fx.rev('origin/main'));
    assert.equal(r.label, 'origin/main (default)');
  });
});
