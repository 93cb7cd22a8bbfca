// Real temp git repositories for the protocol and end-to-end tests, with hermetic git:
// HOME, GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM point into the temp folder.

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface Fixture {
  /** The temp folder holding everything. */
  dir: string;
  /** The host checkout (a clone of `origin`). */
  repo: string;
  /** The bare remote. */
  origin: string;
  /** Environment for git and for the sidecar. */
  env: NodeJS.ProcessEnv;
  git(cwd: string, ...args: string[]): string;
  /** Commit of a ref, in `cwd` (default: the host checkout). */
  rev(ref: string, cwd?: string): string;
  cleanup(): void;
}

/** The slipway binary: $SLIPWAY_BIN, else target/debug/slipway of this checkout. */
export function slipwayBinary(): string {
  const fromEnv = process.env.SLIPWAY_BIN;
  if (fromEnv) {
    return fromEnv;
  }
  // out/test/fixtures.js → editors/vscode → repo root
  return path.resolve(__dirname, '..', '..', '..', '..', 'target', 'debug', 'slipway');
}

export function hermeticEnv(dir: string): NodeJS.ProcessEnv {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  const gitconfig = path.join(dir, 'gitconfig');
  fs.writeFileSync(
    gitconfig,
    '[user]\n\tname = Slipway Test\n\temail = test@slipway.invalid\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
  );
  const env: NodeJS.ProcessEnv = {};
  for (const key of ['PATH', 'LANG', 'TERM', 'TMPDIR']) {
    if (process.env[key] !== undefined) {
      env[key] = process.env[key];
    }
  }
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    GIT_CONFIG_GLOBAL: gitconfig,
    GIT_CONFIG_SYSTEM: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
  };
}

/**
 * A remote with `main` (2 commits) and `feature/search` (one more), cloned as the host
 * checkout `repo`, which has `main` (tracking origin/main) and a local-only
 * `feature/login`. So `main` and `origin/main` exist under one name, and
 * `origin/feature/search` only as a remote-tracking branch.
 */
export function makeFixture(prefix = 'slipway-vscode-'): Fixture {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  const env = hermeticEnv(dir);
  const git = (cwd: string, ...args: string[]): string =>
    execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const seed = path.join(dir, 'seed');
  fs.mkdirSync(seed);
  git(seed, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(seed, 'README.md'), '# webapp\n');
  git(seed, 'add', '.');
  git(seed, 'commit', '-q', '-m', 'Initial commit');
  fs.writeFileSync(path.join(seed, 'app.txt'), 'app\n');
  git(seed, 'add', '.');
  git(seed, 'commit', '-q', '-m', 'Add app');
  git(seed, 'switch', '-q', '-c', 'feature/search');
  fs.writeFileSync(path.join(seed, 'search.txt'), 'search\n');
  git(seed, 'add', '.');
  git(seed, 'commit', '-q', '-m', 'Search endpoint');
  git(seed, 'switch', '-q', 'main');
  const origin = path.join(dir, 'origin.git');
  git(dir, 'clone', '-q', '--bare', seed, origin);
  const repo = path.join(dir, 'webapp');
  git(dir, 'clone', '-q', origin, repo);
  git(repo, 'branch', 'feature/login', 'HEAD~1');
  return {
    dir,
    repo,
    origin,
    env,
    git,
    rev: (ref, cwd = repo) => git(cwd, 'rev-parse', ref),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes an agent script that makes `count` commits, each adding a file; with
 * `gate`, only once that file exists (the test creates it when it has seen what
 * it waits for while the run goes on).
 */
export function writeCommittingAgent(dir: string, count: number, name = 'agent.sh', gate?: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(
    file,
    [
      '#!/bin/sh',
      'set -e',
      'echo "agent got prompt: $SLIPWAY_PROMPT on $SLIPWAY_SOURCE_BRANCH"',
      ...(gate ? [`while [ ! -e '${gate}' ]; do sleep 0.1; done # allow-sleep: the agent polls for the test's gate file`] : []),
      `for i in $(seq 1 ${count}); do`,
      '  echo "change $i" > "agent-$i.txt"',
      '  git add "agent-$i.txt"',
      '  git commit -q -m "agent: change $i"',
      'done',
      'echo done',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return file;
}

/**
 * An agent script for attempts: attempt `i` (the last part of its branch, `<branch>/i`)
 * writes `attempt.txt` naming it and `lines.txt` with `i` lines, and commits them.
 */
export const ATTEMPT_AGENT = [
  '#!/bin/sh',
  'set -e',
  'i=${SLIPWAY_SOURCE_BRANCH##*/}',
  "printf 'attempt %s\\n' \"$i\" > attempt.txt",
  'seq 1 "$i" > lines.txt',
  'git add attempt.txt lines.txt',
  'git commit -q -m "attempt $i"',
  '',
].join('\n');
