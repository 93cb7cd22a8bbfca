-- The rough edges of issue 15: one-line messages and :Slipway details, the
-- event before the summary, `prompt=` taking the rest of the line, value
-- completion, buffer care around runs and removed worktrees, a handoff that
-- does not flag the user's worktree, merge-to-head and lock messages,
-- quarantine findings, the branch picker's ahead/behind.
local H = require('harness')

local function set_agent(argv)
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, { agent = { type = 'command', command = argv } })
end

local function buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

H.test('messages are one line; the whole text is in :Slipway details', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created =
    H.slipway('new', { strategy = 'branch', branch = 'msg/dirty', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  H.write(created.path .. '/scratch.txt', 'x\n')
  H.script_select({ { kind = 'slipway.close', choose = 'keep' } })
  H.slipway('close', { worktree = 'msg/dirty' })
  local warning = H.wait_note('msg/dirty was kept')
  H.not_contains(warning.line, '\n', 'one line shown')
  H.contains(warning.line, ':Slipway details', 'the line says where the rest is')
  H.notes_one_line()
  vim.cmd('Slipway details')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(buf), 'slipway://details', 'the details buffer')
  local text = buf_text(buf)
  H.contains(text, 'msg/dirty was kept', 'the message')
  H.contains(text, 'scratch.txt', 'its details: what would be lost')
  H.contains(text, 'created worktree msg/dirty', 'earlier messages too')
end)

H.test('User SlipwayRunFinished fires before the summary is shown', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'echo hi > f.txt && git add f.txt && git commit -q -m f' })
  local notes_at_event
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayRunFinished',
    once = true,
    callback = function()
      notes_at_event = #H.notes
    end,
  })
  local ok = H.slipway('run', { strategy = 'branch', branch = 'ev/one', source = 'host_head', prompt = 'p' })
  H.ok(ok, 'started')
  local note = H.wait_note('completed: 1 commit on ev/one', 60000)
  H.ok(notes_at_event, 'the event fired')
  local index
  for i, n in ipairs(H.notes) do
    if n == note then
      index = i
    end
  end
  H.ok(
    notes_at_event < index,
    ('the event (after %d notes) came before the summary (note %d)'):format(notes_at_event, index)
  )
end)

H.test('prompt= takes the rest of the line', function()
  local commands = require('slipway.commands')
  H.eq(
    commands.parse(
      'run',
      { 'strategy=branch', 'prompt=tidy', 'the', 'changelog' },
      'strategy=branch prompt=tidy the  changelog'
    ),
    { strategy = 'branch', prompt = 'tidy the  changelog' },
    'parse'
  )
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'echo x > p.txt && git add p.txt && git commit -q -m "prompt: $SLIPWAY_PROMPT"' })
  vim.cmd('Slipway run strategy=branch branch=prompt/rest source=host_head prompt=tidy the changelog')
  H.wait_note('completed: 1 commit on prompt/rest', 60000)
  H.eq(
    H.git(repo, 'log', '-1', '--format=%s', 'prompt/rest'),
    'prompt: tidy the changelog',
    'the whole prompt reached the agent'
  )
end)

