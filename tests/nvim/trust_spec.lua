-- A repository's slipway.toml that runs programs needs trust: `:Slipway run`
-- on an untrusted one shows what it would run and asks Trust or Cancel
-- (Cancel first, the default); Cancel runs nothing, Trust approves exactly
-- what was shown (`slipway.trust`) and sends the run again. A file that
-- changes after it was shown is shown again. The review flags files that run
-- programs.
local H = require('harness')

--- A repository whose committed slipway.toml runs a hook leaving `mark`, and
--- an agent that leaves `agent_mark`.
local function hooked_repo()
  local repo = H.repo()
  local dir = vim.fs.dirname(repo)
  local marks = dir .. '/marks'
  vim.fn.mkdir(marks, 'p')
  H.commit_file(
    repo,
    'slipway.toml',
    ('version = 2\n[hooks.host]\non_worktree_ready = ["touch %s/hook-ran"]\n'):format(marks),
    'config with a hook'
  )
  vim.g.slipway = vim.tbl_extend('force', vim.g.slipway, {
    agent = { type = 'command', command = { 'sh', '-c', ('touch %s/agent-ran'):format(marks) } },
  })
  vim.cmd.cd(repo)
  return repo, marks
end

local function marks_left(marks)
  local names = {}
  for name in vim.fs.dir(marks) do
    names[#names + 1] = name
  end
  table.sort(names)
  return names
end

local function run_args()
  return { strategy = 'merge-to-head', source = 'host_head', prompt = 'go' }
end

H.test('trust: Cancel (the default) runs nothing; Trust approves what was shown and the run goes', function()
  local repo, marks = hooked_repo()
  H.script_select({ { kind = 'slipway.trust', choose = 'Cancel' } })
  local ok = H.slipway('run', run_args())
  H.ok(not ok, 'the run flow ended without a run')
  local asked = H.picker('slipway.trust')
  H.eq(asked.items, { 'Cancel', 'Trust' }, 'Cancel is the first item, the one a picker starts on')
  H.contains(asked.prompt, ('touch %s/hook-ran'):format(marks), 'the prompt names the hook')
  H.ok(H.find_note('is not trusted yet'), 'the details say it is not trusted yet')
  H.ok(H.find_note('not trusted: nothing was done'), 'Cancel says nothing was done')
  H.eq(marks_left(marks), {}, 'nothing ran')
  H.eq(vim.fn.glob(repo .. '/.slipway/worktrees/*', true, true), {}, 'no worktree was made')

  H.script_select({ { kind = 'slipway.trust', choose = 'Trust' } })
  local finished
  vim.api.nvim_create_autocmd('User', {
    pattern = 'SlipwayRunFinished',
    once = true,
    callback = function(ev)
      finished = ev.data
    end,
  })
  local started_ok, started = H.slipway('run', run_args())
  H.ok(started_ok and started and started.runId, 'the run started once trusted: ' .. H.debug_state())
  H.wait_note('trusted slipway.toml')
  H.wait(function()
    return finished
  end, 'the run to finish', 60000)
  H.eq(marks_left(marks), { 'agent-ran', 'hook-ran' }, 'the approved hook and the agent ran')

  -- Approved once: the next run asks nothing.
  local again_ok = H.slipway('run', run_args())
  H.ok(again_ok, 'a second run starts without asking')
  H.eq(#vim.tbl_filter(function(p)
    return p.kind == 'slipway.trust'
  end, H.pickers), 2, 'two asks in all')
end)

H.test('trust: a file that changes after it was shown is shown again, and nothing is approved', function()
  local repo, marks = hooked_repo()
  local trust_dir = vim.env.XDG_CONFIG_HOME .. '/slipway/trust'
  local approvals = #vim.fn.glob(trust_dir .. '/*', true, true)
  H.script_select({
    {
      kind = 'slipway.trust',
      choose = function(item)
        if item ~= 'Trust' then
          return false
        end
        -- The agent (or anyone) changes the file while the question is open.
        H.write(
          repo .. '/slipway.toml',
          ('version = 2\n[hooks.host]\non_worktree_ready = ["touch %s/other-hook"]\n'):format(marks)
        )
        return true
      end,
    },
    { kind = 'slipway.trust', choose = 'Cancel' },
  })
  local ok = H.slipway('run', run_args())
  H.ok(not ok, 'cancelled at the second ask')
  local second = H.picker('slipway.trust')
  H.contains(second.prompt, 'other-hook', 'the second ask shows the new content')
  H.eq(marks_left(marks), {}, 'nothing ran')
  H.eq(#vim.fn.glob(trust_dir .. '/*', true, true), approvals, 'nothing was approved')
end)

H.test(
  'trust: a hook written to read backwards reaches the picker with U+FFFD, not its reordering character',
  function()
    local repo = H.repo()
    -- "true # <U+202E>gnp.tixe" would read "true # exit.png" in a picker that
    -- draws it as it is (fzf-lua and telescope hand rows to other renderers).
    H.commit_file(
      repo,
      'slipway.toml',
      'version = 2\n[hooks.host]\non_worktree_ready = ["true # \226\128\174gnp.tixe"]\n',
      'a hook'
    )
    vim.cmd.cd(repo)
    H.script_select({ { kind = 'slipway.trust', choose = 'Cancel' } })
    H.ok(not H.slipway('run', run_args()), 'cancelled')
    local asked = H.picker('slipway.trust')
    H.contains(asked.prompt, 'true # \239\191\189gnp.tixe', 'the prompt shows U+FFFD where the override was')
    H.not_contains(asked.prompt, '\226\128\174', 'and not the override itself')
  end
)

H.test('review: files that run programs are flagged as warnings', function()
  local repo = H.repo()
  vim.cmd.cd(repo)
  local ok, created = H.slipway('new', { strategy = 'branch', branch = 'tr/env', source = 'host_head', open = 'false' })
  H.ok(ok, 'created')
  H.commit_file(created.path, '.envrc', 'export X=1\n', 'an envrc')
  H.commit_file(created.path, 'notes.txt', 'notes\n', 'notes')
  local opened = H.slipway('review', { worktree = 'tr/env' })
  H.ok(opened, 'review opened')
  local items = vim.fn.getqflist({ items = 1 }).items
  local by_name = {}
  for _, item in ipairs(items) do
    by_name[vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t')] = item
  end
  H.contains(by_name['.envrc'].text, '! direnv runs it', 'the .envrc entry says what runs it')
  H.eq(by_name['.envrc'].type, 'W', 'and reads as a warning')
  H.not_contains(by_name['notes.txt'].text, '!', 'notes.txt is not flagged')
  H.eq(by_name['notes.txt'].type, '', 'notes.txt is a plain entry')
end)
