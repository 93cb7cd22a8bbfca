--- Buffer care around worktrees: reload after a run, write before a handoff,
--- forget buffers of a worktree that was removed.

local async = require('slipway.async')
local util = require('slipway.util')

local M = {}

--- The loaded buffers of files inside `dir`.
---@param dir string
---@return integer[]
function M.in_dir(dir)
  local raw = vim.fs.normalize(dir)
  local real = util.realpath(raw)
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if
      vim.api.nvim_buf_is_loaded(buf)
      and vim.bo[buf].buftype == ''
      and name ~= ''
      and not name:match('^%a[%w+.-]*://')
    then
      local path = vim.fs.normalize(name)
      if util.is_within(path, raw) or util.is_within(path, real) or util.is_within(util.realpath(path), real) then
        out[#out + 1] = buf
      end
    end
  end
  return out
end

--- The buffers in `dir` with unsaved changes.
---@param dir string
---@return integer[]
function M.modified_in(dir)
  return vim.tbl_filter(function(buf)
    return vim.bo[buf].modified
  end, M.in_dir(dir))
end

--- `:checktime` for every buffer of a file in one of `dirs` (files a run changed are reloaded).
---@param dirs string[]
function M.reload(dirs)
  local seen = {}
  for _, dir in ipairs(dirs) do
    for _, buf in ipairs(M.in_dir(dir)) do
      if not seen[buf] then
        seen[buf] = true
        pcall(vim.cmd, 'checktime ' .. buf)
      end
    end
  end
end

--- Forgets the buffers of a worktree that was removed, so that `:w` cannot fail
--- with E212: unmodified ones are wiped; modified ones keep their text as
--- unlisted scratch buffers (`buftype=nofile`), and a message says so.
---@param dir string the removed worktree's path
---@return integer wiped
---@return integer kept
function M.forget(dir)
  local wiped, kept = 0, 0
  for _, buf in ipairs(M.in_dir(dir)) do
    if vim.bo[buf].modified then
      vim.bo[buf].buftype = 'nofile'
      vim.bo[buf].buflisted = false
      vim.bo[buf].swapfile = false
      kept = kept + 1
    else
      -- A buffer shown in a window: give the window another buffer first.
      for _, win in ipairs(vim.fn.win_findbuf(buf)) do
        vim.api.nvim_win_call(win, function()
          local alt = vim.fn.bufnr('#')
          if alt > 0 and alt ~= buf and vim.api.nvim_buf_is_valid(alt) and vim.bo[alt].buflisted then
            vim.cmd('buffer ' .. alt)
          else
            vim.cmd('enew')
          end
        end)
      end
      if pcall(vim.api.nvim_buf_delete, buf, { force = true }) then
        wiped = wiped + 1
      end
    end
  end
  if kept > 0 then
    util.notify(
      ('%d modified buffer%s of the removed worktree %s kept as scratch (not written anywhere)'):format(
        kept,
        kept == 1 and '' or 's',
        dir
      ),
      vim.log.levels.WARN
    )
  end
  return wiped, kept
end

--- In a flow: when buffers of `dir` have unsaved changes, offers to write them
--- first (`:update` in each); `why` says what comes next. Dismissing ends the flow.
---@param dir string
---@param why string e.g. `hand off` or `land`
---@return boolean wrote
function M.offer_write(dir, why)
  local modified = M.modified_in(dir)
  if #modified == 0 then
    return false
  end
  local choice = async.select({ 'write', 'continue' }, {
    prompt = ('slipway: %d modified buffer%s in %s; write before you %s?'):format(
      #modified,
      #modified == 1 and '' or 's',
      vim.fs.basename(dir),
      why
    ),
    kind = 'slipway.wall',
    format_item = function(c)
      if c == 'write' then
        return ('Write them (:wall for %d buffer%s)'):format(#modified, #modified == 1 and '' or 's')
      end
      return ('%s without writing'):format(why:sub(1, 1):upper() .. why:sub(2))
    end,
  })
  if choice ~= 'write' then
    return false
  end
  for _, buf in ipairs(modified) do
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent update')
    end)
  end
  return true
end

return M
