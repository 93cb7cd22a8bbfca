-- `:Slipway agent`: the agent's interactive command in a terminal in the current worktree.
local H = require('harness')

H.test('agent opens the interactive command in a terminal in the current worktree', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  local marker = dir .. '/marker'
  local script = H.script(dir .. '/interactive.sh', ('pwd > %q\necho ready\nsleep 30\n'):format(marker)) -- allow-sleep: the interactive agent stays up while the test looks at its terminal
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = { 'sh', script } } })
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'agent/interactive', source = 'host_head' })
  H.ok(ok, 'created')
  local windows = #vim.api.nvim_tabpage_list_wins(0)
  local started
  ok, started = H.slipway('agent')
  H.ok(ok, 'agent started: ' .. H.debug_state())
  H.eq(started.argv, { 'sh', script }, 'the command line the sidecar gave')
  H.eq(#vim.api.nvim_tabpage_list_wins(0), windows + 1, 'a new window')
  H.eq(vim.bo.buftype, 'terminal', 'a terminal buffer')
  H.wait(function()
    return H.exists(marker)
  end, 'the agent ran')
  local fd = assert(io.open(marker))
  local cwd = vim.trim(fd:read('*a'))
  fd:close()
  H.eq(vim.uv.fs_realpath(cwd), vim.uv.fs_realpath(created.path), 'it runs in the worktree')
  vim.fn.jobstop(started.job)
end)
