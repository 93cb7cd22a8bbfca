--- The status cache, fed only by `slipway/status` notifications, and the
--- status line built from it. Reading it never sends a request and never blocks.

local util = require('slipway.util')

local M = {}

---@class slipway.WorktreeStatus
---@field id string
---@field path string
---@field branch string
---@field strategy string
---@field dirty boolean
---@field changedFiles integer
---@field changedPaths string[]
---@field ahead integer
---@field state 'active'|'running'|'preserved'
---@field why? string
---@field runId? string
---@field baseCommit string

---@class slipway.RunSummary
---@field runId string
---@field state 'running'|'finished'
---@field branch? string
---@field worktreePath? string

---@class slipway.Snapshot
---@field root string
---@field commonDir string
---@field worktrees slipway.WorktreeStatus[]
---@field runs slipway.RunSummary[]
---@field running integer
---@field dirtyPreserved integer

--- Latest `slipway/status` params per client id.
---@type table<integer, { repositories: slipway.Snapshot[] }>
M.by_client = {}

local function fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

--- Handler of `slipway/status`: replace the client's cache, fire `User SlipwayStatus`, redraw.
---@param client_id integer
---@param params { repositories: slipway.Snapshot[] }
function M.on_status(client_id, params)
  if type(params) ~= 'table' then
    return
  end
  M.by_client[client_id] = params
  util.forget_realpaths()
  M.follow_removals(params)
  fire('SlipwayStatus', { client_id = client_id, status = params })
  vim.cmd('redrawstatus!')
end

--- The worktree paths each repository had in its last status, by root.
---@type table<string, table<string, true>>
local known = {}

--- Worktrees removed from outside (the command line, another editor) are
--- forgotten here too: their buffers go, tabs leave them, their reviews end.
---@param params { repositories: slipway.Snapshot[] }
function M.follow_removals(params)
  for _, repo in ipairs(params.repositories or {}) do
    if type(repo.root) == 'string' and type(repo.worktrees) == 'table' then
      local now = {}
      for _, w in ipairs(repo.worktrees) do
        now[w.path] = true
      end
      for path in pairs(known[repo.root] or {}) do
        if not now[path] and not vim.uv.fs_stat(path) then
          pcall(require('slipway.commands').removed, path, repo.root)
        end
      end
      known[repo.root] = now
    end
  end
end

--- Drops what a stopped client said.
---@param client_id integer
function M.forget(client_id)
  if M.by_client[client_id] then
    M.by_client[client_id] = nil
    fire('SlipwayStatus', { client_id = client_id })
    pcall(vim.cmd, 'redrawstatus!')
  end
end

