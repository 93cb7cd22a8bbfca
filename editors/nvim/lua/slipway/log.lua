--- `:Slipway log`: a buffer that follows a run's output (`slipway.log` with
--- `follow`, then `slipway/log` notifications), scrolling along in each window
--- whose cursor is on the last line.

local lsp = require('slipway.lsp')

local M = {}

---@class slipway.LogView
---@field runId string
---@field root string
---@field buf integer
---@field next integer the byte offset read up to
---@field done boolean
---@field queue? table[] notifications that came before the answer

--- The log buffers, by run id.
---@type table<string, slipway.LogView>
M.views = {}

---@param run_id string
---@return string
local function buf_name(run_id)
  return 'slipway://log/' .. run_id
end

--- Appends `text` to the view's buffer: the last line of the buffer is the
--- line still being written. Windows whose cursor was on the last line follow.
---@param view slipway.LogView
---@param text string?
function M.append(view, text)
  if type(text) ~= 'string' or text == '' or not vim.api.nvim_buf_is_valid(view.buf) then
    return
  end
  local buf = view.buf
  local count = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= count then
      following[#following + 1] = win
    end
  end
  local lines = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ''
  lines[1] = last .. lines[1]
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, count - 1, count, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local total = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(following) do
    vim.api.nvim_win_set_cursor(win, { total, 0 })
  end
end

--- Marks the view's run as ended: a last line says so.
---@param view slipway.LogView
function M.finish(view)
  if view.done then
    return
  end
  view.done = true
  local status
  for _, p in ipairs(require('slipway.runs').finished) do
    if p.runId == view.runId then
      status = p.status
    end
  end
  M.append(view, ('\n[slipway: run %s ended%s]\n'):format(view.runId, status and (' ' .. status) or ''))
  vim.b[view.buf].slipway_log_done = true
end

--- Handler of `slipway/log`: `{runId, text, next, done}`.
---@param _ integer client id
---@param params { runId: string, text?: string, next?: integer, done?: boolean }
function M.on_log(_, params)
  if type(params) ~= 'table' then
    return
  end
  local view = M.views[params.runId]
  if not view or view.done or not vim.api.nvim_buf_is_valid(view.buf) then
    return
  end
  if view.queue then
    -- The answer to `slipway.log` has not been shown yet: this comes after it.
    view.queue[#view.queue + 1] = params
    return
  end
  M.append(view, params.text)
  if type(params.next) == 'number' then
    view.next = params.next
  end
  if params.done then
    M.finish(view)
  end
end

--- Opens the log of `run_id` in a split (re-using its buffer), in a flow.
---@param root string
---@param run_id string
---@return slipway.LogView
function M.open(root, run_id)
  local view = M.views[run_id]
  if view and vim.api.nvim_buf_is_valid(view.buf) and not view.done then
    local win = vim.fn.bufwinid(view.buf)
    if win == -1 then
      vim.cmd('botright sbuffer ' .. view.buf)
    else
      vim.api.nvim_set_current_win(win)
    end
    return view
  end
  if view and vim.api.nvim_buf_is_valid(view.buf) then
    pcall(vim.api.nvim_buf_delete, view.buf, { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, buf_name(run_id))
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'slipwaylog'
  vim.bo[buf].modifiable = false
  vim.b[buf].slipway_run = run_id
  vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true, desc = 'slipway: close the log' })
  view = { runId = run_id, root = root, buf = buf, next = 0, done = false, queue = {} }
  M.views[run_id] = view
  vim.cmd('botright sbuffer ' .. buf)
  local answer, err = lsp.call(root, 'slipway.log', { root = root, runId = run_id, follow = true })
  if err then
    view.queue = nil
    M.views[run_id] = nil
    lsp.fail(root, err)
  end
  M.append(view, answer.text)
  if type(answer.next) == 'number' then
    view.next = math.max(view.next, answer.next)
  end
  local queued = view.queue or {}
  view.queue = nil
  if answer.done then
    M.finish(view)
  end
  for _, params in ipairs(queued) do
    M.on_log(0, params)
  end
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(buf), 0 })
  end
  return view
end

return M
