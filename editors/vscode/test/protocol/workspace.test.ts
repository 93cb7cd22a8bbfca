// Protocol test of Run Agent on Workspace: a named workspace made with the real CLI,
// listed by `slipway.workspaces`, run through `slipway.run` with one answer per `ask`
// mount after `sourceBranchRequired` — the extension's request builders and model.

import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountPickSpecs, sourcesFromAnswers, workspaceItems } from '../../src/model';
import { type MountChoices, type MountSources, requests, SlipwayError, withMountSourcePicks, type WorkspaceInfo } from '../../src/protocol';
import { type Fixture, makeFixture, slipwayBinary } from '../fixtures';
import { Session } from './harness';

describe('Run Agent on Workspace, against the real slipway lsp', () => {
  let fx: Fixture;
  let session: Session;
  let a = '';
  let b = '';

  before(async () => {
    fx = makeFixture('slipway-vscode-ws-');
    // Repository a: the fixture's clone, with origin/release one commit past origin/main.
    a = fx.repo;
    const seed = path.join(fx.dir, 'seed');
    fx.git(seed, 'switch', '-q', '-c', 'release', 'main');
    fs.writeFileSync(path.join(seed, 'release.txt'), 'release\n');
    fx.git(seed, 'add', '.');
    fx.git(seed, 'commit', '-q', '-m', 'Release work');
    fx.git(seed, 'push', '-q', fx.origin, 'release');
    fx.git(a, 'fetch', '-q', 'origin');
    // Repository b: a plain one with main.
    b = path.join(fx.dir, 'b');
    fs.mkdirSync(b);
    fx.git(b, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(b, 'b.txt'), 'b\n');
    fx.git(b, 'add', '.');
    fx.git(b, 'commit', '-q', '-m', 'b: initial');
    // The workspace file, written by the real CLI into the sidecar's XDG_CONFIG_HOME.
    execFileSync(
      slipwayBinary(),
      [
        'workspace',
        'create',
        'duo',
        '--workdir',
        '/w/a',
        '--mount',
        `${a}:/w/a`,
        '--mount',
        `${b}:/w/b`,
        '--mount-isolation',
        '/w/a=worktree',
        '--mount-isolation',
        '/w/b=clone',
        '--mount-source-branch',
        '/w/a=ask',
        '--mount-source-branch',
        '/w/b=ask',
      ],
      { cwd: fx.dir, env: fx.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    ({ session } = await Session.start(fx.env, [a]));
  });

  after(async () => {
    await session.stop();
    fx.cleanup();
  });

  let duo: WorkspaceInfo | undefined;

  it('lists the workspace made on the command line with its two ask mounts, in order', async () => {
    const { workspaces } = await session.api.send(requests.workspaces());
    duo = workspaces.find((w) => w.name === 'duo');
    assert.ok(duo, JSON.stringify(workspaces));
    assert.equal(duo.error, undefined);
    assert.ok(duo.path.startsWith(path.join(fx.env.XDG_CONFIG_HOME ?? '', 'slipway', 'workspaces')), duo.path);
    assert.deepEqual(
      duo.mounts?.map((m) => [m.dst, m.isolation, m.source.policy]),
      [
        ['/w/a', 'worktree', 'ask'],
        ['/w/b', 'clone', 'ask'],
      ],
    );
    // The sidecar decides which repository a run on it uses: the workdir's mount.
    assert.equal(fs.realpathSync(duo.repository ?? ''), a);
    assert.match(workspaceItems(workspaces).find((i) => i.workspace.name === 'duo')?.description ?? '', /2 mounts · 2 ask for a branch/);
  });

  it('asks for both mounts, then runs with the answers as sources', async () => {
    assert.ok(duo, 'the previous test found the workspace');
    const agent = {
      type: 'command' as const,
      command: ['sh', '-c', "echo ws > ws.txt && git add ws.txt && git commit -q -m 'agent: ws'"],
    };
    const sent: (MountSources | undefined)[] = [];
    let asked: MountChoices[] = [];
    let error: SlipwayError | undefined;
    const started = await withMountSourcePicks(
      (sources) => {
        sent.push(sources);
        return session.api.run({ workspace: 'duo', sources, agent, sandbox: { type: 'none' }, prompt: 'p' });
      },
      (mounts, e) => {
        asked = mounts;
        error = e;
        const specs = mountPickSpecs(mounts, 'duo');
        // What the user picks in each picker, in order.
        const answers = specs.map((s, i) => {
          const want = i === 0 ? 'origin/release' : 'main';
          const item = s.items.find((x) => x.type === 'branch' && x.ref === want);
          return item?.type === 'branch' ? item.ref : undefined;
        });
        return Promise.resolve(sourcesFromAnswers(specs, answers));
      },
    );
    assert.equal(error?.kind, 'sourceBranchRequired');
    assert.deepEqual(
      asked.map((m) => m.dst),
      ['/w/a', '/w/b'],
    );
    assert.ok(asked[0].choices.some((b) => b.name === 'origin/release'), JSON.stringify(asked));
    assert.ok(asked[1].choices.some((b) => b.name === 'main'), JSON.stringify(asked));
    assert.deepEqual(
      mountPickSpecs(asked, 'duo').map((s) => s.title),
      ['Start /w/a from… (workspace duo)', 'Start /w/b from… (workspace duo)'],
    );
    assert.deepEqual(sent, [
      undefined,
      { '/w/a': { policy: 'named', ref: 'origin/release' }, '/w/b': { policy: 'named', ref: 'main' } },
    ]);
    assert.ok(started);
    assert.match(started.runId, /^run-/);
    const done = await session.runFinished(started.runId, 60000);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.commits.length, 1, JSON.stringify(done));
    const sha = done.commits[0].sha;
    assert.equal(fx.rev(`${sha}~1`, a), fx.rev('origin/release', a), 'the commit starts from the picked origin/release');
    assert.equal(fx.git(a, 'log', '-1', '--format=%s', sha), 'agent: ws');
    const branches = fx
      .git(a, 'branch', '--format=%(refname:short)', '--contains', sha)
      .split('\n')
      .filter((x) => x !== '');
    assert.ok(branches.length > 0, 'a branch of repository a holds the commit');
    assert.equal(fx.rev(`${branches[0]}~1`, a), fx.rev('origin/release', a));
  });
});
