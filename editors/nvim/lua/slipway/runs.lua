--- Run notifications: the `slipway/runFinished` summary and the
--- `User SlipwayRunFinished` event. Progress itself comes through Neovim's own
--- `$/progress` handling (`vim.lsp.status()`, `LspProgress`).

local util = require('slipway.util')

local M = {}

---@class slipway.RunFinished
---@field runId string
---@field root string
---@field status 'completed'|'failed'|'timedOut'|'cancelled'|'needsInput'
---@field question? { text: string, reason: string, sessionId?: string }
---@field replyTo? string
---@field commits { sha: string }[]
---@field branch string
---@field worktreePath string
---@field preservedWorktreePath? string
---@field keptBranch? string
---@field logFile string
---@field error? { kind: string, message: string }
---@field iterations? integer
---@field completionSignal? string
---@field sessionId? string
---@field usage? { inputTokens?: integer, outputTokens?: integer }
---@field merge? { kind: 'fastForward'|'merged'|'upToDate', from?: string, to?: string, commit?: string, into?: string }
---@field quarantined? { path: string, finding: string, detail?: string, movedTo?: string }[]
---@field warnings? string[]
---@field actions? { kind: string, worktree?: string, runId?: string, force?: boolean }[]
---@field sensitiveChanges? { path: string, status: string, kind: string, why: string }[]

--- Every `slipway/runFinished` received, newest last.
---@type slipway.RunFinished[]
M.finished = {}

local levels = {
  completed = vim.log.levels.INFO,
  cancelled = vim.log.levels.WARN,
  failed = vim.log.levels.ERROR,
  timedOut = vim.log.levels.ERROR,
  needsInput = vim.log.levels.WARN,
}

local str = util.present

--- What a finding of the quarantine check is, for people.
local finding_labels = {
  nestedGit = 'nested .git',
  escapingSymlink = 'symlink leaving the worktree',
  newGitlink = 'new gitlink',
  refusedEntry = 'refused entry',
  specialFile = 'device node, fifo or socket (removed)',
  setIdBits = 'set-id bits (cleared)',
}

--- The host's current branch, read from its `HEAD` file (no git process).
---@param root string?
---@return string?
local function host_branch(root)
  if not root then
    return nil
  end
  local fd = io.open(root .. '/.git/HEAD', 'r')
  if not fd then
    return nil
  end
  local line = fd:read('*l') or ''
  fd:close()
  return line:match('^ref:%s*refs/heads/(.+)$')
end

--- The commit a host branch points at, read from its ref file or `packed-refs`.
---@param root string
---@param branch string
---@return string?
local function read_ref(root, branch)
  local fd = io.open(root .. '/.git/refs/heads/' .. branch, 'r')
  if fd then
    local sha = fd:read('*l')
    fd:close()
    return sha and vim.trim(sha) or nil
  end
  fd = io.open(root .. '/.git/packed-refs', 'r')
  if not fd then
    return nil
  end
  local found
  for line in fd:lines() do
    local sha, ref = line:match('^(%x+) (%S+)$')
    if ref == 'refs/heads/' .. branch then
      found = sha
    end
  end
  fd:close()
  return found
end

