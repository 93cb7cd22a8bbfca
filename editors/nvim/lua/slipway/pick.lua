--- Pickers over `vim.ui.select`, so that telescope, fzf-lua or snacks take
--- over when the user has them. The items come from the sidecar as they are.

local async = require('slipway.async')
local lsp = require('slipway.lsp')
local util = require('slipway.util')

local M = {}

---@class slipway.Branch
---@field name string `feature/x` or `origin/feature/x`
---@field kind 'local'|'remote'|'other'
---@field remote? string
---@field commit? string
---@field subject? string
---@field time? integer
---@field isHead? boolean
---@field isDefault? boolean
---@field upstream? string
---@field ahead? integer commits ahead of the upstream (asked with `aheadBehind`)
---@field behind? integer commits behind the upstream

local str = util.present

--- How a branch reads in the picker: its section, name, marks, commit and subject.
---@param b slipway.Branch
---@return string
function M.format_branch(b)
  local section = ({ ['local'] = 'Local ', remote = 'Remote', other = 'Other ' })[b.kind] or 'Other '
  local marks = {}
  if b.isHead then
    marks[#marks + 1] = 'HEAD'
  end
  if b.isDefault then
    marks[#marks + 1] = 'default'
  end
  local mark = #marks > 0 and (' [' .. table.concat(marks, ', ') .. ']') or ''
  local tail = ''
  if str(b.commit) then
    tail = '  ' .. util.short(b.commit)
  end
  if str(b.subject) then
    tail = tail .. '  ' .. b.subject
  end
  if str(b.upstream) then
    local ab = ''
    if type(b.ahead) == 'number' or type(b.behind) == 'number' then
      ab = (' ↑%d ↓%d'):format(tonumber(b.ahead) or 0, tonumber(b.behind) or 0)
    end
    tail = tail .. '  (tracks ' .. b.upstream .. ab .. ')'
  end
  return ('%s  %s%s%s'):format(section, b.name, mark, tail)
end

--- Every branch of the repository, local ones first (the sidecar's order).
---@param root string
---@return slipway.Branch[]
function M.branches(root)
  -- Ahead/behind against the upstream: a little slower, worth it in a picker.
  local result = lsp.must(root, 'slipway.branches', { root = root, aheadBehind = true })
  local locals, remotes = {}, {}
  for _, b in ipairs(result.branches or {}) do
    if b.kind == 'remote' then
      remotes[#remotes + 1] = b
    else
      locals[#locals + 1] = b
    end
  end
  vim.list_extend(locals, remotes)
  return locals
end

---@class slipway.BranchPickOpts
---@field prompt? string
---@field entries? slipway.Branch[] pick among these (the `choices` of a source error: whole branch entries) instead of listing the branches

--- The branch picker, in a flow: Local and Remote sections, HEAD and default
--- marked, a remote branch and a local one of the same name both shown.
---@param root string
---@param opts? slipway.BranchPickOpts
---@return slipway.Branch
function M.branch(root, opts)
  opts = opts or {}
  local items
  if opts.entries then
    -- The sidecar's choices are whole entries: no second `slipway.branches`.
    local locals, remotes = {}, {}
    for _, b in ipairs(opts.entries) do
      local list = b.kind == 'remote' and remotes or locals
      list[#list + 1] = b
    end
    items = vim.list_extend(locals, remotes)
  else
    items = M.branches(root)
  end
  if #items == 0 then
    async.fail('no branches to choose from in ' .. root)
  end
  return async.select(items, {
    prompt = opts.prompt or 'slipway: branch',
    kind = 'slipway.branch',
    format_item = M.format_branch,
  })
end

--- How a worktree reads in the picker.
---@param w slipway.WorktreeStatus
---@return string
function M.format_worktree(w)
  local bits = { w.branch, w.state }
  if w.dirty then
    bits[#bits + 1] = ('%d changed'):format(w.changedFiles or 0)
  end
  if (w.ahead or 0) > 0 then
    bits[#bits + 1] = ('%d ahead'):format(w.ahead)
  end
  if (tonumber(w.behind) or 0) > 0 then
    bits[#bits + 1] = ('%d behind'):format(w.behind)
  end
  return table.concat(bits, '  ')
end

--- Every slipway worktree of the repository.
---@param root string
---@return slipway.WorktreeStatus[]
function M.worktrees(root)
  local result = lsp.must(root, 'slipway.list', { root = root })
  return result.worktrees or {}
end

--- The worktree picker, in a flow. The worktree of the current buffer, if any, comes first.
---@param root string
---@param prompt? string
---@return slipway.WorktreeStatus
function M.worktree(root, prompt)
  local list = M.worktrees(root)
  if #list == 0 then
    async.fail('no slipway worktrees in ' .. root .. ' (create one with :Slipway new)')
  end
  local here = util.current_path()
  table.sort(list, function(a, b)
    local ah = util.is_within(here, util.realpath(a.path))
    local bh = util.is_within(here, util.realpath(b.path))
    if ah ~= bh then
      return ah
    end
    return a.branch < b.branch
  end)
  return async.select(list, {
    prompt = prompt or 'slipway: worktree',
    kind = 'slipway.worktree',
    format_item = M.format_worktree,
  })
end

---@class slipway.PolicyItem
---@field policy string
---@field label string

--- What each source branch policy does, for the picker; which policies there
--- are is the sidecar's (`lsp.names(root, 'policies')`).
local policy_labels = {
  host_head = 'host_head: the exact commit of the host HEAD',
  current_branch = "current_branch: the tip of the host's current branch",
  default = 'default: origin/HEAD, else init.defaultBranch, else main',
  named = 'named: a local or remote-tracking branch (pick it)',
  ask = 'ask: let slipway list the choices',
}

--- The source branch policies the sidecar accepts, as the picker offers them.
---@param root string
---@return slipway.PolicyItem[]
function M.policies(root)
  local items = {}
  for _, name in ipairs(lsp.names(root, 'policies')) do
    items[#items + 1] = { policy = name, label = policy_labels[name] or name }
  end
  return items
end

--- The source policy picker, in a flow; `named` opens the branch picker.
---@param root string
---@return table source a protocol `source` object
function M.source(root)
  local item = async.select(M.policies(root), {
    prompt = 'slipway: start from',
    kind = 'slipway.source',
    format_item = function(p)
      return p.label
    end,
  })
  if item.policy == 'named' then
    local b = M.branch(root, { prompt = 'slipway: start from branch' })
    return { policy = 'named', ref = b.name }
  end
  return { policy = item.policy }
end

return M
