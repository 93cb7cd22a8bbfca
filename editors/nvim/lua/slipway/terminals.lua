--- The interactive agent terminals `:Slipway agent` started, by worktree. A
--- handoff ends the one of its worktree first, so that one writer holds the
--- agent's session; quitting Neovim while one runs is refused (`E37`, with a
--- message naming `:Slipway stop` and `:qa!`), and `:confirm qa` asks.

local util = require('slipway.util')

local M = {}

---@class slipway.Terminal
---@field job integer
---@field buf integer
---@field path string the worktree (canonical)
---@field branch? string
---@field waiters fun(code: integer)[] called when the job exits

--- Live terminals by worktree path.
---@type table<string, slipway.Terminal>
M.live = {}

--- The buffer whose 'modified' makes `:qa` refuse while an agent terminal
--- runs: Neovim ends terminal jobs on quit without asking.
M.GUARD = 'slipway://agent-running'

local guard ---@type integer?

--- The live terminals, oldest job first.
---@return slipway.Terminal[]
function M.list()
  local out = vim.tbl_values(M.live)
  table.sort(out, function(a, b)
    return a.job < b.job
  end)
  return out
end

--- Keeps the guard buffer modified exactly while a terminal is live.
local function update_guard()
  local any = next(M.live) ~= nil
  if not guard or not vim.api.nvim_buf_is_valid(guard) then
    if not any then
      return
    end
    guard = vim.api.nvim_create_buf(false, false)
    vim.api.nvim_buf_set_name(guard, M.GUARD)
    vim.bo[guard].buftype = 'acwrite'
    vim.bo[guard].bufhidden = 'hide'
    vim.bo[guard].swapfile = false
    -- `:confirm qa` answered "Yes" (or `:wqa`) writes the guard: the agents end, the quit goes on.
    vim.api.nvim_create_autocmd('BufWriteCmd', {
      buffer = guard,
      desc = 'slipway: quitting ends the interactive agents',
      callback = function()
        for _, t in ipairs(M.list()) do
          vim.fn.jobstop(t.job)
        end
        vim.bo[guard].modified = false
      end,
    })
  end
  local lines = { 'An interactive agent that :Slipway agent started is still running:' }
  for _, t in ipairs(M.list()) do
    lines[#lines + 1] = ('  %s  (%s)'):format(t.branch or t.path, t.path)
  end
  lines[#lines + 1] = ':Slipway stop ends it; :qa! quits and ends it; :confirm qa asks.'
  vim.api.nvim_buf_set_lines(guard, 0, -1, false, lines)
  vim.bo[guard].modified = any
end

--- Records the terminal `job` (in `buf`) of the agent in worktree `path`.
---@param path string
---@param job integer
---@param buf integer
---@param branch? string
function M.started(path, job, buf, branch)
  local dir = util.realpath(path)
  M.live[dir] = { job = job, buf = buf, path = dir, branch = branch, waiters = {} }
  update_guard()
end

--- The `on_exit` of a terminal job: forgotten, and whoever waits on it told.
---@param job integer
---@param code integer
function M.exited(job, code)
  for dir, t in pairs(M.live) do
    if t.job == job then
      M.live[dir] = nil
      update_guard()
      for _, cb in ipairs(t.waiters) do
        cb(code)
      end
    end
  end
end

--- The live terminal of the worktree at `path`, or nil.
---@param path string
---@return slipway.Terminal?
function M.of(path)
  return M.live[util.realpath(path)]
end

--- Stops the terminal of worktree `path`; `cb(code)` once its exit event came
--- (at once when none is live).
---@param path string
---@param cb fun(code?: integer)
function M.stop(path, cb)
  local t = M.of(path)
  if not t then
    return cb(nil)
  end
  t.waiters[#t.waiters + 1] = cb
  vim.fn.jobstop(t.job)
end

--- `ExitPre` (`:qa`, or `:q` in the last window): say why the quit is refused.
function M.on_exit_pre()
  local live = M.list()
  if #live == 0 then
    return
  end
  local names = vim.tbl_map(function(t)
    return t.branch or t.path
  end, live)
  util.notify(
    ('an interactive agent is still running in %s: :Slipway stop ends it, :qa! quits and ends it'):format(
      table.concat(names, ', ')
    ),
    vim.log.levels.WARN
  )
  util.flush_now()
end

return M
