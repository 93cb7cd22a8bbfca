--- The sidecar as a Neovim LSP client: its `vim.lsp.Config`, the handlers of
--- its notifications, and `exec()` for its commands.

local config = require('slipway.config')
local util = require('slipway.util')

local M = {}

--- The protocol version this plugin speaks (`experimental.slipwayProtocol` of `initialize`).
M.PROTOCOL_VERSION = 1

--- The client name.
M.NAME = 'slipway'

local warned_missing = false
local warned_protocol = {} ---@type table<integer, boolean>

--- Notifies once that the binary is missing.
---@param message string
local function warn_missing_once(message)
  if warned_missing then
    return
  end
  warned_missing = true
  vim.schedule(function()
    util.notify((message:gsub('^slipway: ', '')), vim.log.levels.ERROR)
  end)
end

--- `root_dir` of the config: the host repository of the buffer, so that a
--- buffer in a worktree is served by its host repository's sidecar.
---@param bufnr integer
---@param on_dir fun(root: string)
local function root_dir(bufnr, on_dir)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return
  end
  local root = util.repo_root(name)
  if root then
    on_dir(root)
  end
end

--- Called on `FileType` while `vim.lsp.enable('slipway')` is on: Neovim skips
--- a config whose binary is missing without a word (only its log says so), so
--- say it once, clearly.
---@param bufnr integer
function M.check_enabled(bufnr)
  if warned_missing or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or not util.repo_root(name) then
    return
  end
  local ok, resolved = pcall(function()
    return vim.lsp.config[M.NAME]
  end)
  local cmd = ok and resolved and resolved.cmd
  if type(cmd) ~= 'table' then
    return
  end
  if type(cmd[1]) ~= 'string' or vim.fn.executable(cmd[1]) == 0 then
    warn_missing_once(config.missing_message(cmd))
  end
end

--- Warns once per client when the sidecar speaks another protocol version.
---@param client vim.lsp.Client
---@param result? lsp.InitializeResult
local function check_protocol(client, result)
  local caps = client.server_capabilities or (result and result.capabilities) or {}
  local version = caps.experimental and caps.experimental.slipwayProtocol
  if version ~= M.PROTOCOL_VERSION and not warned_protocol[client.id] then
    warned_protocol[client.id] = true
    util.notify(
      ('the sidecar speaks protocol %s; this plugin speaks %d. Update the plugin and the binary together.'):format(
        tostring(version),
        M.PROTOCOL_VERSION
      ),
      vim.log.levels.WARN
    )
  end
end