--- Every repository snapshot known (one per repository).
---@return slipway.Snapshot[]
function M.repositories()
  local seen, out = {}, {}
  for _, params in pairs(M.by_client) do
    for _, repo in ipairs(params.repositories or {}) do
      local key = repo.commonDir or repo.root
      if not seen[key] then
        seen[key] = true
        out[#out + 1] = repo
      end
    end
  end
  return out
end

--- The cached state of `path`: its repository snapshot and, when inside one, its worktree.
---@param path? string default: the current buffer's file, else the cwd
---@return slipway.Snapshot? repo
---@return slipway.WorktreeStatus? worktree
function M.lookup(path)
  path = path or util.current_path()
  for _, repo in ipairs(M.repositories()) do
    for _, w in ipairs(repo.worktrees or {}) do
      if util.is_within(path, util.realpath(w.path)) then
        return repo, w
      end
    end
  end
  for _, repo in ipairs(M.repositories()) do
    if repo.root and util.is_within(path, util.realpath(repo.root)) then
      return repo, nil
    end
  end
  return nil, nil
end

--- Every run the cache says is running, with its repository root.
---@return { run: slipway.RunSummary, root: string }[]
function M.running_runs()
  local out = {}
  for _, repo in ipairs(M.repositories()) do
    for _, run in ipairs(repo.runs or {}) do
      if run.state == 'running' then
        out[#out + 1] = { run = run, root = repo.root }
      end
    end
  end
  return out
end

--- Worktrees this editor handed off: the user works in them.
---@type table<string, true>
M.own = {}

--- Records that the user works in the worktree at `path`.
---@param path string
function M.claim(path)
  M.own[util.realpath(path)] = true
end

--- Whether the worktree at `path` is one the user works in: handed off from
--- this editor, or open here (a tab or
--- window directory, or a listed buffer, inside it). Such a worktree is never
--- flagged as preserved (no `⚠`, no diagnostics, no "kept" in run summaries).
---@param path string
---@return boolean
function M.is_yours(path)
  local dir = util.realpath(path)
  if M.own[dir] then
    return true
  end
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local tabnr = vim.api.nvim_tabpage_get_number(tab)
    if util.is_within(util.realpath(vim.fn.getcwd(-1, tabnr)), dir) then
      return true
    end
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
      local winnr = vim.api.nvim_win_get_number(win)
      if vim.fn.haslocaldir(winnr, tabnr) == 1 and util.is_within(util.realpath(vim.fn.getcwd(winnr, tabnr)), dir) then
        return true
      end
    end
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[buf].buflisted and vim.bo[buf].buftype == '' then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= '' and util.is_within(vim.fs.normalize(name), dir) then
        return true
      end
    end
  end
  return false
end

--- The dirty preserved worktrees of a snapshot, without those the user works in.
---@param repo slipway.Snapshot
---@return integer
function M.flagged(repo)
  if type(repo.worktrees) ~= 'table' then
    return repo.dirtyPreserved or 0
  end
  local n = 0
  for _, w in ipairs(repo.worktrees) do
    if w.state == 'preserved' and w.dirty and not M.is_yours(w.path) then
      n = n + 1
    end
  end
  return n
end

--- The runs part of the status line for `repo`: each running run with its
--- latest step (`⟳ editing src/a.rs`), and each run that ended here since
--- `:Slipway runs` was last shown (`✓ branch`, `✗ branch` when not completed),
--- and each run waiting for an answer (`? branch`, a `{ hl = 'SlipwayNeedsInput' }`
--- part). `w` is the worktree the status line is about: its own run needs no branch.
---@param repo slipway.Snapshot
---@param w? slipway.WorktreeStatus
---@param sym slipway.StatuslineOpts
---@return (string|{ text: string, hl: string })[]
local function run_parts(repo, w, sym)
  local activity = require('slipway.activity')
  local parts, others = {}, {}
  local running_here = w and w.state == 'running'
  for _, run in ipairs(repo.runs or {}) do
    if run.state == 'running' then
      local mine = running_here
        and (run.runId == w.runId or (run.worktreePath and util.realpath(run.worktreePath) == util.realpath(w.path)))
      if not mine then
        others[#others + 1] = run
      end
    end
  end
  local mark = vim.trim(sym.running or ' ⟳')
  if running_here then
    local step = activity.step(util.present(w.runId))
    parts[#parts + 1] = (sym.running or ' ⟳') .. (step and (' ' .. activity.cut(step, 30)) or '')
  end
  if #others == 1 then
    local run = others[1]
    local step = activity.step(run.runId)
    local label = util.present(run.branch) or run.runId
    parts[#parts + 1] = ' ' .. mark .. ' ' .. label .. (step and (': ' .. activity.cut(step, 30)) or '')
  elseif #others > 1 then
    parts[#parts + 1] = ' ' .. mark .. tostring(#others)
  end
  local root = repo.root and util.realpath(repo.root)
  -- A run waiting for an answer stands out: its own highlight, until replied.
  local asking = vim.tbl_keys(activity.waiting)
  table.sort(asking)
  for _, id in ipairs(asking) do
    local q = activity.waiting[id]
    if q.root == root then
      local ours = w and q.worktreePath and util.realpath(q.worktreePath) == util.realpath(w.path)
      parts[#parts + 1] = {
        hl = 'SlipwayNeedsInput',
        text = (sym.needs_input or ' ?') .. (ours and '' or (' ' .. (q.branch or id))),
      }
    end
  end
  local ids = vim.tbl_keys(activity.done)
  table.sort(ids)
  for _, id in ipairs(ids) do
    local d = activity.done[id]
    if d.root == root then
      local ok = d.status == 'completed'
      local sign = ok and (sym.done or ' ✓') or (sym.failed or ' ✗')
      local ours = w and d.worktreePath and util.realpath(d.worktreePath) == util.realpath(w.path)
      parts[#parts + 1] = sign .. (ours and '' or (' ' .. (d.branch or id)))
    end
  end
  return parts
end

--- `parts` as one string, trimmed; with `highlight`, a 'statusline' format
--- (`%{%…%}`): each `%` of their text doubled (a branch, an agent's step) so
--- that none is read as an item, and highlighted parts wrapped in `%#…#…%*`.
---@param parts (string|{ text: string, hl: string })[]
---@param highlight? boolean
---@return string
local function render(parts, highlight)
  local texts, first, last = {}, nil, nil
  for i, part in ipairs(parts) do
    -- Branches and steps come out of a repository or a sandbox.
    texts[i] = util.displayable(type(part) == 'table' and part.text or part)
    if texts[i]:find('%S') then
      first, last = first or i, i
    end
  end
  local out = {}
  for i = first or 1, last or 0 do
    local text = texts[i]
    if i == first then
      text = text:gsub('^%s+', '')
    end
    if i == last then
      text = text:gsub('%s+$', '')
    end
    if highlight then
      text = text:gsub('%%', '%%%%')
      if type(parts[i]) == 'table' then
        text = ('%%#%s#%s%%*'):format(parts[i].hl, text)
      end
    end
    out[#out + 1] = text
  end
  return table.concat(out)
end

--- A short status line string for the current buffer (or its cwd): the
--- worktree's branch, a dirty mark, its run's mark and latest step, the other
--- runs of the repository (running, or done since `:Slipway runs`), and the
--- count of dirty preserved worktrees. Empty outside slipway's knowledge.
---@param path? string
---@param opts? { highlight?: boolean } `highlight`: a 'statusline' format for `%{%…%}`
---@return string
function M.statusline(path, opts)
  local ok, result = pcall(function()
    local sym = require('slipway.config').get().statusline or {}
    local repo, w = M.lookup(path)
    if not repo then
      return ''
    end
    local parts = {}
    if w then
      parts[#parts + 1] = (sym.icon or '') .. w.branch
      if w.dirty then
        parts[#parts + 1] = sym.dirty or '*'
      end
    end
    vim.list_extend(parts, run_parts(repo, w, sym))
    local flagged = M.flagged(repo)
    if flagged > 0 then
      parts[#parts + 1] = (sym.preserved or ' ⚠') .. tostring(flagged)
    end
    return render(parts, opts and opts.highlight)
  end)
  return ok and result or ''
end

return M