H.test('values complete: worktrees, runs, agents, sandboxes, policies, strategies', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'true' })
  local ok, created =
    H.slipway('new', { strategy = 'branch', branch = 'comp/one', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  H.wait(function()
    return vim.tbl_contains(vim.fn.getcompletion('Slipway close ', 'cmdline'), 'comp/one')
  end, 'close completes the branch: ' .. vim.inspect(vim.fn.getcompletion('Slipway close ', 'cmdline')))
  local close = vim.fn.getcompletion('Slipway close ', 'cmdline')
  H.ok(vim.tbl_contains(close, created.id), 'and the id: ' .. vim.inspect(close))
  for _, sub in ipairs({ 'review', 'land', 'discard', 'open', 'handoff' }) do
    H.ok(
      vim.tbl_contains(vim.fn.getcompletion('Slipway ' .. sub .. ' comp', 'cmdline'), 'comp/one'),
      sub .. ' completes it'
    )
  end
  local named = vim.fn.getcompletion('Slipway review worktree=comp', 'cmdline')
  H.eq(named[1], 'worktree=comp/one', 'worktree= completes the branch first: ' .. vim.inspect(named))
  local agents = vim.fn.getcompletion('Slipway run agent=', 'cmdline')
  H.ok(vim.tbl_contains(agents, 'agent=command') and vim.tbl_contains(agents, 'agent=claude-code'), vim.inspect(agents))
  local sandboxes = vim.fn.getcompletion('Slipway run sandbox=', 'cmdline')
  H.ok(
    vim.tbl_contains(sandboxes, 'sandbox=none') and vim.tbl_contains(sandboxes, 'sandbox=docker'),
    vim.inspect(sandboxes)
  )
  H.ok(vim.tbl_contains(vim.fn.getcompletion('Slipway new source=', 'cmdline'), 'source=host_head'), 'policies')
  H.ok(
    vim.tbl_contains(vim.fn.getcompletion('Slipway run strategy=', 'cmdline'), 'strategy=merge-to-head'),
    'strategies'
  )
  H.slipway('run', { strategy = 'branch', branch = 'comp/run', source = 'host_head', prompt = 'p' })
  local done = H.wait_note('completed', 60000)
  local run_id = done.msg:match('run (run%-%S+)')
  H.ok(vim.tbl_contains(vim.fn.getcompletion('Slipway log ', 'cmdline'), run_id), 'log completes the run id')
  H.ok(vim.tbl_contains(vim.fn.getcompletion('Slipway cancel run=', 'cmdline'), 'run=' .. run_id), 'run= too')
  H.eq(vim.fn.getcompletion('Slipway run prompt=fix ', 'cmdline'), {}, 'nothing inside a prompt')
end)

H.test('after a run the buffers of its worktree are reloaded', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'echo changed by the agent > README.md && git commit -q -am agent' })
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'buf/reload', source = 'host_head' })
  H.ok(ok, 'created')
  vim.cmd.edit(vim.fn.fnameescape(created.path .. '/README.md'))
  local buf = vim.api.nvim_get_current_buf()
  H.eq(buf_text(buf), 'hello', 'before')
  H.slipway('handoff', { prompt = 'change it' })
  H.wait_note('completed', 60000)
  H.wait(function()
    return buf_text(buf) == 'changed by the agent'
  end, 'the buffer reloaded: ' .. buf_text(buf), 5000)
end)

H.test('a handoff offers to write the modified buffers of the worktree first', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'git commit -q -am "agent saw: $(cat README.md)"' })
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'buf/wall', source = 'host_head' })
  H.ok(ok, 'created')
  vim.cmd.edit(vim.fn.fnameescape(created.path .. '/README.md'))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved edit' })
  H.script_select({ { kind = 'slipway.wall', choose = 'write' } })
  ok = H.slipway('handoff', { prompt = 'p' })
  H.ok(ok, 'handed off')
  H.contains(H.picker('slipway.wall').prompt, '1 modified buffer', 'the offer counts the buffers')
  H.wait_note('completed', 60000)
  H.eq(H.git(repo, 'log', '-1', '--format=%s', 'buf/wall'), 'agent saw: unsaved edit', 'the agent saw the written file')
end)

H.test('a removed worktree leaves no buffer that :w would fail on (E212)', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'buf/gone', source = 'host_head' })
  H.ok(ok, 'created')
  vim.cmd.edit(vim.fn.fnameescape(created.path .. '/README.md'))
  local clean = vim.api.nvim_get_current_buf()
  vim.cmd('vsplit ' .. vim.fn.fnameescape(created.path .. '/new.txt'))
  local edited = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(edited, 0, -1, false, { 'never written' })
  H.slipway('close', { worktree = 'buf/gone' })
  H.wait_note('closed buf/gone: worktree removed')
  H.ok(not H.exists(created.path), 'removed')
  H.ok(not vim.api.nvim_buf_is_valid(clean), 'the unmodified buffer is wiped')
  H.ok(vim.api.nvim_buf_is_valid(edited), 'the modified one keeps its text')
  H.eq(buf_text(edited), 'never written', 'its text')
  H.eq(vim.bo[edited].buftype, 'nofile', 'as a scratch buffer')
  H.ok(not vim.bo[edited].buflisted, 'unlisted')
  H.wait_note('kept as scratch')
  local wrote, err = pcall(vim.api.nvim_buf_call, edited, function()
    vim.cmd('write')
  end)
  H.not_contains(tostring(err), 'E212', ':w does not fail with E212 (' .. tostring(wrote) .. ')')
  H.ok(not H.exists(created.path), 'nothing recreated the worktree')
