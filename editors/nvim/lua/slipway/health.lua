--- `:checkhealth slipway`: the binary and its version, the protocol version,
--- git, the Docker daemon (a warning when absent), agent CLIs.

local M = {}

local health = vim.health

---@param argv string[]
---@param timeout_ms? integer
---@param stdin? string
---@param binary? boolean keep stdout's bytes as they are (no CRLF folding)
---@return integer code
---@return string stdout
---@return string stderr
local function run(argv, timeout_ms, stdin, binary)
  local ok, proc = pcall(vim.system, argv, { text = not binary, stdin = stdin })
  if not ok then
    return -1, '', tostring(proc)
  end
  local res = proc:wait(timeout_ms or 5000)
  if res.signal and res.signal ~= 0 and res.code == 0 then
    return -2, res.stdout or '', 'timed out'
  end
  return res.code, res.stdout or '', res.stderr or ''
end

---@param value table
---@return string
local function frame(value)
  local body = vim.json.encode(value)
  return ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
end

--- Starts the sidecar once, sends `initialize` and `shutdown`, closes its input, and
--- returns the `initialize` result.
---@param cmd string[]
---@return table? result
---@return string? error
function M.probe(cmd)
  local input = table.concat({
    frame({
      jsonrpc = '2.0',
      id = 1,
      method = 'initialize',
      params = { processId = vim.NIL, rootUri = vim.NIL, capabilities = vim.empty_dict() },
    }),
    -- No `exit` in the same write: it would cancel the pending `initialize`.
    -- End of input stops the sidecar.
    frame({ jsonrpc = '2.0', id = 2, method = 'shutdown', params = vim.NIL }),
  })
  local code, out, err = run(cmd, 10000, input, true)
  local pos = 1
  while true do
    local s, e, len = out:find('Content%-Length: (%d+)\r\n\r\n', pos)
    if not s then
      break
    end
    local body = out:sub(e + 1, e + tonumber(len))
    pos = e + tonumber(len) + 1
    local ok, msg = pcall(vim.json.decode, body)
    if ok and type(msg) == 'table' and msg.id == 1 then
      if msg.result then
        return msg.result
      end
      return nil, vim.inspect(msg.error)
    end
  end
  return nil, ('no initialize answer (exit %d): %s'):format(code, vim.trim(err))
end

local agent_clis = {
  { 'claude-code', 'claude' },
  { 'codex', 'codex' },
  { 'opencode', 'opencode' },
  { 'pi', 'pi' },
  { 'cursor', 'cursor-agent' },
  { 'copilot', 'copilot' },
}

--- The `:checkhealth slipway` report.
function M.check()
  local config = require('slipway.config')
  local opts = config.get()
  local cmd = opts.cmd

  health.start('slipway: binary')
  local found = type(cmd) == 'table' and type(cmd[1]) == 'string' and vim.fn.executable(cmd[1]) == 1
  if not found then
    local _, message = config.check_binary()
    health.error(message or 'the slipway binary was not found', {
      'Build and install it: `cargo install --path .` in the slipway repository',
      "Or set the path: vim.g.slipway = { cmd = { '/path/to/slipway', 'lsp' } }",
    })
  else
    health.ok(('binary: %s (cmd = %s)'):format(vim.fn.exepath(cmd[1]), table.concat(cmd, ' ')))
    local code, out, err = run({ cmd[1], '--version' })
    local version = vim.trim(out)
    if code == 0 and version ~= '' then
      health.ok('version: ' .. version)
    else
      health.error(('`%s --version` failed (exit %d): %s'):format(cmd[1], code, vim.trim(err)))
    end

    local want = require('slipway.lsp').PROTOCOL_VERSION
    local result, perr = M.probe(cmd)
    if not result then
      health.error('the sidecar did not answer initialize: ' .. tostring(perr))
    else
      local caps = result.capabilities or {}
      local got = caps.experimental and caps.experimental.slipwayProtocol
      local info = result.serverInfo or {}
      if got == want then
        health.ok(('protocol version %d agreed (server %s %s)'):format(want, info.name or '?', info.version or '?'))
      else
        health.error(
          ('protocol version mismatch: the sidecar speaks %s, this plugin speaks %d'):format(tostring(got), want),
          { 'Update the plugin and the binary together.' }
        )
      end
      local commands = caps.executeCommandProvider and caps.executeCommandProvider.commands or {}
      health.info(('%d commands: %s'):format(#commands, table.concat(commands, ', ')))
    end
    local clients = vim.lsp.get_clients({ name = 'slipway' })
    health.info(('%d sidecar client%s running in this editor'):format(#clients, #clients == 1 and '' or 's'))
  end

  health.start('slipway: tools')
  if vim.fn.executable('git') == 1 then
    local _, out = run({ 'git', '--version' })
    health.ok(vim.trim(out))
  else
    health.error('git not found on PATH', { 'Install git: slipway and its tests use it.' })
  end
  if vim.fn.executable('docker') == 1 then
    local code, out, err = run({ 'docker', 'info', '--format', '{{.ServerVersion}}' }, 8000)
    if code == 0 and vim.trim(out) ~= '' then
      health.ok('Docker daemon reachable (server ' .. vim.trim(out) .. ')')
    else
      health.warn(
        'Docker daemon not reachable: ' .. vim.trim(err ~= '' and err or out),
        { 'The docker sandboxes need a running daemon; the sandbox `none` works without it.' }
      )
    end
  else
    health.warn('docker CLI not found: the docker sandboxes are unavailable (sandbox `none` works)')
  end

  health.start('slipway: agents')
  local agent = opts.agent
  if type(agent) ~= 'table' or not agent.type then
    health.warn('no agent configured (vim.g.slipway.agent): handoff, run and agent need one', {
      "vim.g.slipway = { agent = { type = 'claude-code' } }",
      "vim.g.slipway = { agent = { type = 'command', command = { 'my-agent' } } }",
    })
  elseif agent.type == 'command' then
    local program = type(agent.command) == 'table' and agent.command[1]
    if program and vim.fn.executable(program) == 1 then
      health.ok('configured agent: command ' .. table.concat(agent.command, ' '))
    else
      health.warn('configured agent: command ' .. tostring(program) .. ' is not executable')
    end
  else
    health.info('configured agent: ' .. agent.type)
  end
  for _, pair in ipairs(agent_clis) do
    local name, exe = pair[1], pair[2]
    if vim.fn.executable(exe) == 1 then
      health.ok(('%s: %s'):format(name, vim.fn.exepath(exe)))
    elseif type(agent) == 'table' and agent.type == name then
      health.warn(('%s: `%s` not found on PATH, but it is the configured agent'):format(name, exe))
    else
      health.info(('%s: `%s` not found'):format(name, exe))
    end
  end
end

return M
