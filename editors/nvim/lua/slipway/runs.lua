--- Run notifications: the `slipway/runFinished` summary and the
--- `User SlipwayRunFinished` event. Progress itself comes through Neovim's own
--- `$/progress` handling (`vim.lsp.status()`, `LspProgress`).

local util = require('slipway.util')

local M = {}

---@class slipway.RunFinished
---@field runId string
---@field root string
---@field status 'completed'|'failed'|'timedOut'|'cancelled'
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

--- Every `slipway/runFinished` received, newest last.
---@type slipway.RunFinished[]
M.finished = {}

local levels = {
  completed = vim.log.levels.INFO,
  cancelled = vim.log.levels.WARN,
  failed = vim.log.levels.ERROR,
  timedOut = vim.log.levels.ERROR,
}

--- The text of the summary shown when a run ends.
---@param p slipway.RunFinished
---@return string
function M.summary(p)
  local commits = p.commits or {}
  local lines = {}
  local n = #commits
  local branch = (p.branch and p.branch ~= vim.NIL and p.branch ~= '') and (' on ' .. p.branch) or ''
  lines[#lines + 1] = ('run %s %s: %d commit%s%s'):format(p.runId, p.status, n, n == 1 and '' or 's', branch)
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
  if p.error and p.error ~= vim.NIL and p.error.message then
    lines[#lines + 1] = ('error (%s): %s'):format(p.error.kind or '?', p.error.message)
  end
  if p.keptBranch and p.keptBranch ~= vim.NIL then
    lines[#lines + 1] = p.keptBranch
  end
  local where = p.preservedWorktreePath ~= vim.NIL and p.preservedWorktreePath or nil
  if where then
    lines[#lines + 1] = 'worktree kept at ' .. where
  end
  local next_steps = {}
  if where then
    next_steps[#next_steps + 1] = 'open: :Slipway open'
  end
  if n > 0 then
    local dir = where or p.root
    next_steps[#next_steps + 1] = ('review: git -C %s log -p %s^..%s'):format(
      vim.fn.shellescape(dir),
      util.short(commits[1].sha),
      util.short(commits[n].sha)
    )
  end
  if where then
    next_steps[#next_steps + 1] = 'close: :Slipway close'
  end
  if p.logFile and p.logFile ~= vim.NIL then
    next_steps[#next_steps + 1] = 'log: ' .. p.logFile
  end
  if #next_steps > 0 then
    lines[#lines + 1] = 'next: ' .. table.concat(next_steps, ' | ')
  end
  return table.concat(lines, '\n')
end

--- Handler of `slipway/runFinished`.
---@param client_id integer
---@param params slipway.RunFinished
function M.on_finished(client_id, params)
  if type(params) ~= 'table' then
    return
  end
  M.finished[#M.finished + 1] = params
  if require('slipway.config').get().notify_run_finished ~= false then
    util.notify(M.summary(params), levels[params.status] or vim.log.levels.INFO)
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'SlipwayRunFinished',
    modeline = false,
    data = vim.tbl_extend('force', { client_id = client_id }, params),
  })
  vim.cmd('redrawstatus!')
end

return M
