-- `:Slipway workspace`: a workspace made with the real CLI, a run on it with
-- one scripted branch picker per `ask` mount (in mount order), the commit
-- checked with git.
local H = require('harness')

--- Two repositories: `a`, a clone of an upstream with a `release` branch (so
--- `origin/release` exists), and `b`, a plain one.
local function two_repos()
  local dir = H.tmpdir()
  local up = dir .. '/up'
  vim.fn.mkdir(up, 'p')
  H.git(up, 'init', '-q', '-b', 'main')
  H.commit_file(up, 'README.md', 'hello\n', 'initial commit')
  H.git(up, 'checkout', '-q', '-b', 'release')
  H.commit_file(up, 'r.txt', 'release\n', 'release work')
  H.git(up, 'checkout', '-q', 'main')
  H.git(dir, 'clone', '-q', up, 'a')
  local b = dir .. '/b'
  vim.fn.mkdir(b, 'p')
  H.git(b, 'init', '-q', '-b', 'main')
  H.commit_file(b, 'README.md', 'b\n', 'b: initial commit')
  return { dir = dir, a = dir .. '/a', b = b }
end

--- `slipway workspace create NAME …` with the harness environment (hermetic XDG_CONFIG_HOME).
local function create_workspace(name, a, b)
  H.ok(vim.env.XDG_CONFIG_HOME and vim.env.XDG_CONFIG_HOME ~= '', 'the harness sets XDG_CONFIG_HOME')
  -- stylua: ignore
  local res = H.system({
    vim.env.SLIPWAY_BIN, 'workspace', 'create', name,
    '--workdir', '/w/a',
    '--mount', a .. ':/w/a',
    '--mount', b .. ':/w/b',
    '--mount-isolation', '/w/a=worktree',
    '--mount-isolation', '/w/b=clone',
    '--mount-source-branch', '/w/a=ask',
    '--mount-source-branch', '/w/b=ask',
  }, a)
  H.eq(res.code, 0, 'slipway workspace create: ' .. (res.stderr or ''))
  H.ok(H.exists(vim.env.XDG_CONFIG_HOME .. '/slipway/workspaces/' .. name .. '.toml'), 'the workspace file')
end

local function set_agent(argv)
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = argv } })
end

