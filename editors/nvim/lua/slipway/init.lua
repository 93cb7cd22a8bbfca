--- slipway for Neovim: a thin shim over the `slipway lsp` sidecar.
---
--- Works without `setup()` (options come from `vim.g.slipway`); `setup(opts)`
--- is optional. See `:help slipway`.

local M = {}

--- Optional: sets options (they win over `vim.g.slipway`).
---@param opts? slipway.Opts
function M.setup(opts)
  local config = require('slipway.config')
  config.set(opts)
  if opts and opts.cmd then
    -- Keep `vim.lsp.enable('slipway')` on the same binary.
    vim.lsp.config('slipway', { cmd = config.cmd() })
  end
end

--- A short status line string from the cache fed by the sidecar: the
--- worktree's branch, a dirty mark, the runs of the repository (running with
--- their latest step, or done), and the count of dirty preserved worktrees.
--- Never sends a request, never blocks. Plain text, for `%{…}`; with
--- `highlight` a 'statusline' format for `%{%…%}` (see |slipway.statusline()|).
---@param path? string|{ highlight?: boolean } default: the current buffer's file, else the cwd
---@param opts? { highlight?: boolean }
---@return string
function M.statusline(path, opts)
  -- `statusline({ highlight = true })`: Vimscript has no nil to pass for the path.
  if type(path) == 'table' then
    path, opts = nil, path
  end
  return require('slipway.status').statusline(path, opts)
end

--- The cached state of a path: its repository snapshot and its worktree, if any.
---@param path? string
---@return slipway.Snapshot? repo
---@return slipway.WorktreeStatus? worktree
function M.status(path)
  return require('slipway.status').lookup(path)
end

--- Runs a sidecar command for the repository of the current buffer (or cwd).
--- `cb(err, result)`; `err.data.kind` is the sidecar's stable error kind.
---@param command string e.g. `slipway.list`
---@param args table
---@param cb fun(err: slipway.RpcError?, result: any)
function M.request(command, args, cb)
  local root = require('slipway.util').repo_root()
  if not root then
    return cb({ code = -1, message = 'not inside a git repository', data = { kind = 'notARepository' } })
  end
  require('slipway.lsp').exec(root, command, args, cb)
end

---@param name string
---@return fun(args?: slipway.CommandArgs)
local function sub(name)
  return function(args)
    require('slipway.commands').run(name, args)
  end
end

--- `:Slipway new`: create a worktree (strategy, branch name, source policy).
M.new = sub('new')
--- `:Slipway branch`: the branch picker; the chosen branch starts a new worktree.
M.branch = sub('branch')
--- `:Slipway open`: choose a worktree and open it.
M.open = sub('open')
--- `:Slipway agent`: the agent's interactive command in a terminal in the current worktree.
M.agent = sub('agent')
--- `:Slipway handoff`: hand the current worktree to an unattended run.
M.handoff = sub('handoff')
--- `:Slipway run`: a new worktree and an unattended run in it.
M.run = sub('run')
--- `:Slipway list`: the worktrees of the repository.
M.list = sub('list')
--- `:Slipway review`: a worktree's changed files in the quickfix list, each one's diff a key away.
M.review = sub('review')
--- `:Slipway land`: bring a worktree's branch into a host branch.
M.land = sub('land')
--- `:Slipway discard`: remove a worktree and its branch, after a confirmation.
M.discard = sub('discard')
--- `:Slipway runs`: the runs of the repository with their latest step, elapsed time, tokens and cost.
M.runs = sub('runs')
--- `:Slipway log`: a buffer that follows a run's output.
M.log = sub('log')
--- `:Slipway details`: every message in full.
M.details = sub('details')
--- `:Slipway stop`: end the interactive agent `:Slipway agent` started, waiting for its exit.
M.stop = sub('stop')
--- `:Slipway close`: close a worktree; force is offered after showing what would be lost.
M.close = sub('close')
--- `:Slipway cancel`: stop a run.
M.cancel = sub('cancel')
--- `:Slipway problems`: slipway's diagnostics to the quickfix list.
M.problems = sub('problems')

return M
