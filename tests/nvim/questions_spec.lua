-- A run whose `command` agent ends asking (its last line asks the user) ends
-- `needsInput` through the real sidecar: the summary shows the question, the
-- status line marks the run, and `:Slipway reply` (the question shown in the
-- input prompt) starts the run that answers it, which commits in the same
-- worktree.
local H = require('harness')

local QUESTION = 'Should I also add a test, or do you want to keep it small?'
-- A `%` in the branch: shown as it is, in either form of the status line.
local BRANCH = 'asks-50%'

--- An agent that commits, then asks unless its prompt is an answer.
local function asking_agent(dir)
  return H.script(
    dir .. '/asker.sh',
    ([[
set -e
case "$SLIPWAY_PROMPT" in
  answer:*)
    echo test >> test.txt && git add test.txt && git commit -q -m "agent: $SLIPWAY_PROMPT"
    echo "Added the test." ;;
  *)
    echo work >> work.txt && git add work.txt && git commit -q -m 'agent: the work'
    echo "Done with the work."
    echo
    echo '%s' ;;
esac
]]):format(QUESTION)
  )
end

H.test('a run that asks shows its question, and :Slipway reply answers it in the same worktree', function()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  vim.g.slipway =
    vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = { 'sh', asking_agent(dir) } } })
  vim.cmd.cd(repo)

  local ok = H.slipway('run', { strategy = 'branch', branch = BRANCH, prompt = 'do the work' })
  H.ok(ok, 'the run started')
  local note = H.wait_note('asks: ' .. QUESTION)
  H.contains(note.msg, 'run ', 'the summary names the run')
  H.contains(vim.split(note.msg, '\n')[1], ':Slipway reply', 'the line shown says how to answer')
  local finished = require('slipway.runs').finished
  local asked = finished[#finished]
  H.eq(asked.status, 'needsInput', 'the run ended needsInput')

  -- The status line marks it until it is answered: plain text for `%{…}`, and
  -- highlighted for `%{%…%}`, where the branch's `%` must not read as an item.
  H.wait(function()
    return require('slipway').statusline() == '? ' .. BRANCH
  end, 'the status line marks the run waiting for input: ' .. require('slipway').statusline())
  H.eq(vim.fn.hlexists('SlipwayNeedsInput'), 1, 'the highlight exists')
  H.eq(require('slipway').statusline({ highlight = true }), '%#SlipwayNeedsInput#? asks-50%%%*', 'highlighted')
  H.eq(
    vim.api.nvim_eval_statusline(
      "%{%v:lua.require'slipway'.statusline({'highlight': v:true})%}",
      { use_tabline = false, highlights = true }
    ).str,
    '? ' .. BRANCH,
    'as a status line shows it'
  )
  local completions = require('slipway.commands').complete('', 'Slipway reply ')
  H.ok(vim.list_contains(completions, asked.runId), 'reply completes the waiting run: ' .. vim.inspect(completions))

  H.script_input({ 'answer: yes, add one' })
  local replied, started = H.slipway('reply')
  H.ok(replied, ':Slipway reply ran')
  H.eq(#H.inputs, 1, 'one answer asked')
  H.contains(H.inputs[1].prompt, QUESTION, 'the input prompt shows the question')
  H.ok(started and started.runId and started.runId ~= asked.runId, 'a new run started')
  H.wait_note('answers ' .. asked.runId)

  local done = H.wait_note('run ' .. started.runId .. ' completed')
  H.contains(done.msg, 'answers run ' .. asked.runId, 'the reply names the run it answers')
  H.eq(
    H.git(repo, 'log', '--format=%s', BRANCH),
    'agent: answer: yes, add one\nagent: the work\ninitial commit',
    'both runs committed on the branch'
  )
  H.wait(function()
    return require('slipway').statusline():find('SlipwayNeedsInput', 1, true) == nil
  end, 'the mark goes once answered')
end)
