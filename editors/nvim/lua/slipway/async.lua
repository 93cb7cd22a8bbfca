--- A tiny coroutine helper so that command flows (picker, input, request,
--- picker again) read top to bottom. Nothing here ever blocks the editor.

local M = {}

--- Raised (as an error value) when the user dismisses a picker or an input: the flow stops quietly.
M.cancelled = setmetatable({}, {
  __tostring = function()
    return 'cancelled'
  end,
})

---@class slipway.Failure
---@field slipway_failure true
---@field message string

--- Stops the current flow with a message shown to the user (no stack trace).
---@param message string
function M.fail(message)
  error({ slipway_failure = true, message = message }, 0)
end

---@param err any
local function report(err)
  if err == M.cancelled then
    return
  end
  if type(err) == 'table' and err.slipway_failure then
    require('slipway.util').notify(err.message, vim.log.levels.ERROR)
    return
  end
  require('slipway.util').notify('internal error: ' .. tostring(err) .. '\n' .. debug.traceback(), vim.log.levels.ERROR)
end

--- The resume function of each flow in progress.
---@type table<thread, fun(...)>
local steps = {}

--- Runs `fn` as a flow; errors end up in `vim.notify`, `on_done(ok, result)` follows.
---@param fn fun(): any
---@param on_done? fun(ok: boolean, result: any)
function M.run(fn, on_done)
  local co = coroutine.create(fn)
  local function step(...)
    local ok, result = coroutine.resume(co, ...)
    if not ok then
      steps[co] = nil
      report(result)
      if on_done then
        on_done(false, result)
      end
    elseif coroutine.status(co) == 'dead' then
      steps[co] = nil
      if on_done then
        on_done(true, result)
      end
    end
  end
  steps[co] = step
  step()
end

--- Waits inside a flow for `start(callback)` to call back; returns what it was called with.
---@param start fun(callback: fun(...))
---@return ...
function M.await(start)
  local co = coroutine.running()
  local step = co and steps[co]
  assert(step, 'slipway: await outside a flow')
  local sync, done, results = true, false, nil
  start(function(...)
    if done then
      return
    end
    done = true
    if sync then
      results = vim.F.pack_len(...)
    else
      local args = vim.F.pack_len(...)
      vim.schedule(function()
        step(vim.F.unpack_len(args))
      end)
    end
  end)
  sync = false
  if results then
    return vim.F.unpack_len(results)
  end
  return coroutine.yield()
end

--- `vim.ui.select` inside a flow; a dismissed picker ends the flow.
---@generic T
---@param items T[]
---@param opts table options of `vim.ui.select`
---@return T item
---@return integer index
function M.select(items, opts)
  local util = require('slipway.util')
  -- What was said before the question is on the screen before it.
  util.flush_now()
  -- The rows name branches and files from a repository or a sandbox: whatever
  -- picker draws them (telescope, fzf-lua) gets them cleaned.
  local format = opts.format_item or tostring
  local shown_opts = vim.tbl_extend('force', opts, {
    prompt = opts.prompt and util.displayable(opts.prompt, true),
    format_item = function(item)
      return util.displayable(format(item))
    end,
  })
  local item, idx = M.await(function(cb)
    vim.ui.select(items, shown_opts, cb)
  end)
  if item == nil then
    error(M.cancelled, 0)
  end
  return item, idx
end

--- `vim.ui.input` inside a flow; a dismissed or empty input ends the flow.
---@param opts table options of `vim.ui.input`
---@param allow_empty? boolean
---@return string
function M.input(opts, allow_empty)
  local util = require('slipway.util')
  util.flush_now()
  local shown_opts = vim.tbl_extend('force', opts, { prompt = opts.prompt and util.displayable(opts.prompt, true) })
  local text = M.await(function(cb)
    vim.ui.input(shown_opts, cb)
  end)
  if text == nil or (text == '' and not allow_empty) then
    error(M.cancelled, 0)
  end
  return text
end

return M
