-- The join between the interactive and the unattended half: a handoff ends the
-- interactive agent `:Slipway agent` started in that worktree first (one
-- writer per session), `:qa` with a live agent terminal is refused with a
-- message naming `:Slipway stop` and `:qa!`, and `network=` is documented.
local H = require('harness')

--- One script for both halves (the `command` agent's interactive command is
--- the command itself): interactive, it says it is ready and stays up until a
--- hangup or TERM, which it records in `stopped`; unattended (`$SLIPWAY_PROMPT`
--- set), it records in `saw` whether the interactive one had stopped, and commits.
local function both_halves(dir)
  return H.script(
    dir .. '/agent.sh',
    ([[
d='%s'
if [ -n "${SLIPWAY_PROMPT:-}" ]; then
  if [ -e "$d/stopped" ]; then echo yes > "$d/saw"; else echo no > "$d/saw"; fi
  echo run > run.txt
  git add run.txt
  git commit -q -m 'the run'
  exit 0
fi
trap 'echo stopped > "$d/stopped"; kill $child 2>/dev/null; exit 0' HUP TERM
sleep 600 & # allow-sleep: the interactive agent stays up until it is stopped
child=$!
echo ready > "$d/ready"
wait $child
]]):format(dir)
  )
end

local function read(path)
  local fd = assert(io.open(path))
  local text = vim.trim(fd:read('*a'))
  fd:close()
  return text
end

--- A repository, the agent configured, a worktree `branch` and the
--- interactive agent running in it.
local function interactive(branch)
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  vim.g.slipway =
    vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = { 'sh', both_halves(dir) } } })
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = branch, source = 'host_head' })
  H.ok(ok, 'worktree created')
  ok = H.slipway('agent')
  H.ok(ok, 'interactive agent started')
  H.wait(function()
    return H.exists(dir .. '/ready')
  end, 'the interactive agent is up')
  return repo, dir, created
end

H.test('handoff ends the interactive agent of the worktree before the run starts', function()
  local repo, dir = interactive('join/work')
  local ok, started = H.slipway('handoff', { prompt = 'go on' })
  H.ok(ok and started.runId, 'handoff started: ' .. H.debug_state())
  H.ok(H.find_note('ending the interactive agent in join/work before the handoff'), 'it says so')
  H.eq(read(dir .. '/stopped'), 'stopped', 'the interactive agent was stopped')
  H.eq(require('slipway.terminals').list(), {}, 'no live agent terminal left')
  H.wait_note('completed', 60000)
  H.eq(read(dir .. '/saw'), 'yes', 'the run started after the interactive agent had ended')
  H.eq(H.git(repo, 'log', '-1', '--format=%s', 'join/work'), 'the run', 'the run committed')
end)

H.test(':qa with a live agent terminal is refused, naming :Slipway stop and :qa!', function()
  local _, dir = interactive('join/quit')
  local guard = vim.fn.bufnr(require('slipway.terminals').GUARD)
  H.ok(guard ~= -1 and vim.bo[guard].modified, 'the guard buffer holds the quit back')
  local quit, err = pcall(vim.cmd, 'qa')
  H.ok(not quit, ':qa is refused')
  -- Neovim's own E948 for the terminal's job, or E37 from the plugin's guard buffer.
  H.ok(tostring(err):find('E948', 1, true) or tostring(err):find('E37', 1, true), 'E948 or E37: ' .. tostring(err))
  local note = H.wait_note('an interactive agent is still running in join/quit')
  H.contains(note.msg, ':Slipway stop ends it', 'names :Slipway stop')
  H.contains(note.msg, ':qa! quits and ends it', 'names :qa!')
  H.eq(note.level, vim.log.levels.WARN, 'a warning')
  H.ok(not H.exists(dir .. '/stopped'), 'the agent still runs')

  local ok, stopped = H.slipway('stop', { worktree = 'join/quit' })
  H.ok(ok and stopped, ':Slipway stop: ' .. H.debug_state())
  H.wait_note('stopped the interactive agent in join/quit')
  H.eq(read(dir .. '/stopped'), 'stopped', 'the agent got its hangup')
  H.ok(not vim.bo[guard].modified, 'nothing holds the quit back any more')
  local before = #H.notes
  vim.api.nvim_exec_autocmds('ExitPre', {})
  H.eq(#H.notes, before, 'no warning once the agent ended')
end)

H.test(':help slipway lists network= with the run options; it needs a docker sandbox', function()
  local doc = read(vim.api.nvim_get_runtime_file('doc/slipway.txt', false)[1])
  H.contains(doc, '`network=NAME`', 'the run options list network=')
  H.contains(doc, 'network = ', 'the sandbox option shows network')
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok = H.slipway('new', { strategy = 'branch', branch = 'net', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  ok = H.slipway('handoff', { worktree = 'net', prompt = 'p', network = 'none' })
  H.ok(not ok, 'refused without a docker sandbox')
  H.wait_note('network= is an option of the docker sandboxes: add sandbox=docker')
  H.ok(vim.tbl_contains(require('slipway.commands').keys.run, 'network='), 'network= completes for run')
end)