end)

H.test('a handoff does not flag the worktree the user works in as preserved', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'echo a > a.txt && git add a.txt && git commit -q -m a' })
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'mine', source = 'host_head' })
  H.ok(ok, 'created')
  H.write(created.path .. '/wip.txt', 'my work in progress\n')
  H.slipway('handoff', { prompt = 'p' })
  local note = H.wait_note('completed', 60000)
  H.not_contains(note.msg, 'kept', 'not "kept"')
  H.contains(note.msg, '(your worktree)', 'the summary says it is yours')
  H.wait(function()
    local _, w = require('slipway').status(created.path)
    return w and w.dirty and w.runId ~= nil
  end, 'the status after the run')
  -- One more change, seen in a later status push: whatever the sidecar was
  -- going to say about the run's end (a ⚠, diagnostics) it has said by then.
  H.write(created.path .. '/later.txt', 'later\n')
  H.wait(function()
    local _, w = require('slipway').status(created.path)
    return w and (w.changedFiles or 0) >= 2
  end, 'a later status push')
  H.eq(require('slipway').statusline(), '⎇ mine* ✓', 'no ⚠ in the status line (the run is done)')
  H.eq(H.slipway_diagnostics(), {}, 'no dirty-preserved-worktree diagnostics')
  local list = vim.fn.getcompletion('Slipway close ', 'cmdline')
  H.ok(vim.tbl_contains(list, 'mine'), 'still a worktree')
end)

H.test('merge-to-head: the summary says merged into the host branch (fast-forward), the host buffers reload', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  vim.cmd.edit(vim.fn.fnameescape(repo .. '/README.md'))
  local buf = vim.api.nvim_get_current_buf()
  set_agent({ 'sh', '-c', 'echo merged text > README.md && git commit -q -am m' })
  local ok = H.slipway('run', { strategy = 'merge-to-head', source = 'host_head', prompt = 'p' })
  H.ok(ok, 'started')
  local note = H.wait_note('completed', 60000)
  H.contains(note.line, '1 commit merged into main (fast-forward)', 'summary')
  H.not_contains(note.msg, 'slipway/merge-', 'not the deleted temporary branch')
  H.wait(function()
    return buf_text(buf) == 'merged text'
  end, 'the host buffer reloaded', 5000)
end)

H.test('a branch in use names the run holding it, not a pid and an epoch time', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  set_agent({ 'sh', '-c', 'sleep 30' }) -- allow-sleep: the first run holds the branch until the test ends
  local ok, first = H.slipway('run', { strategy = 'branch', branch = 'lk', source = 'host_head', prompt = 'p' })
  H.ok(ok, 'first run')
  H.wait(function()
    return require('slipway').statusline():find('⟳', 1, true)
  end, 'running')
  ok = H.slipway('run', { strategy = 'branch', branch = 'lk', source = 'host_head', prompt = 'again' })
  H.ok(not ok, 'the second run is refused')
  local note = H.wait_note("branch 'lk' is in use")
  H.contains(note.line, first.runId .. ' (command)', 'names the run and its agent')
  H.not_contains(note.line, 'process', 'no process id')
  H.ok(not note.line:gsub(vim.pesc(first.runId), ''):find('%d%d%d%d%d%d%d%d%d%d'), 'no epoch time: ' .. note.line)
  H.ok(note.line:find('since %d%d:%d%d:%d%d'), 'a clock time: ' .. note.line)
end)

