-- A dirty preserved worktree: its files show in vim.diagnostic.get(), in
-- `:Slipway problems`, and disappear after `:Slipway close` with force.
local H = require('harness')

H.test('a dirty preserved worktree shows in vim.diagnostic.get() until closed with force', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created =
    H.slipway('new', { strategy = 'branch', branch = 'diag/dirty', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  local wt = vim.uv.fs_realpath(created.path)
  H.write(wt .. '/README.md', 'edited by hand\n')
  H.write(wt .. '/scratch.txt', 'untracked\n')

  -- First close: the sidecar preserves it; the plugin shows what would be lost, then offers force.
  H.script_select({
    { kind = 'slipway.worktree', choose = 'diag/dirty' },
    { kind = 'slipway.close', choose = 'keep' },
  })
  vim.cmd('Slipway close')
  local kept = H.wait_note('kept ' .. created.path)
  local warning = H.find_note('diag/dirty was kept')
  H.ok(warning, 'a warning says the worktree was kept: ' .. H.debug_state())
  H.eq(warning.level, vim.log.levels.WARN, 'a warning')
  H.contains(warning.msg, '2 uncommitted paths would be lost', 'the count')
  H.contains(warning.msg, 'README.md', 'the modified file')
  H.contains(warning.msg, 'scratch.txt', 'the untracked file')
  H.contains(warning.msg, ':Slipway close diag/dirty (loses its work)', 'how to discard, in editor terms')
  H.not_contains(warning.msg, 'git worktree remove', 'no git command to discard')
  H.ok(warning.seq < kept.seq, 'shown before the answer')
  local offer = H.picker('slipway.close')
  H.contains(offer.items[2], 'Force close: discard 2 uncommitted paths', 'force is offered with the count')
  local shown_at, offered_at
  for i, e in ipairs(H.events) do
    if e:find('diag/dirty was kept', 1, true) then
      shown_at = shown_at or i
    end
    if e:find('select: slipway: discard', 1, true) then
      offered_at = offered_at or i
    end
  end
  H.ok(shown_at and offered_at and shown_at < offered_at, 'what would be lost is shown before force is offered')
  H.ok(H.exists(wt .. '/scratch.txt'), 'nothing was lost')

  -- The sidecar publishes one warning per changed file; Neovim holds them.
  local diags = H.wait(function()
    local d = H.slipway_diagnostics()
    return #d == 2 and d
  end, 'two slipway diagnostics')
  local files = {}
  for _, d in ipairs(diags) do
    H.eq(d.code, 'dirty-preserved-worktree', 'code')
    H.eq(d.severity, vim.diagnostic.severity.WARN, 'severity')
    H.contains(d.message, wt, 'the message names the worktree')
    H.contains(d.message, ':Slipway close diag/dirty (loses its work)', 'the message says how, in editor terms')
    H.not_contains(d.message, 'git worktree', 'no git command around slipway')
    H.not_contains(d.message, 'git worktree remove', 'no git command in the message')
    files[#files + 1] = vim.api.nvim_buf_get_name(d.bufnr)
  end
  table.sort(files)
  H.eq(files, { wt .. '/README.md', wt .. '/scratch.txt' }, 'the files')
  H.wait(function()
    return require('slipway').statusline() == '⚠1'
  end, 'the status line counts the dirty preserved worktree')

  -- :Slipway problems puts them in the quickfix list.
  vim.cmd('Slipway problems')
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  H.eq(qf.title, 'slipway problems', 'quickfix title')
  H.eq(#qf.items, 2, 'two quickfix items')
  vim.cmd('cclose')

  -- Second close: force.
  H.script_select({
    { kind = 'slipway.worktree', choose = 'diag/dirty' },
    { kind = 'slipway.close', choose = 'force' },
  })
  vim.cmd('Slipway close')
  H.wait_note('closed diag/dirty: worktree removed')
  H.ok(not H.exists(wt), 'the worktree is gone')
  H.wait(function()
    return #H.slipway_diagnostics() == 0
  end, 'the diagnostics disappear')
  H.wait(function()
    return require('slipway').statusline() == ''
  end, 'the status line clears')
  H.slipway('problems')
  H.wait_note('no slipway problems')
end)

H.test('closing a clean worktree removes it at once and moves tabs out of it', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'diag/clean', source = 'host_head' })
  H.ok(ok, 'created')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd()), vim.uv.fs_realpath(created.path), 'opened in a tab')
  -- In the worktree, the picker offers it first.
  H.script_select({
    {
      kind = 'slipway.worktree',
      choose = function(_, text)
        return text:find('diag/clean', 1, true) ~= nil
      end,
    },
  })
  H.slipway('close')
  H.wait_note('closed diag/clean: worktree removed')
  H.ok(not H.exists(created.path), 'removed')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd()), vim.uv.fs_realpath(repo), 'the tab moved back to the host root')
end)
