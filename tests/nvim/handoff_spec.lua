-- `:Slipway handoff`, `:Slipway run` and `:Slipway cancel` with the `command`
-- agent (shell scripts that commit), the status line before, during and after
-- a run, LSP progress, and the `slipway/runFinished` notification.
local H = require('harness')

--- An agent script that waits for `gate` to exist, then commits two files
--- (their commit messages carry the prompt it received).
local function committing_agent(dir, gate)
  return H.script(
    dir .. '/agent.sh',
    ([[
n=0
while [ ! -e '%s' ]; do
  n=$((n + 1))
  [ $n -lt 900 ] || exit 1
  sleep 0.1 # allow-sleep: the agent polls for the test's gate file
done
echo one > one.txt
git add one.txt
git commit -q -m "agent one: $SLIPWAY_PROMPT"
echo two > two.txt
git add two.txt
git commit -q -m "agent two"
echo done
]]):format(gate)
  )
end

local function set_agent(argv)
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = argv } })
end

H.test('handoff: the command agent commits on the branch; status line before, during, after', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  local gate = dir .. '/gate'
  set_agent({ 'sh', committing_agent(dir, gate) })
  vim.cmd.cd(repo)

  local progress = {}
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      local value = ev.data.params.value
      progress[#progress + 1] = { kind = value.kind, title = value.title, message = value.message }
    end,
  })
  local finished_events, status_events = {}, 0
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayRunFinished',
    callback = function(ev)
      finished_events[#finished_events + 1] = ev.data
    end,
  })
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayStatus',
    callback = function()
      status_events = status_events + 1
    end,
  })

  -- An interactive worktree, opened in its own tab.
  H.eq(require('slipway').statusline(), '', 'nothing known before any command')
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'agent/work', source = 'host_head' })
  H.ok(ok, 'worktree created')
  local base = H.rev(repo, 'agent/work')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd()), vim.uv.fs_realpath(created.path), 'in the worktree')

  -- Before the run.
  H.wait(function()
    return require('slipway').statusline() == '⎇ agent/work'
  end, 'status line before the run')
  H.ok(status_events > 0, 'User SlipwayStatus fired')

  -- Hand off with a prompt from vim.ui.input.
  H.script_input({ 'please commit twice' })
  vim.cmd('Slipway handoff')
  H.wait_note('started on agent/work')
  H.eq(#H.inputs, 1, 'one prompt asked')

  -- During the run.
  H.wait(function()
    return require('slipway').statusline() == '⎇ agent/work ⟳'
  end, 'status line during the run')
  H.wait(function()
    return #progress > 0
  end, 'LspProgress from the run')
  H.eq(progress[1].kind, 'begin', 'progress begins')
  H.eq(progress[1].title, 'slipway: agent run', 'progress title')
  H.contains(vim.lsp.status(), 'slipway: agent run', 'vim.lsp.status()')

  -- Let the agent work.
  H.write(gate, '')
  local note = H.wait_note('completed', 60000)
  H.contains(note.msg, '2 commits on agent/work (your worktree)', 'summary names commits and branch')
  H.contains(note.line, '2 commits on agent/work', 'the one line shown says it')
  H.not_contains(note.msg, 'kept', 'the worktree the user works in is not "kept"')
  H.contains(note.msg, ':Slipway review agent/work', 'next action: review')
  H.contains(note.msg, ':Slipway log ' .. finished_events[1].runId, 'next action: the log')
  H.not_contains(note.msg, 'close: :Slipway close', 'no advice to close the worktree the user works in')
  H.eq(note.level, vim.log.levels.INFO, 'completed is INFO')
  H.eq(#finished_events, 1, 'User SlipwayRunFinished fired once')
  H.eq(finished_events[1].status, 'completed', 'event data carries the status')
  H.eq(#finished_events[1].commits, 2, 'event data carries the commits')

  -- After the run: done, until the runs view shows it.
  H.wait(function()
    return require('slipway').statusline() == '⎇ agent/work ✓'
  end, 'status line after the run')
  H.wait(function()
    for _, p in ipairs(progress) do
      if p.kind == 'end' then
        return true
      end
    end
  end, 'progress ends')

  -- The commits are on the branch, the prompt reached the agent, the host did not move.
  local log = vim.split(H.git(repo, 'log', '--format=%s', base .. '..agent/work'), '\n')
  H.eq(log, { 'agent two', 'agent one: please commit twice' }, 'commits on agent/work')
  H.eq(H.rev(repo, 'agent/work'), finished_events[1].commits[2].sha, 'the last commit is the branch tip')
  H.eq(H.git(repo, 'symbolic-ref', '--short', 'HEAD'), 'main', 'host branch')
  H.eq(H.git(created.path, 'status', '--porcelain'), '', 'worktree clean')
end)

H.test('run: a new worktree and an unattended run in it', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  local gate = dir .. '/gate'
  H.write(gate, '')
  set_agent({ 'sh', committing_agent(dir, gate) })
  vim.cmd.cd(repo)
  -- The user's defaults decide the strategy; the sidecar asks for the branch
  -- name it needs, and nothing else is asked but the prompt.
  H.user_config('version = 2\nstrategy = "branch"\nsource = "current_branch"\n')
  H.script_input({ 'do it', 'run/new' })
  vim.cmd('Slipway run')
  local note = H.wait_note('completed', 60000)
  H.contains(note.msg, '2 commits on run/new', 'summary')
  H.contains(note.line, ':Slipway review run/new', 'the line offers review (and land, cut at this width)')
  H.contains(note.msg, ':Slipway review run/new or :Slipway land run/new', 'review and land')
  local log = vim.split(H.git(repo, 'log', '--format=%s', 'main..run/new'), '\n')
  H.eq(log, { 'agent two', 'agent one: do it' }, 'commits on run/new')
  H.eq(H.picker('slipway.strategy'), nil, 'no strategy picker')
  H.eq(H.picker('slipway.source'), nil, 'no source picker')
  H.user_config(nil)
end)

H.test('cancel stops a run; the status line clears its running mark', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  set_agent({ 'sh', H.script(dir .. '/stall.sh', 'echo stalling\nsleep 120\n') }) -- allow-sleep: the agent stalls until the test cancels it
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'stall', source = 'host_head' })
  H.ok(ok, 'created')
  local started
  ok, started = H.slipway('handoff', { prompt = 'wait forever' })
  H.ok(ok and started.runId, 'handoff started')
  H.wait(function()
    return require('slipway').statusline() == '⎇ stall ⟳ stalling'
  end, 'running mark and the latest step')
  H.script_select({ { kind = 'slipway.run', choose = started.runId .. '  stall  · stalling' } })
  vim.cmd('Slipway cancel')
  local note = H.wait_note('cancelled:', 30000)
  H.eq(note.level, vim.log.levels.WARN, 'cancelled is a warning')
  H.contains(note.msg, started.runId, 'names the run')
  H.wait(function()
    return require('slipway').statusline() == '⎇ stall ✗'
  end, 'running mark gone, the run marked as not completed')
  H.ok(H.exists(created.path), 'the worktree stays')
end)