H.test('quarantine findings are a warning naming each path', function()
  local repo = H.repo()
  -- The real result of a run that planted a nested .git and an escaping symlink.
  local res = H.system({
    vim.env.SLIPWAY_BIN,
    '--repo',
    repo,
    '--json',
    'run',
    '--strategy',
    'branch',
    '--branch',
    'q/x',
    '--',
    'sh',
    '-c',
    'mkdir -p sub/.git && ln -s /etc/passwd esc && echo hi > f.txt && git add f.txt && git commit -q -m f',
  }, repo)
  H.eq(res.code, 0, 'the CLI run: ' .. (res.stderr or ''))
  local result = vim.json.decode(res.stdout, { luanil = { object = true, array = true } })
  H.ok(#(result.quarantined or {}) == 2, 'the run reports two findings: ' .. vim.inspect(result.quarantined))
  result.root = repo
  require('slipway.runs').on_finished(0, result)
  local note = H.wait_note(': quarantined ')
  H.eq(note.level, vim.log.levels.WARN, 'a warning')
  -- The line shows the findings as far as the window has room (a run id and
  -- two findings do not fit in 120 columns); the message, in :Slipway
  -- details, names each.
  H.contains(note.line, ': quarantined esc (symlink leaving the worktree), sub/', 'the line, first')
  H.contains(note.msg, 'esc (symlink leaving the worktree)', 'the symlink')
  H.contains(note.msg, 'sub/.git (nested .git)', 'the nested .git')
  H.contains(note.msg, 'moved to ' .. repo .. '/.slipway/quarantine/', 'where they went')
end)

H.test('the branch picker shows ahead/behind against the upstream', function()
  local r = H.repo_with_remote()
  H.commit_file(r.repo, 'ahead.txt', 'a\n', 'local ahead')
  vim.cmd.cd(r.repo)
  H.script_select({
    { kind = 'slipway.branch', choose = 'origin/main' },
  })
  H.slipway('branch', { open = 'false' })
  local picker = H.picker('slipway.branch')
  local main
  for _, text in ipairs(picker.items) do
    if text:find('Local   main', 1, true) then
      main = text
    end
  end
  H.ok(main, 'main in the picker: ' .. vim.inspect(picker.items))
  H.contains(main, '↑1', 'one ahead of origin/main (the sidecar must answer ahead/behind to aheadBehind: true)')
  H.contains(main, '↓0', 'none behind')
end)

H.test('doc/tags is shipped and current: :help slipway works after rtp:append', function()
  local plugin = vim.fs.dirname(vim.fs.dirname(vim.api.nvim_get_runtime_file('lua/slipway/init.lua', false)[1]))
  plugin = vim.fs.dirname(plugin)
  local tags = plugin .. '/doc/tags'
  H.ok(H.exists(tags), 'doc/tags exists')
  local dir = H.tmpdir() .. '/doc'
  vim.fn.mkdir(dir, 'p')
  vim.uv.fs_copyfile(plugin .. '/doc/slipway.txt', dir .. '/slipway.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(dir))
  local function read(p)
    local fd = assert(io.open(p))
    local t = fd:read('*a')
    fd:close()
    return t
  end
  H.eq(read(tags), read(dir .. '/tags'), 'doc/tags is what :helptags makes of doc/slipway.txt')
  local res = H.system({
    vim.v.progpath,
    '--clean',
    '--headless',
    '-c',
    'lua vim.opt.rtp:append(' .. vim.inspect(plugin) .. ')',
    '-c',
    'help slipway',
    '-c',
    'lua io.stdout:write(vim.fn.expand("%:t") .. " " .. vim.fn.getline("."))',
    '-c',
    'qall!',
  })
  H.contains(res.stdout, 'slipway.txt', ':help slipway opens the plugin help: ' .. res.stdout .. res.stderr)
  res = H.system({
    vim.v.progpath,
    '--clean',
    '--headless',
    '-c',
    'lua vim.opt.rtp:append(' .. vim.inspect(plugin) .. ')',
    '-c',
    'help :Slipway-review',
    '-c',
    'lua io.stdout:write(vim.fn.getline("."))',
    '-c',
    'qall!',
  })
  H.contains(res.stdout, '*:Slipway-review*', ':help :Slipway-review')
end)
