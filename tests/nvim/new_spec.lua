-- `:Slipway new` and `:Slipway branch`: pickers driven by scripted choosers,
-- worktrees checked on disk with the git CLI.
local H = require('harness')

--- The host's branch, HEAD commit and porcelain status.
local function host_state(repo)
  return {
    branch = H.git(repo, 'symbolic-ref', '--short', 'HEAD'),
    head = H.rev(repo, 'HEAD'),
    status = H.git(repo, 'status', '--porcelain', '--untracked-files=all'),
  }
end

H.test('new from a remote branch picked in the branch picker (named)', function()
  local r = H.repo_with_remote()
  vim.cmd.cd(r.repo)
  local before = host_state(r.repo)
  local remote_x = H.rev(r.repo, 'origin/feature/x')
  H.ok(remote_x ~= H.rev(r.repo, 'feature/x'), 'origin/feature/x differs from the local feature/x')

  -- The user's defaults: a named branch, started where the user picks. The
  -- sidecar asks for the name, then for the start point; nothing else is asked.
  H.user_config('version = 2\nstrategy = "branch"\nsource = "ask"\n')
  H.script_select({
    {
      kind = 'slipway.branch',
      choose = function(b)
        return b.name == 'origin/feature/x'
      end,
    },
  })
  H.script_input({ 'work/from-remote' })
  vim.cmd('Slipway new')
  H.wait_note('created worktree work/from-remote')
  H.user_config(nil)
  H.wait(function()
    return vim.fn.tabpagenr('$') == 2
  end, 'the new worktree opened in a tab')

  -- The picker: Local and Remote sections, HEAD and default marked, both feature/x shown.
  local picker = H.picker('slipway.branch')
  local text = table.concat(picker.items, '\n')
  H.contains(text, 'Local   main [HEAD', 'main is local and marked HEAD')
  H.contains(text, 'Local   feature/x', 'the local feature/x')
  H.contains(text, 'Remote  origin/feature/x', 'the remote origin/feature/x')
  H.contains(text, 'Remote  origin/main [default]', 'origin/main is the default')
  H.contains(text, 'remote feature x', 'subjects are shown')
  local first_remote
  for i, item in ipairs(picker.raw) do
    if item.kind == 'remote' and not first_remote then
      first_remote = i
    end
    if first_remote then
      H.eq(item.kind, 'remote', 'every local branch comes before the remote ones')
    end
  end

  -- The worktree exists at the remote branch's commit, under .slipway/worktrees.
  local list = vim.fn.systemlist({ 'git', '-C', r.repo, 'worktree', 'list', '--porcelain' })
  local wt
  for _, line in ipairs(list) do
    local p = line:match('^worktree (.+)$')
    if p and p:find('/.slipway/worktrees/', 1, true) then
      wt = p
    end
  end
  H.ok(wt, 'git lists a worktree under .slipway/worktrees: ' .. table.concat(list, ' | '))
  H.eq(H.rev(wt, 'HEAD'), remote_x, 'worktree HEAD is origin/feature/x')
  H.eq(H.git(wt, 'symbolic-ref', '--short', 'HEAD'), 'work/from-remote', 'worktree branch')
  H.ok(H.exists(wt .. '/remote-x.txt'), 'the remote branch file is there')
  H.ok(not H.exists(wt .. '/local-x.txt'), 'the local feature/x file is not')

  -- The host checkout is untouched.
  H.eq(host_state(r.repo), before, 'host branch, HEAD and status')
  -- The new tab's working directory is the worktree.
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd(-1, 2)), vim.uv.fs_realpath(wt), 'tab cwd')
end)

H.test('new with the ask policy: the sidecar asks, the branch picker answers', function()
  local r = H.repo_with_remote()
  vim.cmd.cd(r.repo)
  local before = host_state(r.repo)
  H.script_select({
    {
      kind = 'slipway.branch',
      choose = function(b)
        return b.name == 'origin/feature/x'
      end,
    },
  })
  local ok, created = H.slipway('new', { open = 'false', source = 'ask' })
  H.ok(ok, 'new succeeded: ' .. H.debug_state())
  local picker = H.picker('slipway.branch')
  H.contains(picker.prompt, 'start from', 'the picker says what it is for')
  local names = vim.tbl_map(function(b)
    return b.name
  end, picker.raw)
  H.ok(vim.tbl_contains(names, 'feature/x') and vim.tbl_contains(names, 'origin/feature/x'), 'both feature/x')
  H.eq(H.rev(created.path, 'HEAD'), H.rev(r.repo, 'origin/feature/x'), 'worktree HEAD')
  H.eq(created.baseCommit, H.rev(r.repo, 'origin/feature/x'), 'baseCommit')
  H.eq(host_state(r.repo), before, 'host untouched')
  H.eq(vim.fn.tabpagenr('$'), 1, 'open=false opens nothing')
end)

