--- Options of the slipway plugin: defaults, `vim.g.slipway`, and `setup(opts)`.
---
--- The effective options are recomputed on every read, so changing
--- `vim.g.slipway` at any time takes effect on the next command.

---@alias slipway.OpenHow 'tab'|'window'|'cd'
---@alias slipway.TerminalHow 'split'|'vsplit'|'tab'

---@class slipway.AgentSpec
---@field type string `command`, `claude-code`, `codex`, … as the sidecar names them
---@field command? string[] program and arguments of the `command` agent
---@field model? string

---@class slipway.SandboxSpec
---@field type string `none`, `docker` or `docker-isolated`
---@field image? string
---@field network? string the container's docker network (`none`, `bridge`, a network name); default the engine's

---@class slipway.StatuslineOpts
---@field icon? string put before the worktree's branch
---@field dirty? string shown when the worktree has uncommitted changes
---@field running? string shown while an agent runs in the worktree (or, in the host, in any), before its latest step
---@field done? string shown after a run that completed, until `:Slipway runs` shows it
---@field failed? string shown after a run that failed, timed out or was cancelled, until `:Slipway runs`
---@field preserved? string put before the count of dirty preserved worktrees
---@field needs_input? string shown for a run that ended asking, until replied (`SlipwayNeedsInput` with `statusline({ highlight = true })`)

---@class slipway.Opts
---@field cmd? string[] the sidecar command line (default `{ 'slipway', 'lsp' }`)
---@field open? slipway.OpenHow how `:Slipway open` opens a worktree (default `tab`)
---@field open_after_new? boolean open a worktree right after `:Slipway new` creates it (default true)
---@field agent? slipway.AgentSpec the agent of `handoff`, `run` and `agent` (no default)
---@field sandbox? slipway.SandboxSpec where unattended runs happen (default: the workspace's or the repository's `slipway.toml`, else `{ type = 'none' }`)
---@field terminal? slipway.TerminalHow where `:Slipway agent` opens its terminal (default `vsplit`)
---@field copy? string[] globs copied from the host into each new worktree
---@field source? string|table source policy of `new` and `run` (`default`, `named:REF`, …); nil asks each time
---@field statusline? slipway.StatuslineOpts symbols of `require('slipway').statusline()`
---@field notify_run_finished? boolean `vim.notify` a summary when a run ends (default true)

local M = {}

---@type slipway.Opts
M.defaults = {
  cmd = { 'slipway', 'lsp' },
  open = 'tab',
  open_after_new = true,
  agent = nil,
  sandbox = nil,
  terminal = 'vsplit',
  copy = {},
  statusline = {
    icon = '⎇ ',
    dirty = '*',
    running = ' ⟳',
    done = ' ✓',
    failed = ' ✗',
    needs_input = ' ?',
    preserved = ' ⚠',
  },
  notify_run_finished = true,
}

---@type slipway.Opts
local from_setup = {}

--- Records the options given to `require('slipway').setup()`.
---@param opts slipway.Opts?
function M.set(opts)
  vim.validate('opts', opts, 'table', true)
  from_setup = vim.deepcopy(opts or {})
end

--- The effective options: defaults, then `vim.g.slipway`, then `setup()`.
---@return slipway.Opts
function M.get()
  local g = vim.g.slipway
  if type(g) ~= 'table' then
    g = {}
  end
  local merged = vim.tbl_deep_extend('force', {}, M.defaults, g, from_setup)
  -- Lists replace, they do not merge element by element.
  for _, key in ipairs({ 'cmd', 'copy' }) do
    if from_setup[key] ~= nil then
      merged[key] = from_setup[key]
    elseif g[key] ~= nil then
      merged[key] = g[key]
    end
  end
  if type(merged.cmd) == 'string' then
    merged.cmd = { merged.cmd, 'lsp' }
  end
  return merged
end

--- The sidecar command line.
---@return string[]
function M.cmd()
  return M.get().cmd
end

--- Whether the sidecar binary can be executed, and a message saying how to fix it when not.
---@return boolean ok
---@return string? message
function M.check_binary()
  local cmd = M.cmd()
  local exe = cmd and cmd[1]
  if type(exe) == 'string' and exe ~= '' and vim.fn.executable(exe) == 1 then
    return true
  end
  return false, M.missing_message(cmd)
end

--- The message for a sidecar command that cannot be executed.
---@param cmd any
---@return string
function M.missing_message(cmd)
  return ('slipway: the slipway binary was not found (cmd = %s). '):format(vim.inspect(cmd))
    .. 'Install it (`cargo install --path .` in the slipway repository) '
    .. "or point the plugin at it: vim.g.slipway = { cmd = { '/path/to/slipway', 'lsp' } }"
end

return M
