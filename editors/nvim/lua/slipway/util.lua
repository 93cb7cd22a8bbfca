--- Small helpers: paths, repository roots found by reading files (never by
--- running git), notifications.

local M = {}

local uv = vim.uv or vim.loop

---@type table<string, string|false>
local realpaths = {}

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

--- `vim.notify` with the plugin's prefix.
---@param msg string
---@param level? integer a `vim.log.levels` value (default INFO)
function M.notify(msg, level)
  vim.notify('slipway: ' .. msg, level or vim.log.levels.INFO, { title = 'slipway' })
end

--- Shortens a commit id.
---@param sha string?
---@return string
function M.short(sha)
  return sha and sha:sub(1, 8) or ''
end

return M
