-- `:checkhealth slipway`, a missing binary, and starting through
-- `vim.lsp.enable('slipway')` / `setup()`.
local H = require('harness')

--- Runs `:checkhealth slipway` and returns the report's text.
local function checkhealth()
  vim.cmd('checkhealth slipway')
  local buf = H.wait(function()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.bo[b].filetype == 'checkhealth' then
        local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
        if text:find('slipway: agents', 1, true) then
          return b
        end
      end
    end
  end, 'the checkhealth report')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  vim.cmd('silent! bwipeout! ' .. buf)
  return text
end

H.test(':checkhealth slipway reports the binary version and the protocol', function()
  local version = vim.trim(H.system({ vim.env.SLIPWAY_BIN, '--version' }).stdout)
  H.ok(version:match('^slipway %d+%.%d+%.%d+'), 'slipway --version prints slipway X.Y.Z: ' .. version)
  local report = checkhealth()
  H.contains(report, 'OK version: ' .. version, 'the version')
  H.contains(report, 'OK protocol version 1 agreed', 'the protocol')
  H.contains(report, vim.env.SLIPWAY_BIN, 'the binary path')
  H.contains(report, 'OK git version', 'git')
  H.ok(report:find('Docker daemon', 1, true) or report:find('docker CLI not found', 1, true), 'docker checked')
  H.not_contains(report, 'ERROR', 'no errors')
  H.contains(report, 'claude-code:', 'agent CLIs are looked for')
end)

H.test('a missing binary is a clear message, not a stack trace', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local missing = vim.fs.dirname(repo) .. '/no/such/slipway'
  vim.g.slipway = { cmd = { missing, 'lsp' } }

  -- A command.
  local ran, err = pcall(vim.cmd, 'Slipway list')
  H.ok(ran, 'the command raised no Vim error: ' .. tostring(err))
  local note = H.wait_note('binary was not found')
  H.eq(note.level, vim.log.levels.ERROR, 'an error')
  H.contains(note.msg, missing, 'names the command it tried')
  H.contains(note.msg, 'vim.g.slipway', 'says how to fix it')
  H.not_contains(note.msg, 'traceback', 'no stack trace')
  H.not_contains(note.msg, '.lua:', 'no Lua location')
  H.eq(#vim.lsp.get_clients({ name = 'slipway' }), 0, 'no client')

  -- vim.lsp.enable: one clear message, no client, no error.
  local before = #H.notes
  vim.lsp.enable('slipway')
  vim.cmd.edit(repo .. '/README.md')
  vim.cmd.edit(repo .. '/other.txt')
  local enabled_note = H.wait(function()
    return H.find_note('binary was not found', before)
  end, 'a message from vim.lsp.enable')
  H.not_contains(enabled_note.msg, 'traceback', 'no stack trace')
  -- Both buffers' attempts have run their course once the event loop has.
  H.settle()
  local count = 0
  for i = before + 1, #H.notes do
    if H.notes[i].msg:find('binary was not found', 1, true) then
      count = count + 1
    end
  end
  H.eq(count, 1, 'said once')
  H.eq(#vim.lsp.get_clients({ name = 'slipway' }), 0, 'no client')
  vim.lsp.enable('slipway', false)

  -- :checkhealth says it as an error with advice.
  local report = checkhealth()
  H.contains(report, 'ERROR slipway: the slipway binary was not found', 'checkhealth error')
  H.contains(report, 'cargo install', 'advice')
  -- The statusline stays quiet.
  H.eq(require('slipway').statusline(), '', 'empty status line')
end)

H.test('vim.lsp.enable starts one sidecar per repository; buffers in worktrees share it', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created =
    H.slipway('new', { strategy = 'branch', branch = 'enable/one', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  H.stop_clients()
  H.eq(#vim.lsp.get_clients({ name = 'slipway' }), 0, 'stopped')
  require('slipway.status').by_client = {}

  vim.lsp.enable('slipway')
  vim.cmd.edit(created.path .. '/README.md')
  local client = H.wait(function()
    return vim.lsp.get_clients({ name = 'slipway', bufnr = 0 })[1]
  end, 'a client attached to the worktree buffer')
  H.eq(vim.uv.fs_realpath(client.root_dir), vim.uv.fs_realpath(repo), 'rooted at the host repository')
  vim.cmd.edit(repo .. '/README.md')
  H.wait(function()
    return #vim.lsp.get_clients({ name = 'slipway', bufnr = 0 }) == 1
  end, 'the host buffer attached too')
  H.eq(#vim.lsp.get_clients({ name = 'slipway' }), 1, 'one sidecar for host and worktree')

  -- The status line is fed without any command.
  vim.cmd.edit(created.path .. '/README.md')
  H.wait(function()
    return require('slipway').statusline() == '⎇ enable/one'
  end, 'status line of the worktree buffer')
  vim.cmd('silent! %bwipeout!')
  vim.lsp.enable('slipway', false)
end)

H.test('setup() options win over vim.g.slipway', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  vim.g.slipway = { cmd = { '/nowhere/slipway', 'lsp' }, open = 'cd' }
  require('slipway').setup({ cmd = { vim.env.SLIPWAY_BIN, 'lsp' } })
  local cfg = require('slipway.config').get()
  H.eq(cfg.cmd, { vim.env.SLIPWAY_BIN, 'lsp' }, 'cmd from setup')
  H.eq(cfg.open, 'cd', 'open from vim.g.slipway')
  local ok, list = H.slipway('list')
  H.ok(ok, 'list works with the cmd from setup')
  H.eq(#list, 0, 'no worktrees')
end)

H.test('a sidecar speaking another protocol version is reported', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local fake = vim.api.nvim_get_runtime_file('lua/slipway/init.lua', false)[1]
  fake = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(fake)))))
    .. '/tests/nvim/fake_sidecar.lua'
  H.ok(H.exists(fake), fake)
  vim.g.slipway = { cmd = { vim.v.progpath, '-l', fake } }

  local report = checkhealth()
  H.contains(report, 'protocol version mismatch: the sidecar speaks 99, this plugin speaks 1', 'checkhealth')

  local ok = H.slipway('list')
  H.ok(not ok, 'the fake answers every command with an error')
  local warning = H.wait_note('the sidecar speaks protocol 99')
  H.eq(warning.level, vim.log.levels.WARN, 'a warning')
  local err = H.wait_note('the fake sidecar does nothing')
  H.eq(err.level, vim.log.levels.ERROR, 'the error of the command')
end)
