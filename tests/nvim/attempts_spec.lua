-- `:Slipway attempts`: the groups' picker (slipway.attemptGroups), the view of
-- a group of three real attempts (the `command` agent, one check failing),
-- <CR> opening an attempt's diff, `d` one attempt against another, `L` landing
-- one and discarding the rest (slipway.landAttempt), and the view following
-- its runs as they end.
local H = require('harness')

local function buf_lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- An agent that commits a file naming its branch.
local function committing_agent(dir)
  return H.script(
    dir .. '/commit-attempt',
    'printf "%s\\n" "$SLIPWAY_SOURCE_BRANCH" > attempt.txt\n'
      .. 'git add attempt.txt\n'
      .. 'git commit -q -m "attempt $SLIPWAY_SOURCE_BRANCH"\n'
  )
end

--- Three attempts on try/1…3 made by the CLI; attempt 3's check fails (exit 4).
local function three_attempts(repo)
  local agent = committing_agent(vim.fs.dirname(repo))
  local res = H.system({
    vim.env.SLIPWAY_BIN,
    '--repo',
    repo,
    '--json',
    'run',
    '--attempts',
    '3',
    '--branch',
    'try',
    '--check',
    'test "$SLIPWAY_SOURCE_BRANCH" != try/3 && echo fine || { echo broken; exit 4; }',
    '--prompt',
    'write attempt.txt',
    '--',
    agent,
  }, repo)
  H.eq(res.code, 0, 'the group ran: ' .. res.stderr)
  return vim.json.decode(res.stdout)
end

--- The buffer line of attempt `n` in the view.
local function goto_row(view, n)
  local win = vim.fn.bufwinid(view.buf)
  H.ok(win ~= -1, 'the view is on screen')
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { view.first_row + n - 1, 0 })
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), 'x', false)
end

--- Waits for the review of `branch` and returns it (its tab is current).
local function wait_review(branch)
  return H.wait(function()
    local s = require('slipway.review').current()
    return s and s.worktree.branch == branch and s or nil
  end, 'the review of ' .. branch)
end

H.test('the view lists the attempts with their checks, opens diffs, and L lands one', function()
  local repo = H.repo()
  local group = three_attempts(repo).groupId
  vim.cmd.cd(repo)
  H.script_select({ { kind = 'slipway.attemptGroup', choose = group } })
  local ok, view = H.slipway('attempts')
  H.ok(ok and view, 'the view opened: ' .. H.debug_state())
  H.contains(H.picker('slipway.attemptGroup').items[1], '3 attempts', 'the picker shows the group')
  H.contains(H.picker('slipway.attemptGroup').items[1], 'write attempt.txt', 'and its prompt')
  local lines = buf_lines(view.buf)
  H.contains(lines[1], 'attempts ' .. group, 'the title')
  H.contains(lines[2], '<CR> diff', 'the keys')
  H.contains(lines[2], 'L land', 'the keys')
  H.eq(#lines, view.first_row + 2, 'three rows')
  for n = 1, 3 do
    local row = lines[view.first_row + n - 1]
    H.contains(row, 'command', 'the agent of ' .. n)
    H.contains(row, 'completed', 'the status of ' .. n)
    H.contains(row, '+1 -0', 'the lines of ' .. n)
    H.contains(row, 'try/' .. n, 'the branch of ' .. n)
    if n == 3 then
      H.contains(row, 'fail (exit 4)', 'the failing check')
    else
      H.contains(row, 'pass', 'the passing check of ' .. n)
    end
  end

  -- <CR>: attempt 1's diff in the review.
  goto_row(view, 1)
  press('<CR>')
  local review = wait_review('try/1')
  H.contains(vim.fn.getqflist({ title = 1 }).title, 'slipway review try/1', 'the review of attempt 1')
  H.eq(#vim.fn.getqflist(), 1, 'one changed file')
  require('slipway.review').close(review)

  -- d: attempt 1 against attempt 2's tip.
  goto_row(view, 1)
  H.script_input({ '2' })
  press('d')
  review = wait_review('try/1')
  H.eq(review.against, 'try/2', 'compared with attempt 2')
  H.contains(vim.fn.getqflist({ title = 1 }).title, 'against try/2', 'the title says so')
  local base = H.wait(function()
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      local buf = vim.api.nvim_win_get_buf(win)
      if vim.api.nvim_buf_get_name(buf) == 'slipway://try/1@try/2/attempt.txt' then
        return buf
      end
    end
  end, 'the base side from attempt 2')
  H.eq(buf_lines(base), { 'try/2' }, "attempt 2's text")
  require('slipway.review').close(review)

  -- L on attempt 2: it lands, the others go.
  local winner = H.rev(repo, 'try/2')
  goto_row(view, 2)
  H.script_select({ { kind = 'slipway.landAttempt', choose = 'losing their work' } })
  press('L')
  local note = H.wait_note('landed attempt 2 (try/2) into main')
  H.contains(note.msg, 'discarded attempts 1, 3', 'what was discarded')
  H.eq(H.rev(repo, 'main'), winner, 'the host branch holds the winner')
  H.eq(
    H.git(repo, 'branch', '--list', '--format=%(refname:short)', 'try/*'),
    'try/2',
    "the other attempts' branches are gone"
  )
  H.wait(function()
    return buf_lines(view.buf)[view.first_row]:find('(gone)', 1, true)
  end, 'the view to show attempt 1 gone')
  H.contains(buf_lines(view.buf)[view.first_row + 2], '(gone)', 'attempt 3 too')
  H.not_contains(buf_lines(view.buf)[view.first_row + 1], '(gone)', 'the winner keeps its branch')
end)

H.test('the view follows the runs of a group started from the editor', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local gate = vim.fs.dirname(repo) .. '/go'
  local agent = H.script(
    vim.fs.dirname(repo) .. '/gated',
    ('n=0\nwhile [ ! -e %s ]; do\n'):format(vim.fn.shellescape(gate))
      .. '  n=$((n + 1))\n  [ $n -lt 900 ] || exit 1\n'
      .. "  sleep 0.1 # allow-sleep: the agent polls for the test's gate file\n"
      .. 'done\necho x > gated.txt\ngit add gated.txt\ngit commit -q -m gated\n'
  )
  local done, started = false, nil
  require('slipway.lsp').exec(repo, 'slipway.run', {
    root = repo,
    strategy = 'branch',
    branch = 'held',
    agent = { type = 'command', command = { agent } },
    prompt = 'wait',
    attempts = 2,
  }, function(err, result)
    done, started = true, err and { err = err } or result
  end)
  H.wait(function()
    return done
  end, 'slipway.run to answer')
  H.ok(started.groupId, 'a group: ' .. vim.inspect(started))
  local ok, view = H.slipway('attempts', { group = started.groupId })
  H.ok(ok and view, 'the view opened: ' .. H.debug_state())
  H.contains(buf_lines(view.buf)[view.first_row] or '', 'held/1', 'the first attempt')
  H.not_contains(table.concat(buf_lines(view.buf), '\n'), 'completed', 'nothing has ended yet')
  H.write(gate, 'go\n')
  H.wait(function()
    local text = buf_lines(view.buf)
    return (text[view.first_row] or ''):find('completed', 1, true)
      and (text[view.first_row + 1] or ''):find('completed', 1, true)
  end, 'both rows to show completed without a refresh')
end)
