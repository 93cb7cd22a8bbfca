-- `:Slipway review` (slipway.diff: the quickfix list, a file's diff), land
-- (modes from initialize's landModes), discard (after a confirmation), and
-- `:Slipway log` following a running agent (slipway.log + slipway/log).
local H = require('harness')

local function buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

--- A repository with a worktree `branch` holding two commits: README.md modified, src/new.sh added.
local function worktree_with_commits(branch)
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = branch, source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  H.commit_file(created.path, 'README.md', 'hello\nfrom the worktree\n', 'readme')
  H.commit_file(created.path, 'src/new.sh', 'echo 42\n', 'new file')
  return repo, created
end

--- The windows of the current tab: the quickfix one and the others, left to right.
local function tab_windows()
  local qf, others = nil, {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.bo[buf].buftype == 'quickfix' then
      qf = win
    else
      others[#others + 1] = win
    end
  end
  table.sort(others, function(a, b)
    return vim.api.nvim_win_get_position(a)[2] < vim.api.nvim_win_get_position(b)[2]
  end)
  return qf, others
end

H.test('review: the changed files in the quickfix list, a diff per file, then land', function()
  local repo, created = worktree_with_commits('rv/one')
  local ok, review = H.slipway('review', { worktree = 'rv/one' })
  H.ok(ok and review, 'review opened: ' .. H.debug_state())
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  H.contains(qf.title, 'slipway review rv/one', 'quickfix title')
  H.eq(#qf.items, 2, 'two changed files')
  local texts = {}
  for _, item in ipairs(qf.items) do
    texts[vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t')] = item.text
  end
  H.contains(texts['README.md'] or '', 'modified', 'README.md is modified')
  H.contains(texts['new.sh'] or '', 'added', 'new.sh is added')
  H.eq(vim.uv.fs_realpath(vim.fn.getcwd()), vim.uv.fs_realpath(created.path), 'the review tab is in the worktree')

  -- The first file's diff: base on the left, the worktree file on the right.
  local qwin, wins = tab_windows()
  H.ok(qwin, 'the quickfix window is open')
  H.eq(#wins, 2, 'two diff windows')
  local left, right = vim.api.nvim_win_get_buf(wins[1]), vim.api.nvim_win_get_buf(wins[2])
  local first = vim.api.nvim_buf_get_name(right):match('[^/]+$')
  H.contains(vim.api.nvim_buf_get_name(left), 'slipway://rv/one@base/', 'the base buffer')
  H.ok(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, 'both windows in diff mode')
  if first == 'README.md' then
    H.eq(buf_text(left), 'hello', 'the base text')
    H.eq(buf_text(right), 'hello\nfrom the worktree', 'the worktree file')
    H.eq(vim.bo[left].filetype, 'markdown', 'the base has the filetype')
  end
  H.eq(vim.bo[left].buftype, 'nofile', 'the base is a scratch buffer')
  H.eq(
    vim.uv.fs_realpath(vim.api.nvim_buf_get_name(right)),
    vim.uv.fs_realpath(created.path .. '/' .. (first == 'README.md' and 'README.md' or 'src/new.sh')),
    'the real file'
  )

  -- <CR> on the other entry in the quickfix list shows its diff.
  local other = first == 'README.md' and 'new.sh' or 'README.md'
  vim.api.nvim_set_current_win(qwin)
  for i, item in ipairs(qf.items) do
    if vim.api.nvim_buf_get_name(item.bufnr):match('[^/]+$') == other then
      vim.api.nvim_win_set_cursor(qwin, { i, 0 })
    end
  end
  vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
  H.wait(function()
    local _, w = tab_windows()
    return #w == 2 and vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w[2])):match('[^/]+$') == other
  end, 'the diff of ' .. other)
  _, wins = tab_windows()
  left = vim.api.nvim_win_get_buf(wins[1])
  if other == 'new.sh' then
    H.eq(buf_text(left), '', 'an added file has an empty base')
    H.eq(vim.bo[left].filetype, 'sh', 'the filetype of a shell script')
  else
    H.eq(buf_text(left), 'hello', 'the base text')
  end
  H.ok(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, 'both in diff mode again')

  -- Land from the review: the modes are the sidecar's landModes.
  vim.api.nvim_set_current_win(wins[2])
  H.script_select({ { kind = 'slipway.land', choose = 'merge' } })
  ok = H.slipway('land')
  H.ok(ok, 'landed: ' .. H.debug_state())
  local client = vim.lsp.get_clients({ name = 'slipway' })[1]
  H.eq(H.picker('slipway.land').raw, client.server_capabilities.experimental.slipway.landModes, 'the modes offered')
  H.wait_note('landed rv/one into main')
  local log = H.git(repo, 'log', '--format=%s', 'main')
  H.contains(log, 'readme', 'the commits are on main')
  H.contains(log, 'new file', 'both')
  H.eq(H.git(repo, 'status', '--porcelain'), '', 'the host checkout is clean')
  H.ok(H.exists(repo .. '/src/new.sh'), 'the host checkout has the file')
end)

H.test('discard asks first; keep keeps, discard removes worktree, branch, buffers and the review', function()
  local repo, created = worktree_with_commits('rv/gone')
  local ok = H.slipway('review', { worktree = 'rv/gone' })
  H.ok(ok, 'review')
  local tabs = #vim.api.nvim_list_tabpages()
  H.script_select({ { kind = 'slipway.discard', choose = 'keep' } })
  H.slipway('discard')
  H.contains(H.picker('slipway.discard').prompt, '2 commits', 'the confirmation says what is lost')
  H.ok(H.exists(created.path), 'kept')
  local file_buf = vim.fn.bufnr(created.path .. '/README.md')
  H.script_select({ { kind = 'slipway.discard', choose = 'discard' } })
  ok = H.slipway('discard', { worktree = 'rv/gone' })
  H.ok(ok, 'discarded: ' .. H.debug_state())
  H.wait_note('discarded rv/gone')
  H.ok(not H.exists(created.path), 'the worktree is gone')
  H.eq(H.git(repo, 'branch', '--list', 'rv/gone'), '', 'the branch is gone')
  H.ok(file_buf == -1 or not vim.api.nvim_buf_is_valid(file_buf), 'its buffers are wiped')
  H.eq(#vim.api.nvim_list_tabpages(), tabs - 1, 'the review tab closed')
end)

H.test('log: a buffer that follows a running agent and scrolls when the cursor is at the end', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, {
    agent = { type = 'command', command = { 'sh', '-c', 'for i in 1 2 3 4; do echo line$i; sleep 1; done' } }, -- allow-sleep: the agent prints over time so the log buffer follows it
  })
  local ok, started =
    H.slipway('run', { strategy = 'branch', branch = 'log/follow', source = 'host_head', prompt = 'p' })
  H.ok(ok, 'started')
  ok = H.slipway('log', { run = started.runId })
  H.ok(ok, 'log opened: ' .. H.debug_state())
  local buf = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(buf), 'slipway://log/' .. started.runId, 'the log buffer')
  local follow = vim.api.nvim_get_current_win()
  H.wait(function()
    return buf_text(buf):find('line1', 1, true)
  end, 'line1 in the log: ' .. buf_text(buf), 10000)
  H.not_contains(buf_text(buf), 'line4', 'the run is still going')
  -- A second window on the log whose cursor is not at the end stays put.
  vim.cmd('split')
  local still = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_cursor(still, { 1, 0 })
  vim.api.nvim_set_current_win(follow)
  vim.api.nvim_win_set_cursor(follow, { vim.api.nvim_buf_line_count(buf), 0 })
  H.wait(function()
    return buf_text(buf):find('line4', 1, true)
  end, 'line4 in the log', 15000)
  H.wait(function()
    return buf_text(buf):find('ended', 1, true)
  end, 'the end of the run in the log', 15000)
  H.eq(vim.api.nvim_win_get_cursor(follow)[1], vim.api.nvim_buf_line_count(buf), 'the window at the end followed')
  H.eq(vim.api.nvim_win_get_cursor(still)[1], 1, 'the other one stayed')
  local text = buf_text(buf)
  H.ok(text:find('line1') < text:find('line2') and text:find('line2') < text:find('line3'), 'in order: ' .. text)
  local _, n1 = text:gsub('line1', '')
  H.eq(n1, 1, 'no line twice')
end)
