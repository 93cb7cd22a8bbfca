--- `:Slipway attempts [GROUP]`: a group of attempts side by side
--- (`slipway.attempts`) in a scratch buffer, one row per attempt; from there
--- an attempt's diff (the review), a diff between two attempts
--- (`slipway.diff` with `against`), and landing the winner
--- (`slipway.landAttempt`). The view follows the group's runs as they end.

local activity = require('slipway.activity')
local async = require('slipway.async')
local lsp = require('slipway.lsp')
local util = require('slipway.util')

local M = {}

---@class slipway.AttemptRow
---@field index integer
---@field runId string
---@field agent string
---@field branch string
---@field branchPresent boolean
---@field status? string
---@field check? { command: string, passed: boolean, exitCode?: integer, tail?: string[] }
---@field filesChanged? integer
---@field linesAdded? integer
---@field linesRemoved? integer
---@field seconds? integer
---@field usage? { inputTokens?: integer, outputTokens?: integer, costUsd?: number }

---@class slipway.AttemptsView
---@field root string
---@field groupId string
---@field buf integer
---@field comparison table the answer of `slipway.attempts`
---@field first_row integer the buffer line of attempt 1

--- The open views, by buffer.
---@type table<integer, slipway.AttemptsView>
M.views = {}

--- The lines above the rows: what the group is, the keys, the column names.
local HEADER = 3

--- The keys of the view, as its second line shows them.
M.KEYS = '<CR> diff · d diff against another · L land this one · r refresh · q close'