--- The sidecar's diagnostics as the plugin shows them: none for a worktree
--- the user works in (`status.is_yours`: a handoff leaves it "preserved", which
--- is no problem of theirs), and `:Slipway close …` instead of git commands.
---@param params lsp.PublishDiagnosticsParams
---@return lsp.PublishDiagnosticsParams
function M.filter_diagnostics(params)
  if type(params) ~= 'table' or type(params.diagnostics) ~= 'table' then
    return params
  end
  local status = require('slipway.status')
  local kept = {}
  local file = type(params.uri) == 'string' and vim.uri_to_fname(params.uri) or nil
  local worktree = file and select(2, status.lookup(util.realpath(file))) or nil
  for _, d in ipairs(params.diagnostics) do
    if d.code == 'dirty-preserved-worktree' and worktree and status.is_yours(worktree.path) then
      -- dropped: the user's own worktree
    else
      -- What to do, in this editor's words (the sidecar sends it as actions).
      local next_line = type(d.data) == 'table' and util.actions_text(d.data.actions)
      if next_line then
        d.message = d.message .. '; ' .. next_line
      end
      kept[#kept + 1] = d
    end
  end
  params.diagnostics = kept
  return params
end

--- Handlers of the sidecar's notifications.
---@return table<string, lsp.Handler>
function M.handlers()
  return {
    ['slipway/status'] = function(_, params, ctx)
      require('slipway.status').on_status(ctx.client_id, params)
    end,
    ['slipway/runFinished'] = function(_, params, ctx)
      require('slipway.runs').on_finished(ctx.client_id, params)
    end,
    ['slipway/runActivity'] = function(_, params, ctx)
      require('slipway.activity').on_activity(ctx.client_id, params)
    end,
    ['slipway/log'] = function(_, params, ctx)
      require('slipway.log').on_log(ctx.client_id, params)
    end,
    ['textDocument/publishDiagnostics'] = function(err, params, ctx)
      return vim.lsp.diagnostic.on_publish_diagnostics(err, M.filter_diagnostics(params), ctx)
    end,
  }
end

--- The `vim.lsp.Config` of the sidecar (what `lsp/slipway.lua` returns).
---@return vim.lsp.Config
function M.config()
  return {
    name = M.NAME,
    cmd = config.cmd(),
    root_markers = { '.git' },
    root_dir = root_dir,
    handlers = M.handlers(),
    -- The plugin says which run ends it has shown (`slipway.seen`), so one
    -- that ends while Neovim is closed, or as it quits, is told at its next start.
    init_options = { confirmsSeen = true },
    on_init = check_protocol,
    on_exit = function(_, _, client_id)
      vim.schedule(function()
        require('slipway.status').forget(client_id)
      end)
    end,
  }
end

-- Handlers also live in the global table so that a client configured without
-- them (a user's `vim.lsp.config` replacing `handlers`) still feeds the cache.
for method, handler in pairs(M.handlers()) do
  if vim.startswith(method, 'slipway/') then
    vim.lsp.handlers[method] = vim.lsp.handlers[method] or handler
  end
end

--- The running slipway client serving `root`, if any.
---@param root string
---@return vim.lsp.Client?
function M.client_for(root)
  for _, client in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    if not client:is_stopped() then
      if client.root_dir and util.realpath(client.root_dir) == root then
        return client
      end
      for _, folder in ipairs(client.workspace_folders or {}) do
        if util.realpath(vim.uri_to_fname(folder.uri)) == root then
          return client
        end
      end
    end
  end
  return nil
end

--- The client serving `root`, started when there is none. Errors carry a clear message.
---@param root string the host repository root
---@return vim.lsp.Client? client
---@return string? error
function M.ensure(root)
  local existing = M.client_for(root)
  if existing then
    return existing
  end
  local ok, message = config.check_binary()
  if not ok then
    return nil, message
  end
  -- Start from the resolved `vim.lsp.config.slipway` (lsp/slipway.lua plus the
  -- user's overrides) when there is one; the binary is always the plugin's `cmd`.
  local resolved = vim.lsp.config and vim.lsp.config[M.NAME]
  local cfg = vim.deepcopy(resolved or M.config())
  cfg.name = M.NAME
  cfg.cmd = config.cmd()
  cfg.root_dir = root
  cfg.root_markers = nil
  cfg.workspace_folders = nil
  local start_ok, id = pcall(vim.lsp.start, cfg, { attach = false, silent = true })
  if not start_ok or not id then
    return nil,
      ('slipway: could not start the sidecar %s: %s'):format(
        vim.inspect(cfg.cmd),
        start_ok and 'see :LspLog' or tostring(id)
      )
  end
  return vim.lsp.get_client_by_id(id)
end

--- Calls back once `client` has finished `initialize` (at once when it has).
---@param client vim.lsp.Client
---@param cb fun(err: string?)
---@param timeout_ms? integer
local function when_ready(client, cb, timeout_ms)
  if client.initialized then
    return cb()
  end
  local deadline = vim.uv.now() + (timeout_ms or 20000)
  local timer = assert(vim.uv.new_timer())
  timer:start(
    10,
    20,
    vim.schedule_wrap(function()
      if timer:is_closing() then
        return
      end
      if client.initialized then
        timer:close()
        cb()
      elseif client:is_stopped() or vim.uv.now() > deadline then
        timer:close()
        cb('slipway: the sidecar did not start (see :LspLog)')
      end
    end)
  )
end

---@class slipway.RpcError
---@field code integer
---@field message string
---@field data? { kind: string, choices?: slipway.Branch[], mounts?: { dst: string, choices: slipway.Branch[] }[], worktreePath?: string }

--- Runs a sidecar command for the repository at `root`.
--- `cb(err, result)`: `err` is the JSON-RPC error (with `data.kind`) or `{ message = … }`.
---@param root string
---@param command string e.g. `slipway.list`
---@param args table the single object argument
---@param cb fun(err: slipway.RpcError?, result: any)
function M.exec(root, command, args, cb)
  local client, err = M.ensure(root)
  if not client then
    return cb({ code = -1, message = err or 'no sidecar', data = { kind = 'noSidecar' } })
  end
  when_ready(client, function(ready_err)
    if ready_err then
      return cb({ code = -1, message = ready_err, data = { kind = 'noSidecar' } })
    end
    local provider = client.server_capabilities and client.server_capabilities.executeCommandProvider
    local offered = type(provider) == 'table' and provider.commands or {}
    if not vim.list_contains(offered, command) then
      return cb({
        code = -1,
        message = ('the sidecar does not offer %s (offered: %s); update the binary and the plugin together'):format(
          command,
          table.concat(offered, ', ')
        ),
        data = { kind = 'unknownCommand' },
      })
    end
    client:exec_cmd({ title = command, command = command, arguments = { args } }, { bufnr = 0 }, function(e, result)
      if e then
        return cb({ code = e.code, message = e.message, data = e.data })
      end
      cb(nil, result)
    end)
  end)
end

--- The names the sidecar serving `root` accepts for `kind` (`agents`,
--- `sandboxes`, `policies`, `strategies`, `landModes`), from its `initialize`
--- answer (`capabilities.experimental.slipway`): the plugin keeps no lists. In a flow.
---@param root string
---@param kind string
---@return string[]
function M.names(root, kind)
  local async = require('slipway.async')
  local client, err = M.ensure(root)
  if not client then
    async.fail(err or 'no sidecar')
  end
  local ready_err = async.await(function(cb)
    when_ready(client, cb)
  end)
  if ready_err then
    async.fail(ready_err)
  end
  local caps = client.server_capabilities or {}
  local names = caps.experimental and caps.experimental.slipway and caps.experimental.slipway[kind]
  if type(names) ~= 'table' then
    async.fail(('the sidecar does not say which %s it accepts; update the binary and the plugin together'):format(kind))
  end
  return names
end

--- What `names` gives, from any running slipway client, without waiting (for completion).
---@param kind string
---@return string[]
function M.known_names(kind)
  for _, client in ipairs(vim.lsp.get_clients({ name = M.NAME })) do
    local caps = client.server_capabilities or {}
    local names = caps.experimental and caps.experimental.slipway and caps.experimental.slipway[kind]
    if type(names) == 'table' then
      return names
    end
  end
  return {}
end

--- `exec` inside a flow (see `slipway.async`); returns `result` or `nil, err`.
---@param root string
---@param command string
---@param args table
---@return any result
---@return slipway.RpcError? err
function M.call(root, command, args)
  local err, result = require('slipway.async').await(function(cb)
    M.exec(root, command, args, cb)
  end)
  return result, err
end

--- What an error reads as, in a flow: a branch lock names the run holding it
--- (its id and agent, from `slipway.runs` or the status cache) and since when,
--- not a process id and seconds since the epoch.
---@param root string
---@param err slipway.RpcError
---@return string
function M.error_text(root, err)
  local msg = (err.message or vim.inspect(err)):gsub('^slipway: ', '')
  local data = type(err.data) == 'table' and err.data or {}
  if data.kind ~= 'branchInUse' then
    return msg
  end
  local holder = type(data.holder) == 'table' and data.holder or {}
  local branch = data.branch or holder.branch or '?'
  local run_id = holder.runId or data.runId
  local agent = holder.agent or data.agent
  if not run_id or not agent then
    local ok, listed = pcall(M.call, root, 'slipway.runs', { root = root })
    for _, r in ipairs(ok and type(listed) == 'table' and listed.runs or {}) do
      if not run_id and r.branch == branch and (r.status == 'running' or r.endedAt == nil or r.endedAt == vim.NIL) then
        run_id = r.runId
      end
      if r.runId == run_id and not agent then
        agent = type(r.agent) == 'table' and r.agent.type or r.agent
      end
    end
  end
  if not run_id then
    for _, r in ipairs(require('slipway.status').running_runs()) do
      if r.run.branch == branch then
        run_id = r.run.runId
      end
    end
  end
  local since = type(holder.time) == 'number' and os.date('%H:%M:%S', holder.time) or nil
  local who
  if run_id then
    who = 'run ' .. run_id .. ((agent and agent ~= vim.NIL) and (' (' .. tostring(agent) .. ')') or '')
  else
    who = 'another slipway command'
  end
  local text = ("branch '%s' is in use by %s%s; wait for it to end%s"):format(
    branch,
    who,
    since and (' since ' .. since) or '',
    run_id and (' or :Slipway cancel ' .. run_id) or ''
  )
  return text .. '\n' .. msg
end

--- Ends the flow with the text of `err` (see `error_text`).
---@param root string
---@param err slipway.RpcError
function M.fail(root, err)
  require('slipway.async').fail(M.error_text(root, err))
end

--- Like `call`, but an error ends the flow with the sidecar's message.
---@param root string
---@param command string
---@param args table
---@return any result
function M.must(root, command, args)
  local result, err = M.call(root, command, args)
  if err then
    M.fail(root, err)
  end
  return result
end

return M
