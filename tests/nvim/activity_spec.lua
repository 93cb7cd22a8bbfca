-- Walking away and coming back: `slipway/runActivity` from a real run of the
-- `command` agent (its step is its latest output line) in the runs view
-- (`:Slipway runs`), the progress and the status line.
local H = require('harness')

--- An agent that says `step one`, waits for `gate1`, says `step two`, waits
--- for `gate2`, then commits.
local function stepping_agent(dir)
  return H.script(
    dir .. '/agent.sh',
    ([[
wait_for() {
  n=0
  while [ ! -e "$1" ]; do
    n=$((n + 1))
    [ $n -lt 900 ] || exit 1
    sleep 0.1 # allow-sleep: the agent polls for the test's gate file
  done
}
echo 'step one'
wait_for '%s/gate1'
echo 'step two'
wait_for '%s/gate2'
echo done > done.txt
git add done.txt
git commit -q -m 'agent: done'
]]):format(dir, dir)
  )
end

--- The lines of the `slipway://runs` buffer.
local function view()
  local buf = vim.fn.bufnr(vim.fn.escape('slipway://runs', '/'))
  H.ok(buf ~= -1, 'the runs view exists\n' .. H.debug_state())
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

H.test('runs view, progress and status line follow the steps of a run', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  vim.g.slipway =
    vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = { 'sh', stepping_agent(dir) } } })
  vim.cmd.cd(repo)
  local reports = {}
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      local value = ev.data.params.value
      if value.kind == 'report' and value.message then
        reports[#reports + 1] = value.message
      end
    end,
  })
  local heard = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayRunActivity',
    callback = function(ev)
      heard[#heard + 1] = ev.data
    end,
  })
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'act/work', source = 'host_head' })
  H.ok(ok, 'worktree created')
  local started
  ok, started = H.slipway('handoff', { prompt = 'step by step' })
  H.ok(ok and started.runId, 'handoff started')
  local activity = require('slipway.activity')

  -- Step one: the activity, the progress, both status lines and the runs view say it.
  H.wait(function()
    return activity.step(started.runId) == 'step one'
  end, 'the activity says step one')
  H.eq(heard[#heard].runId, started.runId, 'User SlipwayRunActivity names the run')
  H.eq(heard[#heard].activity.step, 'step one', 'User SlipwayRunActivity carries the activity')
  H.wait(function()
    return vim.tbl_contains(reports, 'step one')
  end, 'the progress reports step one')
  -- The status line also needs the sidecar's `slipway/status` saying the run is on.
  H.wait(function()
    return require('slipway').statusline() == '⎇ act/work ⟳ step one'
  end, 'status line in the worktree')
  H.eq(require('slipway').statusline(repo), '⟳ act/work: step one', 'status line in the host')
  ok = H.slipway('runs')
  H.ok(ok, ':Slipway runs')
  local text = view()
  H.contains(text, '1 run in ' .. repo, 'the view names the repository')
  H.contains(text, started.runId .. '  running  act/work  command  ', 'the run, its state, branch and agent')
  H.contains(text, '· step one', 'its latest step')

  -- Step two: the open view follows without being asked again.
  H.write(dir .. '/gate1', '')
  H.wait(function()
    return view():find('· step two', 1, true)
  end, 'the runs view shows step two')
  H.eq(require('slipway').statusline(), '⎇ act/work ⟳ step two', 'status line follows')

  -- Done: the status line says so until the runs view has shown it.
  H.write(dir .. '/gate2', '')
  H.wait_note('completed', 60000)
  H.wait(function()
    return require('slipway').statusline() == '⎇ act/work ✓'
  end, 'the worktree status line says done')
  H.eq(require('slipway').statusline(repo), '✓ act/work', 'the host status line says done')
  H.contains(view(), started.runId .. '  completed  act/work', 'the open view says completed')
  ok = H.slipway('runs')
  H.ok(ok, ':Slipway runs again')
  H.eq(require('slipway').statusline(repo), '', 'seen in the runs view: no longer marked')
  H.eq(require('slipway').statusline(created.path), '⎇ act/work', 'nor in the worktree')
  H.eq(H.git(repo, 'log', '-1', '--format=%s', 'act/work'), 'agent: done', 'the run committed')
end)

H.test('a row of the runs view: elapsed time, tokens, cost and step', function()
  local activity = require('slipway.activity')
  local row = activity.row({
    runId = 'run-1',
    status = 'completed',
    branch = 'b',
    agent = 'claude-code',
    elapsedSecs = 95,
    activity = { step = 'editing src/a.rs', inputTokens = 1200, outputTokens = 34, costUsd = 0.4215 },
  })
  H.eq(row, 'run-1  completed  b  claude-code  1m35s  1.2k tokens $0.42  · editing src/a.rs', 'the row')
  H.eq(activity.elapsed_text(3725), '1h02m', 'hours')
  H.eq(activity.usage_text({ step = 'x' }), nil, 'no usage reported: none shown')
end)

H.test('a new handoff in a worktree drops the done mark of its earlier run', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  -- The second run waits for the gate: its end cannot come before the check.
  local gated = ([[
if [ "$SLIPWAY_PROMPT" = second ]; then
  while [ ! -e '%s/gate' ]; do sleep 0.1; done # allow-sleep: the agent polls for the test's gate file
fi
echo fine
]]):format(dir)
  vim.g.slipway = vim.tbl_extend(
    'force',
    vim.g.slipway,
    { agent = { type = 'command', command = { 'sh', H.script(dir .. '/ok.sh', gated) } } }
  )
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'again', source = 'host_head' })
  H.ok(ok, 'created')
  H.slipway('handoff', { prompt = 'first' })
  H.wait_note('completed', 60000)
  H.wait(function()
    return require('slipway').statusline() == '⎇ again ✓'
  end, 'done after the first run')
  local from = #H.notes
  ok = H.slipway('handoff', { prompt = 'second' })
  H.ok(ok, 'second handoff')
  H.not_contains(require('slipway').statusline(created.path), '✓', 'the first run is no longer news')
  H.write(dir .. '/gate', '')
  H.wait_note('completed', 60000, from)
end)
