--- What each run's agent is doing (`slipway/runActivity`), the runs that ended
--- here since the user last looked at `:Slipway runs`, and how both read.

local util = require('slipway.util')

local M = {}

---@class slipway.Activity
---@field step? string the current step in people's words
---@field files? string[]
---@field filesTouched? integer
---@field turns? integer
---@field toolCalls? integer
---@field inputTokens? integer
---@field outputTokens? integer
---@field costUsd? number

--- The latest activity of each run, by run id.
---@type table<string, { root?: string, activity: slipway.Activity }>
M.latest = {}

--- Runs that ended while this editor was open, by run id, until `:Slipway runs`
--- shows them (the status line marks them done until then).
---@type table<string, { root?: string, status: string, branch?: string, worktreePath?: string }>
M.done = {}

--- Runs that ended asking the user (`needsInput`), by run id, until a reply
--- answers them: the status line marks them, `:Slipway reply` offers them.
---@type table<string, { root?: string, question: string, branch?: string, worktreePath?: string }>
M.waiting = {}

--- The runs last listed in the runs view, and their repository.
---@type { root: string, runs: table[] }?
local shown

--- Handler of `slipway/runActivity`: the latest activity kept, `User
--- SlipwayRunActivity` fired, status lines and an open runs view redrawn.
---@param client_id integer
---@param params { root?: string, runId: string, activity: slipway.Activity }
function M.on_activity(client_id, params)
  if type(params) ~= 'table' or type(params.runId) ~= 'string' or type(params.activity) ~= 'table' then
    return
  end
  local root = util.present(params.root)
  if not root then
    local client = vim.lsp.get_client_by_id(client_id)
    root = client and client.root_dir or nil
  end
  M.latest[params.runId] = { root = root and util.realpath(root) or nil, activity = params.activity }
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'SlipwayRunActivity',
    modeline = false,
    data = { client_id = client_id, root = root, runId = params.runId, activity = params.activity },
  })
  M.redraw_view()
  vim.cmd('redrawstatus!')
end

--- Records the end of a run (from `slipway/runFinished`).
---@param p slipway.RunFinished
function M.on_finished(p)
  if type(p.runId) ~= 'string' then
    return
  end
  local entry = {
    root = p.root and util.realpath(p.root) or nil,
    status = tostring(p.status),
    branch = util.present(p.branch),
    worktreePath = util.present(p.worktreePath),
  }
  if p.status == 'needsInput' then
    local q = type(p.question) == 'table' and util.present(p.question.text) or nil
    M.waiting[p.runId] = vim.tbl_extend('force', entry, { question = q or '(the agent asks for input)' })
  else
    M.done[p.runId] = entry
  end
  -- A reply that ended answered its question, whatever it found.
  local previous = util.present(p.replyTo)
  if type(previous) == 'string' and p.status ~= 'failed' and p.status ~= 'cancelled' then
    M.waiting[previous] = nil
  end
  for _, r in ipairs(shown and shown.runs or {}) do
    if r.runId == p.runId then
      r.status = p.status
      r.elapsedSecs = r.startedAt and os.time() - r.startedAt or r.elapsedSecs
    end
  end
  M.redraw_view()
end

--- A new run in the worktree at `path`: the end of its earlier one is old news.
---@param path string
function M.forget_done(path)
  local dir = util.realpath(path)
  for id, d in pairs(M.done) do
    if d.worktreePath and util.realpath(d.worktreePath) == dir then
      M.done[id] = nil
    end
  end
end

--- The latest step of run `run_id`, or nil.
---@param run_id string?
---@return string?
function M.step(run_id)
  local entry = run_id and M.latest[run_id]
  return entry and util.present(entry.activity.step) or nil
end

--- `text` cut to `width` display cells, with `…` when cut.
---@param text string
---@param width integer
---@return string
function M.cut(text, width)
  text = text:gsub('%s+', ' ')
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  return vim.fn.strcharpart(text, 0, width - 1) .. '…'
end