H.test('an interactive agent without an agent configured says how to configure one', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok = H.slipway('new', { strategy = 'branch', branch = 'no/agent', open = 'false' })
  H.ok(ok, 'created')
  ok = H.slipway('agent', { worktree = 'no/agent' })
  H.ok(not ok, 'fails')
  local note = H.wait_note('no agent configured')
  H.contains(note.msg, 'vim.g.slipway', 'says where to configure')
end)

H.test("a handoff without an agent configured takes the defaults' agent", function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok = H.slipway('new', { strategy = 'branch', branch = 'default/agent', open = 'false' })
  H.ok(ok, 'created')
  -- No agent here nor in the files: the sidecar's default (`command`) needs its program.
  ok = H.slipway('handoff', { worktree = 'default/agent', prompt = 'p' })
  H.ok(not ok, 'fails')
  H.wait_note('agent.command')
end)

H.test('a run that ended while no editor was open is reported when the sidecar starts', function()
  local repo = H.repo()
  local res = H.system({
    vim.env.SLIPWAY_BIN,
    '--repo',
    repo,
    '--json',
    'run',
    '--strategy',
    'branch',
    '--branch',
    'earlier/run',
    '--',
    'sh',
    '-c',
    'echo hi > f.txt && git add f.txt && git commit -q -m earlier',
  }, repo)
  H.eq(res.code, 0, 'the CLI run: ' .. (res.stderr or ''))
  vim.cmd.cd(repo)
  H.slipway('list')
  local note = H.wait_note('completed: 1 commit on earlier/run')
  H.contains(note.msg, 'worktree kept at', 'the kept worktree')
end)