H.test('branch: the picker alone starts a worktree from the chosen branch', function()
  local r = H.repo_with_remote()
  vim.cmd.cd(r.repo)
  H.script_select({
    {
      kind = 'slipway.branch',
      choose = function(b)
        return b.name == 'feature/x' and b.kind == 'local'
      end,
    },
  })
  local ok, created = H.slipway('branch', { open = 'false', strategy = 'branch', branch = 'work/from-local' })
  H.ok(ok, 'branch succeeded')
  H.eq(H.rev(created.path, 'HEAD'), H.rev(r.repo, 'feature/x'), 'started from the local feature/x')
end)

H.test('a sidecar error is a notification, not a stack trace', function()
  local r = H.repo_with_remote()
  vim.cmd.cd(r.repo)
  -- `main` is checked out in the host: the sidecar refuses and says where.
  local ok = H.slipway('new', { strategy = 'branch', branch = 'main', source = 'host_head', open = 'false' })
  H.ok(not ok, 'the flow failed')
  local note = H.wait_note('main')
  H.eq(note.level, vim.log.levels.ERROR, 'an error notification')
  H.not_contains(note.msg, 'traceback', 'no stack trace')
  H.contains(note.msg, r.repo, 'it says where the branch is checked out')
end)

H.test(':Slipway completes subcommands and keys', function()
  local subs = vim.fn.getcompletion('Slipway ', 'cmdline')
  for _, s in ipairs({ 'new', 'branch', 'open', 'agent', 'handoff', 'run', 'list', 'close', 'cancel', 'problems' }) do
    H.ok(vim.tbl_contains(subs, s), s .. ' is completed: ' .. vim.inspect(subs))
  end
  local keys = vim.fn.getcompletion('Slipway new s', 'cmdline')
  H.ok(vim.tbl_contains(keys, 'strategy=') and vim.tbl_contains(keys, 'source='), vim.inspect(keys))
  local values = vim.fn.getcompletion('Slipway open how=', 'cmdline')
  H.eq(values, { 'how=tab', 'how=window', 'how=cd' }, 'values of how=')
  for _, s in ipairs(subs) do
    H.ok(vim.fn.maparg('<Plug>(slipway-' .. s .. ')', 'n', false, true).lhs, '<Plug>(slipway-' .. s .. ')')
  end
  for _, m in ipairs(vim.api.nvim_get_keymap('n')) do
    if (m.desc or ''):find('slipway', 1, true) then
      H.ok(m.lhs:find('<Plug>', 1, true) == 1, 'no default keymaps: ' .. m.lhs)
    end
  end
end)

H.test(':Slipway without a subcommand offers them in a picker', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  H.script_select({ { kind = 'slipway.subcommand', choose = 'list' } })
  vim.cmd('Slipway')
  H.wait_note('no slipway worktrees in ' .. repo)
  local ran, err = pcall(vim.cmd, 'Slipway nonsense')
  H.ok(ran, 'no Vim error: ' .. tostring(err))
  H.wait_note('unknown subcommand "nonsense"')
end)

H.test('an unknown source ref: the sidecar lists the choices, the picker answers', function()
  local r = H.repo_with_remote()
  vim.cmd.cd(r.repo)
  H.script_select({
    {
      kind = 'slipway.branch',
      choose = function(b)
        return b.name == 'origin/main'
      end,
    },
  })
  local ok, created =
    H.slipway('new', { strategy = 'branch', branch = 'work/retry', source = 'named:origin/nope', open = 'false' })
  H.ok(ok, 'created after the retry: ' .. H.debug_state())
  H.contains(H.picker('slipway.branch').prompt, 'origin/nope', 'the picker says what went wrong')
  H.eq(H.rev(created.path, 'HEAD'), H.rev(r.repo, 'origin/main'), 'started from the choice')
end)
