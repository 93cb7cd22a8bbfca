-- A stand-in sidecar for protocol-mismatch tests, run as `nvim -l fake_sidecar.lua`:
-- LSP framing on stdio, `initialize` answers protocol 99, every command fails.
local function send(msg)
  local body = vim.json.encode(msg)
  io.stdout:write(('Content-Length: %d\r\n\r\n%s'):format(#body, body))
  io.stdout:flush()
end

while true do
  local length
  while true do
    local line = io.stdin:read('*l')
    if not line then
      os.exit(0)
    end
    line = line:gsub('\r$', '')
    if line == '' then
      break
    end
    length = tonumber(line:match('^Content%-Length: (%d+)')) or length
  end
  local msg = vim.json.decode(io.stdin:read(length))
  if msg.method == 'initialize' then
    send({
      jsonrpc = '2.0',
      id = msg.id,
      result = {
        capabilities = {
          executeCommandProvider = { commands = { 'slipway.list', 'slipway.status' } },
          experimental = { slipwayProtocol = 99 },
        },
        serverInfo = { name = 'slipway', version = '9.9.9' },
      },
    })
  elseif msg.method == 'shutdown' then
    send({ jsonrpc = '2.0', id = msg.id, result = vim.NIL })
  elseif msg.method == 'exit' then
    os.exit(0)
  elseif msg.id and msg.method then
    send({
      jsonrpc = '2.0',
      id = msg.id,
      error = { code = -32001, message = 'the fake sidecar does nothing', data = { kind = 'fake' } },
    })
  end
end