--- A sidecar whose `slipway/runFinished` has no `merge` field: a run that
--- completed with commits, kept neither its worktree nor its branch, and whose
--- worktree is gone was merged back (merge-to-head); a host branch at its last
--- commit is a fast-forward.
---@param p slipway.RunFinished
---@return table?
function M.guess_merge(p)
  local commits = p.commits or {}
  if p.status ~= 'completed' or #commits == 0 or str(p.preservedWorktreePath) or str(p.keptBranch) then
    return nil
  end
  local worktree = str(p.worktreePath)
  if not worktree or not p.root or util.realpath(worktree) == util.realpath(p.root) or vim.uv.fs_stat(worktree) then
    return nil
  end
  local into = host_branch(p.root)
  if not into then
    return nil
  end
  local tip = read_ref(p.root, into)
  if tip and tip == commits[#commits].sha then
    return { kind = 'fastForward', into = into }
  end
  return { kind = 'merged', into = into, commit = tip }
end

--- What the merge back of a merge-to-head run did, from its `merge` field:
--- `merged into main (fast-forward)`. nil when the run made no merge.
---@param p slipway.RunFinished
---@return string?
function M.merge_text(p)
  local merge = str(p.merge)
  if type(merge) ~= 'table' then
    merge = M.guess_merge(p)
    if not merge then
      return nil
    end
  end
  local into = str(merge.into) or host_branch(p.root) or 'the host branch'
  if merge.kind == 'fastForward' then
    return ('merged into %s (fast-forward)'):format(into)
  elseif merge.kind == 'merged' then
    return ('merged into %s (merge commit %s)'):format(into, util.short(str(merge.commit)))
  elseif merge.kind == 'upToDate' then
    return ('%s already had every commit'):format(into)
  end
  return ('merged into %s (%s)'):format(into, tostring(merge.kind))
end

--- The one line naming what a run's quarantine check found, or nil.
---@param p slipway.RunFinished
---@return string? line
---@return string? details
function M.quarantine_text(p)
  local found = type(p.quarantined) == 'table' and p.quarantined or {}
  if #found == 0 then
    return nil
  end
  local names, lines = {}, {}
  for _, q in ipairs(found) do
    local label = finding_labels[q.finding] or tostring(q.finding)
    names[#names + 1] = ('%s (%s)'):format(tostring(q.path), label)
    local line = ('  %s: %s'):format(tostring(q.path), label)
    if str(q.detail) then
      line = line .. ' ' .. q.detail
    end
    if str(q.movedTo) then
      line = line .. ', moved to ' .. q.movedTo
    else
      line = line .. ', reported only (it is in the commits)'
    end
    lines[#lines + 1] = line
  end
  local head = ('run %s: quarantined %s'):format(p.runId, table.concat(names, ', '))
  return head, head .. '\n' .. table.concat(lines, '\n')
end

--- The text of the summary shown when a run ends: one line first (the status,
--- the commits and where they are), the details after it.
---@param p slipway.RunFinished
---@return string
function M.summary(p)
  local commits = p.commits or {}
  local lines = {}
  -- A merge back can bring commits the branch held before the run (an
  -- interactive session's): count what landed.
  local landed = type(p.mergedCommits) == 'table' and p.mergedCommits or {}
  local n = math.max(#commits, #landed)
  local where = str(p.preservedWorktreePath)
  local worktree = str(p.worktreePath)
  local yours = worktree and require('slipway.status').is_yours(worktree)
  local merged = M.merge_text(p)
  local head = ('run %s %s: %d commit%s'):format(p.runId, p.status, n, n == 1 and '' or 's')
  local question = type(p.question) == 'table' and str(p.question.text) or nil
  if p.status == 'needsInput' then
    -- The question is what a person must see: first, on the line shown.
    head = ('run %s asks: %s'):format(p.runId, question or '(no text)')
  elseif str(p.error) and p.error.kind == 'sessionBusy' then
    head = ('run %s failed (sessionBusy): the agent session has another writer'):format(p.runId)
  end
  if merged then
    head = head .. ' ' .. merged
  elseif str(p.branch) then
    head = head .. ' on ' .. p.branch
  end
  if yours then
    head = head .. ' (your worktree)'
  end
  -- What to do next is on the line people see: review and land first; for a
  -- question, how to answer it (review and land stay in the details).
  local offered = {}
  for _, a in ipairs(type(p.actions) == 'table' and p.actions or {}) do
    if (a.kind == 'review' or a.kind == 'land') and p.status ~= 'needsInput' then
      offered[#offered + 1] = util.action_text(a)
    end
  end
  if p.status == 'needsInput' then
    head = head .. ' — :Slipway reply'
  elseif #offered > 0 then
    head = head .. ' — ' .. table.concat(offered, ' or ')
  end
  lines[1] = head
  if p.status == 'needsInput' then
    lines[#lines + 1] = ('answer with :Slipway reply %s — %d commit%s so far'):format(
      p.runId,
      n,
      n == 1 and '' or 's'
    )
  end
  if str(p.replyTo) then
    lines[#lines + 1] = 'answers run ' .. p.replyTo
  end
  local extra = {}
  if type(p.iterations) == 'number' and p.iterations > 1 then
    extra[#extra + 1] = p.iterations .. ' iterations'
  end
  if type(p.completionSignal) == 'string' then
    extra[#extra + 1] = 'completion signal ' .. p.completionSignal
  end
  if type(p.sessionId) == 'string' then
    extra[#extra + 1] = 'session ' .. p.sessionId
  end
  if #extra > 0 then
    lines[#lines + 1] = table.concat(extra, ', ')
  end
  if str(p.error) and p.error.message then
    lines[#lines + 1] = ('error (%s): %s'):format(p.error.kind or '?', p.error.message)
  end
  if str(p.keptBranch) then
    lines[#lines + 1] = p.keptBranch
  end
  vim.list_extend(lines, require('slipway.trust').sensitive_lines(p.sensitiveChanges))
  for _, w in ipairs(type(p.warnings) == 'table' and p.warnings or {}) do
    lines[#lines + 1] = 'warning: ' .. tostring(w)
  end
  if where and not yours then
    lines[#lines + 1] = 'worktree kept at ' .. where
  elseif where then
    lines[#lines + 1] = 'worktree ' .. where
  end
  local next_steps = {}
  if where and not yours then
    next_steps[#next_steps + 1] = ':Slipway open'
  end
  for _, a in ipairs(type(p.actions) == 'table' and p.actions or {}) do
    next_steps[#next_steps + 1] = util.action_text(a)
  end
  next_steps[#next_steps + 1] = ':Slipway log ' .. p.runId
  lines[#lines + 1] = 'next: ' .. table.concat(next_steps, ' | ')
  if str(p.logFile) then
    lines[#lines + 1] = 'log file: ' .. p.logFile
  end
  return table.concat(lines, '\n')
end

--- After a run: buffers of files in its worktree are reloaded (`:checktime`),
--- or wiped when the worktree is gone (merge-to-head removes its own); a
--- merge into the host reloads the host's buffers too.
---@param p slipway.RunFinished
function M.refresh_buffers(p)
  local worktree = str(p.worktreePath)
  local dirs = {}
  if worktree and vim.uv.fs_stat(worktree) then
    dirs[#dirs + 1] = util.realpath(worktree)
  elseif worktree then
    require('slipway.buffers').forget(worktree)
  end
  if (str(p.merge) or M.guess_merge(p)) and p.root then
    dirs[#dirs + 1] = util.realpath(p.root)
  end
  require('slipway.buffers').reload(dirs)
end

--- Handler of `slipway/runFinished`: `User SlipwayRunFinished` at once, the
--- buffers refreshed, then a one-line summary (details in `:Slipway details`).
---@param client_id integer
---@param params slipway.RunFinished
function M.on_finished(client_id, params)
  if type(params) ~= 'table' then
    return
  end
  if not params.root then
    local client = vim.lsp.get_client_by_id(client_id)
    params.root = client and client.root_dir or nil
  end
  M.finished[#M.finished + 1] = params
  require('slipway.activity').on_finished(params)
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'SlipwayRunFinished',
    modeline = false,
    data = vim.tbl_extend('force', { client_id = client_id }, params),
  })
  pcall(M.refresh_buffers, params)
  -- Once shown, no other editor is told of it (the sidecar holds its news until then).
  local function seen()
    M.seen(client_id, params.runId)
  end
  local qline, qdetails = M.quarantine_text(params)
  if require('slipway.config').get().notify_run_finished ~= false then
    util.notify(M.summary(params), levels[params.status] or vim.log.levels.INFO, not qline and seen or nil)
  elseif not qline then
    vim.schedule(seen)
  end
  if qline then
    util.notify(qdetails or qline, vim.log.levels.WARN, seen)
  end
  vim.cmd('redrawstatus!')
end

--- Tells the sidecar that the end of run `run_id` was shown.
---@param client_id integer
---@param run_id string
function M.seen(client_id, run_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client or client:is_stopped() or type(run_id) ~= 'string' then
    return
  end
  client:request('workspace/executeCommand', {
    command = 'slipway.seen',
    arguments = { { runIds = { run_id } } },
  }, function() end)
end

return M