H.test('workspace: one picker per ask mount, in order; the run commits on the chosen commit', function()
  local r = two_repos()
  create_workspace('duo', r.a, r.b)
  set_agent({
    'sh',
    H.script(
      r.dir .. '/agent.sh',
      'echo ws > ws.txt\ngit add ws.txt\ngit commit -q -m "ws agent: $SLIPWAY_PROMPT"\necho done\n'
    ),
  })
  vim.cmd.cd(r.a)
  local finished = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayRunFinished',
    callback = function(ev)
      finished[#finished + 1] = ev.data
    end,
  })
  H.script_select({
    { kind = 'slipway.workspace', choose = 'duo' },
    { kind = 'slipway.mount_branch', choose = 'origin/release' },
    { kind = 'slipway.mount_branch', choose = 'main' },
  })
  H.script_input({ 'touch both' })
  vim.cmd('Slipway workspace')
  local started = H.wait_note('started on workspace duo', 60000)
  local note = H.wait_note('completed', 60000)
  H.eq(note.level, vim.log.levels.INFO, 'completed is INFO')

  -- The pickers: the workspace, then one per ask mount in mount order.
  H.eq(#H.pickers, 3, 'three pickers: ' .. vim.inspect(H.pickers))
  H.eq(H.pickers[1].kind, 'slipway.workspace', 'the workspace picker first')
  H.contains(H.pickers[1].items[1], 'duo', 'the workspace listed')
  H.contains(H.pickers[1].items[1], '2 mounts', 'its mounts counted')
  H.eq(H.pickers[2].prompt, 'slipway: start /w/a from', 'the first branch picker names the first mount')
  H.eq(H.pickers[3].prompt, 'slipway: start /w/b from', 'the second branch picker names the second mount')
  H.ok(vim.tbl_contains(H.pickers[2].raw, 'origin/release'), 'choices of /w/a: ' .. vim.inspect(H.pickers[2].raw))
  H.ok(vim.tbl_contains(H.pickers[2].raw, 'main'), 'choices of /w/a: ' .. vim.inspect(H.pickers[2].raw))
  H.ok(vim.tbl_contains(H.pickers[3].raw, 'main'), 'choices of /w/b: ' .. vim.inspect(H.pickers[3].raw))
  H.ok(not vim.tbl_contains(H.pickers[3].raw, 'origin/release'), '/w/b has no origin/release')
  H.eq(#H.inputs, 1, 'one prompt asked')
  H.ok(started.seq < note.seq, 'started before it finished')

  -- The commit: on the run's branch in the first repository, parent = the chosen commit.
  H.eq(#finished, 1, 'User SlipwayRunFinished fired once')
  local run_id = finished[1].runId
  local branch = 'slipway/ws-' .. run_id:gsub('^run%-', '') .. '-0'
  local tip = H.rev(r.a, 'refs/heads/' .. branch)
  H.eq(H.rev(r.a, tip .. '~1'), H.rev(r.a, 'origin/release'), 'the parent is origin/release')
  H.eq(H.git(r.a, 'log', '-1', '--format=%s', tip), 'ws agent: touch both', 'the agent commit with the prompt')
  H.eq(H.git(r.a, 'symbolic-ref', '--short', 'HEAD'), 'main', 'the host checkout did not move')
  H.eq(H.rev(r.a, 'HEAD'), H.rev(r.a, 'origin/main'), 'the host HEAD did not move')
end)

H.test('workspace: names and prompt as arguments, completion, unknown name', function()
  local subs = vim.fn.getcompletion('Slipway ', 'cmdline')
  H.ok(vim.tbl_contains(subs, 'workspace'), 'workspace is completed: ' .. vim.inspect(subs))
  H.eq(
    vim.fn.getcompletion('Slipway workspace ', 'cmdline'),
    { 'workspace=', 'agent=', 'sandbox=', 'network=', 'prompt=' },
    'keys'
  )
  H.ok(vim.fn.maparg('<Plug>(slipway-workspace)', 'n', false, true).lhs, '<Plug>(slipway-workspace)')
  H.eq(
    require('slipway.commands').parse('workspace', { 'duo', 'do', 'it' }),
    { workspace = 'duo', prompt = 'do it' },
    'a bare word is the workspace, the rest the prompt'
  )
  local repo = H.repo()
  set_agent({ 'true' })
  vim.cmd.cd(repo)
  local ok = H.slipway('workspace', { workspace = 'nope', prompt = 'p' })
  H.ok(not ok, 'fails')
  local note = H.wait_note('no workspace named nope')
  H.eq(note.level, vim.log.levels.ERROR, 'an error')
end)

H.test('workspace: outside a repository the CLI lists it and the workdir mount is the root', function()
  local r = two_repos()
  create_workspace('solo', r.a, r.b)
  set_agent({
    'sh',
    H.script(r.dir .. '/agent.sh', 'echo x > x.txt\ngit add x.txt\ngit commit -q -m outside\n'),
  })
  local outside = H.tmpdir()
  vim.cmd.cd(outside)
  H.script_select({
    { kind = 'slipway.mount_branch', choose = 'main' },
    { kind = 'slipway.mount_branch', choose = 'main' },
  })
  local ok, started = H.slipway('workspace', { workspace = 'solo', prompt = 'go' })
  H.ok(ok and started.runId, 'started: ' .. H.debug_state())
  H.wait_note('completed', 60000)
  local branch = 'slipway/ws-' .. started.runId:gsub('^run%-', '') .. '-0'
  H.eq(H.rev(r.a, branch .. '~1'), H.rev(r.a, 'main'), 'the parent is main')
end)
