// Protocol values for the unit tests, with defaults one test overrides field by field.

import type { RunFinished, WorktreeStatus } from '../../src/protocol';

export function worktree(extra: Partial<WorktreeStatus> = {}): WorktreeStatus {
  return {
    id: 'feature-x-1234567890',
    path: '/r/.slipway/worktrees/feature-x-1234567890',
    branch: 'feature/x',
    strategy: 'branch',
    dirty: false,
    changedFiles: 0,
    changedPaths: [],
    ahead: 0,
    state: 'active',
    why: null,
    runId: null,
    health: 'ok',
    baseCommit: 'abc',
    ...extra,
  };
}

export function runFinished(extra: Partial<RunFinished> = {}): RunFinished {
  return {
    runId: 'run-1-a',
    root: '/r',
    status: 'completed',
    commits: [{ sha: 'a' }, { sha: 'b' }],
    branch: 'feature/x',
    worktreePath: '/r/.slipway/worktrees/x',
    preservedWorktreePath: '/r/.slipway/worktrees/x',
    keptBranch: null,
    logFile: '/r/.slipway/logs/run-1-a.log',
    error: null,
    iterations: 1,
    completionSignal: null,
    sessionId: null,
    usage: null,
    ...extra,
  };
}
