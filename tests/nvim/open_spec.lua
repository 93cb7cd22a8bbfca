-- `:Slipway open` and `:Slipway list`.
local H = require('harness')

local function create(repo, branch)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = branch, source = 'host_head', open = 'false' })
  H.ok(ok, 'created ' .. branch .. ': ' .. H.debug_state())
  return created
end

H.test('open sets the tab cwd (a new tab with :tcd by default)', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local one = create(repo, 'open/one')
  local two = create(repo, 'open/two')
  H.eq(vim.fn.tabpagenr('$'), 1, 'nothing opened yet')

  H.script_select({ { kind = 'slipway.worktree', choose = 'open/two' } })
  vim.cmd('Slipway open')
  H.wait(function()
    return vim.fn.tabpagenr('$') == 2
  end, 'a new tab')
  local picker = H.picker('slipway.worktree')
  H.eq(#picker.items, 2, 'both worktrees offered')
  H.eq(vim.fn.tabpagenr(), 2, 'the new tab is current')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd(-1, 0)), vim.uv.fs_realpath(two.path), 'the tab cwd is the worktree')
  H.eq(vim.fn.haslocaldir(-1, 0), 1, 'a tab-local directory (:tcd)')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd(-1, -1)), vim.uv.fs_realpath(repo), 'the global cwd did not move')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd(-1, 1)), vim.uv.fs_realpath(repo), 'the first tab did not move')

  -- The status line of the opened tab names the worktree's branch.
  H.wait(function()
    return require('slipway').statusline() == '⎇ open/two'
  end, 'the status line of the worktree')

  -- By option: the current window (:lcd), then the whole editor (:cd).
  vim.cmd('tabfirst')
  H.slipway('open', { worktree = 'open/one', how = 'window' })
  H.eq(vim.fn.tabpagenr('$'), 2, 'no new tab')
  H.eq(vim.fn.haslocaldir(), 1, 'a window-local directory (:lcd)')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd()), vim.uv.fs_realpath(one.path), 'window cwd')
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { open = 'cd' })
  vim.cmd('tabnew')
  H.slipway('open', { worktree = 'open/one' })
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd(-1, -1)), vim.uv.fs_realpath(one.path), 'global cwd (:cd)')
end)

H.test('list shows every worktree with its state', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local one = create(repo, 'list/one')
  create(repo, 'list/two')
  H.write(one.path .. '/README.md', 'changed\n')
  local ok, list = H.slipway('list')
  H.ok(ok, 'list succeeded')
  H.eq(#list, 2, 'two worktrees')
  -- Every row is shown: a buffer, not a message that shows its first line.
  local buf = vim.fn.bufnr('slipway://list')
  H.ok(buf > 0 and vim.fn.bufwinid(buf) ~= -1, 'the list is in a window')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  H.contains(text, '2 worktrees in ' .. repo, 'the count')
  H.contains(text, 'list/one  active  1 changed', 'dirty count')
  H.contains(text, 'list/two  active', 'second worktree')
end)
