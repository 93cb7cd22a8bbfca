--- Small helpers: paths, repository roots found by reading files (never by
--- running git), notifications.

local M = {}

local uv = vim.uv or vim.loop

---@type table<string, string|false>
local realpaths = {}

local REPLACEMENT = '\239\191\189' -- U+FFFD

--- `text` as it may be drawn: names of files and branches come out of a
--- repository or a sandbox, so each control character (C1 included) and each
--- character that reorders the text around it (bidirectional overrides and
--- isolates, U+202A-202E and U+2066-2069, the "trojan source" trick) becomes
--- U+FFFD, as the CLI and the VS Code extension do. Newlines and tabs are kept
--- when `keep_lines`.
---@param text string
---@param keep_lines? boolean
---@return string
function M.displayable(text, keep_lines)
  local out = text
    :gsub('\226\128[\170-\174]', REPLACEMENT)
    :gsub('\226\129[\166-\169]', REPLACEMENT)
    :gsub('\194[\128-\159]', REPLACEMENT)
  out = out:gsub(keep_lines and '[%z\1-\8\11-\31\127]' or '[%z\1-\31\127]', REPLACEMENT)
  return out
end

--- The canonical form of `path` (symlinks resolved), cached; `path` itself when it does not exist.
---@param path string
---@return string
function M.realpath(path)
  local cached = realpaths[path]
  if cached then
    return cached
  end
  local real = uv.fs_realpath(path)
  if real then
    realpaths[path] = real
    return real
  end
  return path
end

--- Forgets cached canonical paths (after worktrees come and go).
function M.forget_realpaths()
  realpaths = {}
end