--- How a group reads in the picker.
---@param g table a group of `slipway.attemptGroups`
---@return string
function M.format_group(g)
  local parts = { tostring(g.groupId), ('%d attempt%s'):format(g.attempts or 0, g.attempts == 1 and '' or 's') }
  if (tonumber(g.running) or 0) > 0 then
    parts[#parts + 1] = ('%d running'):format(g.running)
  end
  local age = activity.elapsed_text(tonumber(g.created) and os.time() - g.created)
  if age then
    parts[#parts + 1] = age .. ' ago'
  end
  local prompt = util.present(g.prompt)
  if prompt then
    parts[#parts + 1] = activity.cut(prompt, 60)
  end
  return table.concat(parts, '  ')
end

--- A check result in a few characters: `pass`, `fail (exit 4)`, `-` without one.
---@param check table?
---@return string
function M.check_text(check)
  if type(check) ~= 'table' then
    return '-'
  end
  if check.passed == true then
    return 'pass'
  end
  local code = tonumber(util.present(check.exitCode))
  return code and ('fail (exit %d)'):format(code) or 'fail'
end

--- Tokens and cost of an attempt, `-` when its agent reported none.
---@param usage table?
---@return string
local function usage_text(usage)
  return activity.usage_text(type(usage) == 'table' and usage or nil) or '-'
end

--- One row: index, agent, status, check, files, +/- lines, time, tokens/cost, branch.
---@param r slipway.AttemptRow
---@return string
function M.row(r)
  local branch = r.branch .. (r.branchPresent == false and ' (gone)' or '')
  return ('%-3s %-12s %-10s %-14s %5s  %-11s %7s  %-18s %s'):format(
    tostring(r.index),
    activity.cut(tostring(r.agent), 12),
    tostring(util.present(r.status) or 'unknown'),
    M.check_text(r.check),
    tostring(tonumber(r.filesChanged) or 0),
    ('+%d -%d'):format(tonumber(r.linesAdded) or 0, tonumber(r.linesRemoved) or 0),
    activity.elapsed_text(tonumber(util.present(r.seconds))) or '-',
    usage_text(r.usage),
    branch
  )
end

--- The view's lines.
---@param c table the answer of `slipway.attempts`
---@return string[]
local function lines_of(c)
  local check = util.present(c.check)
  local lines = {
    ('attempts %s from %s%s'):format(
      tostring(c.groupId),
      util.short(tostring(c.sourceCommit)),
      check and (' · check: ' .. check) or ''
    ),
    M.KEYS,
    ('%-3s %-12s %-10s %-14s %5s  %-11s %7s  %-18s %s'):format(
      '#',
      'agent',
      'status',
      'check',
      'files',
      'lines',
      'time',
      'tokens/cost',
      'branch'
    ),
  }
  for _, r in ipairs(c.rows or {}) do
    lines[#lines + 1] = M.row(r)
  end
  return lines
end

--- The view's buffer name.
---@param group string
---@return string
local function view_name(group)
  return 'slipway://attempts/' .. group
end

--- Writes the view's lines into its buffer.
---@param v slipway.AttemptsView
local function render(v)
  if not vim.api.nvim_buf_is_valid(v.buf) then
    M.views[v.buf] = nil
    return
  end
  vim.bo[v.buf].modifiable = true
  vim.api.nvim_buf_set_lines(v.buf, 0, -1, false, lines_of(v.comparison))
  vim.bo[v.buf].modifiable = false
end

--- Reads the group again and redraws the view, in a flow.
---@param v slipway.AttemptsView
function M.refresh(v)
  v.comparison = lsp.must(v.root, 'slipway.attempts', { root = v.root, groupId = v.groupId })
  render(v)
end

--- The attempt on the cursor's line of the view, or nil.
---@param v slipway.AttemptsView
---@return slipway.AttemptRow?
function M.row_at_cursor(v)
  local line = vim.api.nvim_win_get_cursor(0)[1]
  return (v.comparison.rows or {})[line - v.first_row + 1]
end

--- The attempt on the cursor, with its branch still there; ends the flow otherwise.
---@param v slipway.AttemptsView
---@return slipway.AttemptRow
local function need_row(v)
  local r = M.row_at_cursor(v)
  if not r then
    async.fail(("put the cursor on an attempt's row (line %d or below)"):format(v.first_row))
  end
  if r.branchPresent == false then
    async.fail(('attempt %d has no branch any more (%s was landed or discarded)'):format(r.index, r.branch))
  end
  return r
end

--- The worktree folder of each branch, from `slipway.list`.
---@param root string
---@return table<string, string>
local function worktree_paths(root)
  local out = {}
  for _, w in ipairs(lsp.must(root, 'slipway.list', { root = root }).worktrees or {}) do
    if util.present(w.branch) and util.present(w.path) then
      out[w.branch] = w.path
    end
  end
  return out
end

--- Opens the review of attempt `r` (against attempt `other`'s tip when given), in a flow.
---@param v slipway.AttemptsView
---@param r slipway.AttemptRow
---@param other? slipway.AttemptRow
---@return slipway.Review?
function M.diff(v, r, other)
  local w = { id = r.branch, branch = r.branch, path = worktree_paths(v.root)[r.branch] }
  return require('slipway.review').open(v.root, w, { against = other and other.branch or nil })
end

--- The choices of the land confirmation.
M.LAND_CHOICES = {
  safe = 'land it, and discard the others where nothing would be lost',
  force = 'land it, and discard the others even losing their work',
  cancel = 'cancel',
}

--- What a pick did, for people: landed, discarded, kept and why.
---@param r slipway.AttemptRow
---@param picked table the answer of `slipway.landAttempt`
---@return string
function M.picked_text(r, picked)
  local landed = type(picked.landed) == 'table' and picked.landed or {}
  local lines = {
    ('landed attempt %d (%s) into %s%s'):format(
      r.index,
      r.branch,
      tostring(util.present(landed.into) or 'the host branch'),
      util.present(landed.commit) and (' ' .. util.short(landed.commit)) or ''
    ),
  }
  local discarded = vim.tbl_map(tostring, picked.discarded or {})
  if #discarded > 0 then
    lines[1] = lines[1] .. '; discarded attempts ' .. table.concat(discarded, ', ')
  end
  for _, k in ipairs(picked.kept or {}) do
    lines[#lines + 1] = ('kept attempt %s (%s): %s'):format(tostring(k.index), tostring(k.branch), tostring(k.reason))
  end
  if #(picked.kept or {}) > 0 then
    lines[1] = lines[1] .. ('; kept %d'):format(#picked.kept)
  end
  return table.concat(lines, '\n')
end

--- Lands attempt `r` after a confirmation, then discards the others, in a flow.
---@param v slipway.AttemptsView
---@param r slipway.AttemptRow
---@return table? picked the answer of `slipway.landAttempt`
function M.land(v, r)
  local choice = async.select({ M.LAND_CHOICES.safe, M.LAND_CHOICES.force, M.LAND_CHOICES.cancel }, {
    prompt = ('slipway: land attempt %d (%s) of %s?'):format(r.index, r.branch, v.groupId),
    kind = 'slipway.landAttempt',
  })
  if choice == M.LAND_CHOICES.cancel then
    return nil
  end
  local paths = worktree_paths(v.root)
  local picked = lsp.must(v.root, 'slipway.landAttempt', {
    root = v.root,
    groupId = v.groupId,
    index = r.index,
    force = choice == M.LAND_CHOICES.force,
  })
  util.notify(M.picked_text(r, picked))
  require('slipway.buffers').reload({ v.root })
  for _, path in pairs(paths) do
    if not vim.uv.fs_stat(path) then
      require('slipway.commands').removed(path, v.root)
    end
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'SlipwayLanded',
    modeline = false,
    data = vim.tbl_extend('force', { root = v.root, worktree = r.branch, branch = r.branch }, picked),
  })
  M.refresh(v)
  return picked
end

--- The view's key mappings.
---@param v slipway.AttemptsView
local function map_keys(v)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, function()
      async.run(function()
        return fn()
      end)
    end, { buffer = v.buf, nowait = true, desc = 'slipway attempts: ' .. desc })
  end
  map('<CR>', function()
    return M.diff(v, need_row(v))
  end, "the attempt's diff")
  map('d', function()
    local r = need_row(v)
    local text = async.input({ prompt = ('slipway: diff attempt %d against attempt #: '):format(r.index) })
    local other = (v.comparison.rows or {})[tonumber(vim.trim(text)) or -1]
    if not other then
      async.fail(('no attempt %s in %s'):format(text, v.groupId))
    end
    if other.branchPresent == false then
      async.fail(('attempt %d has no branch any more'):format(other.index))
    end
    return M.diff(v, r, other)
  end, 'diff against another attempt')
  map('L', function()
    return M.land(v, need_row(v))
  end, 'land this attempt, discard the others')
  map('r', function()
    return M.refresh(v)
  end, 'refresh')
  map('q', function()
    M.close(v)
  end, 'close')
end

--- Closes a view: its window and buffer go.
---@param v slipway.AttemptsView
function M.close(v)
  M.views[v.buf] = nil
  if vim.api.nvim_buf_is_valid(v.buf) then
    vim.api.nvim_buf_delete(v.buf, { force = true })
  end
end

--- Opens (or refreshes) the view of group `group` of `root`, in a flow.
---@param root string
---@param group string
---@return slipway.AttemptsView
function M.open(root, group)
  local comparison = lsp.must(root, 'slipway.attempts', { root = root, groupId = group })
  local buf = util.show_lines(view_name(group), lines_of(comparison))
  vim.bo[buf].filetype = 'slipway-attempts'
  local v = M.views[buf]
  if v then
    v.comparison = comparison
  else
    v = { root = root, groupId = group, buf = buf, comparison = comparison, first_row = HEADER + 1 }
    M.views[buf] = v
    map_keys(v)
  end
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 and #(comparison.rows or {}) > 0 then
    vim.api.nvim_win_set_cursor(win, { v.first_row, 0 })
  end
  return v
end

--- Asks which group, from `slipway.attemptGroups`, in a flow.
---@param root string
---@return string group id
function M.pick_group(root)
  local groups = lsp.must(root, 'slipway.attemptGroups', { root = root }).groups or {}
  if #groups == 0 then
    async.fail(('no groups of attempts in %s (:Slipway run with attempts, or slipway run --attempts N)'):format(root))
  end
  local g = async.select(groups, {
    prompt = 'slipway: compare the attempts of',
    kind = 'slipway.attemptGroup',
    format_item = M.format_group,
  })
  return g.groupId
end

--- A run ended: the views holding it read their group again.
---@param run_id string
function M.on_run_finished(run_id)
  for _, v in pairs(M.views) do
    for _, r in ipairs(v.comparison.rows or {}) do
      if r.runId == run_id then
        async.run(function()
          M.refresh(v)
        end)
        break
      end
    end
  end
end

vim.api.nvim_create_autocmd('User', {
  pattern = 'SlipwayRunFinished',
  group = vim.api.nvim_create_augroup('slipway.attempts', {}),
  desc = 'slipway: an attempts view follows its runs',
  callback = function(ev)
    local id = type(ev.data) == 'table' and ev.data.runId or nil
    if type(id) == 'string' then
      M.on_run_finished(id)
    end
  end,
})

vim.api.nvim_create_autocmd('BufWipeout', {
  group = vim.api.nvim_create_augroup('slipway.attempts.wipe', {}),
  pattern = 'slipway://attempts/*',
  desc = 'slipway: forget a closed attempts view',
  callback = function(ev)
    M.views[ev.buf] = nil
  end,
})

return M