--- `95` → `1m35s`.
---@param secs number?
---@return string?
function M.elapsed_text(secs)
  if type(secs) ~= 'number' or secs < 0 then
    return nil
  end
  secs = math.floor(secs)
  if secs < 60 then
    return secs .. 's'
  elseif secs < 3600 then
    return ('%dm%02ds'):format(math.floor(secs / 60), secs % 60)
  end
  return ('%dh%02dm'):format(math.floor(secs / 3600), math.floor(secs % 3600 / 60))
end

--- Tokens and cost so far: `12.3k tokens $0.42`; nil when the agent reported neither.
---@param a slipway.Activity?
---@return string?
function M.usage_text(a)
  if type(a) ~= 'table' then
    return nil
  end
  local parts = {}
  local input, output = tonumber(util.present(a.inputTokens)), tonumber(util.present(a.outputTokens))
  if input or output then
    local n = (input or 0) + (output or 0)
    parts[#parts + 1] = (n >= 1000 and ('%.1fk'):format(n / 1000) or tostring(n)) .. ' tokens'
  end
  local cost = tonumber(util.present(a.costUsd))
  if cost then
    parts[#parts + 1] = ('$%.2f'):format(cost)
  end
  return #parts > 0 and table.concat(parts, ' ') or nil
end

--- A run of `slipway.runs` with the activity this editor heard since (newer).
---@param r table
---@return slipway.Activity?
local function activity_of(r)
  local heard = M.latest[r.runId]
  if heard then
    return heard.activity
  end
  return type(r.activity) == 'table' and r.activity or nil
end

--- How long run `r` has run: to its end, else until now.
---@param r table
---@return number?
local function elapsed_of(r)
  local started = tonumber(util.present(r.startedAt))
  if r.status == 'running' and started then
    return os.time() - started
  end
  return tonumber(util.present(r.elapsedSecs))
end

--- One row of the runs view: id, status, branch, agent, elapsed, step, tokens and cost.
---@param r table a run of `slipway.runs`
---@return string
function M.row(r)
  local a = activity_of(r)
  local agent = type(r.agent) == 'table' and r.agent.type or util.present(r.agent)
  local parts = { r.runId, tostring(r.status) }
  parts[#parts + 1] = util.present(r.branch) or '-'
  if agent then
    parts[#parts + 1] = tostring(agent)
  end
  parts[#parts + 1] = M.elapsed_text(elapsed_of(r)) or '-'
  parts[#parts + 1] = M.usage_text(a)
  local step = a and util.present(a.step) or util.present(r.lastLine)
  if step then
    parts[#parts + 1] = '· ' .. M.cut(step, 60)
  end
  return table.concat(parts, '  ')
end

--- The view's name.
M.VIEW = 'slipway://runs'

--- The lines of the runs view.
---@return string[]
local function view_lines()
  if not shown then
    return {}
  end
  local lines = { ('%d run%s in %s'):format(#shown.runs, #shown.runs == 1 and '' or 's', shown.root) }
  for _, r in ipairs(shown.runs) do
    lines[#lines + 1] = '  ' .. M.row(r)
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = 'q closes; :Slipway log RUN follows one, :Slipway cancel RUN stops it'
  return lines
end

--- Shows the runs of `root` in the `slipway://runs` buffer; the runs that
--- ended there are no longer marked done in the status line.
---@param root string
---@param runs table[] the runs of `slipway.runs`
---@return integer buf
function M.show(root, runs)
  shown = { root = root, runs = runs }
  local real = util.realpath(root)
  for id, d in pairs(M.done) do
    if d.root == real then
      M.done[id] = nil
    end
  end
  vim.cmd('redrawstatus!')
  return util.show_lines(M.VIEW, view_lines())
end

--- Renders the runs view again, with the activity heard since, when it is on screen.
function M.redraw_view()
  local buf = vim.fn.bufnr('^' .. vim.fn.escape(M.VIEW, '^$.*[]~\\/') .. '$')
  if buf == -1 or not shown or vim.fn.bufwinid(buf) == -1 then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, view_lines())
  vim.bo[buf].modifiable = false
end

return M