--- Whether `path` is `dir` or inside it.
---@param path string
---@param dir string
---@return boolean
function M.is_within(path, dir)
  if path == dir then
    return true
  end
  local prefix = dir:sub(-1) == '/' and dir or (dir .. '/')
  return path:sub(1, #prefix) == prefix
end

---@param file string
---@return string?
local function read_first_line(file)
  local fd = io.open(file, 'r')
  if not fd then
    return nil
  end
  local line = fd:read('*l')
  fd:close()
  return line
end

--- The host repository root of any path inside a repository or one of its
--- worktrees (a worktree's `.git` file is followed to its common dir).
---@param path string? a file or folder (default: the current buffer's file, else the cwd)
---@return string? root
function M.repo_root(path)
  path = path or M.current_path()
  local found = vim.fs.root(path, '.git')
  if not found then
    return nil
  end
  local dotgit = found .. '/.git'
  local stat = uv.fs_stat(dotgit)
  if stat and stat.type == 'file' then
    local line = read_first_line(dotgit)
    local gitdir = line and line:match('^gitdir:%s*(.-)%s*$')
    if gitdir then
      if gitdir:sub(1, 1) ~= '/' then
        gitdir = vim.fs.normalize(found .. '/' .. gitdir)
      end
      local common = read_first_line(gitdir .. '/commondir')
      if common then
        if common:sub(1, 1) ~= '/' then
          common = vim.fs.normalize(gitdir .. '/' .. common)
        end
        common = M.realpath(common)
        if vim.fs.basename(common) == '.git' then
          return vim.fs.dirname(common)
        end
      end
    end
  end
  return M.realpath(found)
end

--- The path the current context is about: the current buffer's file when it
--- is a file on disk, else the window's working directory.
---@return string
function M.current_path()
  local buf = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  if vim.bo[buf].buftype == '' and name ~= '' and not name:match('^%a[%w+.-]*://') then
    return M.realpath(name)
  end
  return M.realpath(vim.fn.getcwd())
end

---@class slipway.Note
---@field time integer when it was shown (`os.time()`)
---@field level integer a `vim.log.levels` value
---@field text string the whole message, every line

--- Every message the plugin showed, oldest first: `:Slipway details` lists them.
---@type slipway.Note[]
M.history = {}

--- Messages `notify` queued for this moment, shown together by `flush`.
---@type { msg: string, level: integer, shown?: fun() }[]
local pending = {}

--- How long (ms) `notify` gathers messages into one line: the sidecar's
--- reports of one moment come as separate notifications.
M.gather_ms = 60

local flush, show, show_batch

--- Whether `vim.notify` is Neovim's own (an echo), not a notifier plugin's.
---@return boolean
local function builtin_notify()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source:match('vim/_editor%.lua$') ~= nil
end

--- How many lines `notify` has shown (a flush is one line, however many messages it holds).
M.shown = 0

--- One-line messages held back while in Insert or Replace mode (shown on `InsertLeave`).
---@type { msg: string, level: integer, opts: table }[]
local held = {}

local function in_insert()
  local mode = vim.api.nvim_get_mode().mode
  return mode:sub(1, 1) == 'i' or mode:sub(1, 1) == 'R'
end

local function show_held()
  local last, count = held[#held], #held
  held = {}
  if last then
    local msg = last.msg
    if count > 1 then
      msg = msg .. (' (+%d: :Slipway details)'):format(count - 1)
    end
    vim.notify(msg, last.level, last.opts)
  end
end

--- The one line shown for `text`: its first line, `(:Slipway details)` when
--- there is more, cut to the width an echo takes without a hit-enter prompt.
--- A `tail` (how many more messages came) is kept whatever the cut.
---@param text string
---@param tail? string
---@return string
function M.one_line(text, tail)
  local first, more = text:match('^([^\n]*)\n(.*)$')
  first = first or text
  local hint = tail or ((more and vim.trim(more) ~= '') and ' (:Slipway details)' or '')
  local width = vim.v.echospace
  if type(width) ~= 'number' or width < 40 then
    width = math.max(40, vim.o.columns - 12)
  end
  width = width - 1
  local line = 'slipway: ' .. first
  if vim.fn.strdisplaywidth(line .. hint) > width then
    -- Cut short: the ellipsis says there is more (in `:Slipway details`).
    hint = tail or ''
    width = width - vim.fn.strdisplaywidth(hint)
    local keep = width - 1
    while keep > 10 and vim.fn.strdisplaywidth(vim.fn.strcharpart(line, 0, keep)) > width - 1 do
      keep = keep - 1
    end
    line = vim.fn.strcharpart(line, 0, keep) .. '…'
  end
  return line .. hint
end

--- `vim.notify` with one line (the plugin's prefix, the first line of `msg`):
--- never a hit-enter prompt. The whole text goes to `M.history` (`:Slipway
--- details`) and to `opts.details` for custom `vim.notify` functions. A message
--- sent in Insert mode is shown again when Insert mode ends. On a screen,
--- messages sent within `M.gather_ms` of each other are one line.
---@param msg string
---@param level? integer a `vim.log.levels` value (default INFO)
---@param shown? fun() called once the line standing for `msg` is shown
function M.notify(msg, level, shown)
  level = level or vim.log.levels.INFO
  M.history[#M.history + 1] = { time = os.time(), level = level, text = msg }
  if #M.history > 200 then
    table.remove(M.history, 1)
  end
  -- Messages of one moment (several runs reported at start-up) are shown as
  -- one line: two echoes in a row would ask "Press ENTER".
  pending[#pending + 1] = { msg = msg, level = level, shown = shown }
  if #pending > 1 then
    return
  end
  local ui_up = vim.v.vim_did_enter == 1 and #vim.api.nvim_list_uis() > 0
  if ui_up then
    vim.defer_fn(flush, M.gather_ms)
  elseif vim.list_contains(vim.v.argv, '--headless') then
    -- No screen: nothing to wait for, no echo to replace.
    vim.schedule(flush)
  else
    -- Before the first screen is drawn a message would be wiped by it.
    vim.api.nvim_create_autocmd('UIEnter', {
      once = true,
      desc = 'slipway: show the messages of start-up',
      callback = function()
        vim.defer_fn(flush, M.gather_ms)
      end,
    })
  end
end

--- Shows what `notify` queued now, before a picker or prompt opens.
function M.flush_now()
  flush()
end

--- Shows the messages `notify` queued since the last flush as one line.
function flush()
  local batch = pending
  pending = {}
  if #batch == 0 then
    return
  end
  local ok, err = pcall(show_batch, batch)
  for _, n in ipairs(batch) do
    if n.shown then
      pcall(n.shown)
    end
  end
  if not ok then
    error(err)
  end
end

--- Shows `batch`: one line for all with Neovim's own `vim.notify` (an echo),
--- a line each with a notifier of the user's (nvim-notify, snacks, …).
---@param batch { msg: string, level: integer }[]
function show_batch(batch)
  if not builtin_notify() then
    for _, n in ipairs(batch) do
      show(M.one_line(n.msg), n.level, { title = 'slipway', details = n.msg })
    end
    return
  end
  local last, level = batch[#batch], vim.log.levels.INFO
  for _, n in ipairs(batch) do
    level = math.max(level, n.level)
  end
  local line = M.one_line(last.msg)
  if #batch > 1 then
    line = M.one_line(last.msg, (' (+%d more: :Slipway details)'):format(#batch - 1))
  end
  show(line, level, { title = 'slipway', details = last.msg })
end

--- One line to `vim.notify`, held for `InsertLeave` too when typing.
---@param line string
---@param level integer
---@param opts table
function show(line, level, opts)
  vim.notify(
    M.displayable(line),
    level,
    vim.tbl_extend('force', opts, { details = opts.details and M.displayable(opts.details, true) })
  )
  M.shown = M.shown + 1
  if in_insert() then
    if #held == 0 then
      vim.api.nvim_create_autocmd('InsertLeave', {
        once = true,
        desc = 'slipway: show the messages sent in Insert mode',
        callback = function()
          vim.schedule(show_held)
        end,
      })
    end
    held[#held + 1] = { msg = line, level = level, opts = opts }
  end
end

--- Shows `lines` in the scratch buffer `name` in a window at the bottom
--- (re-used when it is open); `q` closes it.
---@param name string
---@param lines string[]
---@return integer buf
function M.show_lines(name, lines)
  local buf = vim.fn.bufnr('^' .. vim.fn.escape(name, '^$.*[]~\\/') .. '$')
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = 'hide'
    vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, desc = 'slipway: close' })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(
    buf,
    0,
    -1,
    false,
    vim.tbl_map(function(l)
      return M.displayable(l, true)
    end, lines)
  )
  vim.bo[buf].modifiable = false
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd('botright sbuffer ' .. buf)
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_height(win, math.min(15, math.max(3, #lines)))
  else
    vim.api.nvim_set_current_win(win)
  end
  return buf
end

--- Opens (or refreshes) the `slipway://details` buffer: every message in full, oldest first.
---@return integer buf
function M.show_details()
  local names = { [0] = 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'OFF' }
  local lines = {}
  for _, n in ipairs(M.history) do
    local text = vim.split(n.text, '\n')
    lines[#lines + 1] = ('%s %s %s'):format(os.date('%H:%M:%S', n.time), names[n.level] or '?', text[1])
    for i = 2, #text do
      lines[#lines + 1] = '    ' .. text[i]
    end
  end
  if #lines == 0 then
    lines = { 'no slipway messages yet' }
  end
  local buf = M.show_lines('slipway://details', lines)
  vim.bo[buf].filetype = 'slipway-details'
  vim.api.nvim_win_set_cursor(vim.fn.bufwinid(buf), { #lines, 0 })
  return buf
end

--- A next action of the sidecar (`{kind, worktree?, runId?, force?}`) as the
--- `:Slipway` command that does it.
---@param a { kind: string, worktree?: string, runId?: string, force?: boolean }
---@return string
function M.action_text(a)
  local target = M.present(a.worktree) or ''
  local kind = a.kind
  if kind == 'review' or kind == 'land' then
    return (':Slipway %s %s'):format(kind, target)
  elseif kind == 'discard' or kind == 'close' then
    return (':Slipway %s %s'):format(kind, target) .. (a.force and ' (loses its work)' or '')
  elseif kind == 'reply' then
    return ':Slipway reply ' .. tostring(M.present(a.runId) or '')
  elseif kind == 'trust' then
    return ':Slipway trust'
  end
  return tostring(kind)
end

--- The actions as one line: `next: :Slipway review x | :Slipway land x`; nil when none.
---@param actions? table[]
---@return string?
function M.actions_text(actions)
  if type(actions) ~= 'table' or #actions == 0 then
    return nil
  end
  local parts = {}
  for _, a in ipairs(actions) do
    parts[#parts + 1] = M.action_text(a)
  end
  return 'next: ' .. table.concat(parts, ' | ')
end

--- `v`, or nil when it is missing: nil, JSON null (`vim.NIL`) or an empty string.
---@generic T
---@param v T
---@return T?
function M.present(v)
  if v == nil or v == vim.NIL or v == '' then
    return nil
  end
  return v
end

--- Shortens a commit id.
---@param sha string?
---@return string
function M.short(sha)
  return sha and sha:sub(1, 8) or ''
end

return M
