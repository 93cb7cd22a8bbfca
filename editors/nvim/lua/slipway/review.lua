--- `:Slipway review`: a worktree's changed files (`slipway.diff`) in the
--- quickfix list, and for the chosen one a diff: the base text on the left (a
--- scratch buffer), the worktree's file on the right, both `:diffthis`. Land
--- and discard are a key away.

local async = require('slipway.async')
local lsp = require('slipway.lsp')
local util = require('slipway.util')

local M = {}

---@class slipway.DiffFile
---@field path string
---@field oldPath? string
---@field status 'added'|'modified'|'deleted'|'renamed'
---@field additions? integer
---@field deletions? integer
---@field binary? boolean
---@field committed? boolean
---@field uncommitted? boolean
---@field sensitive? { kind: string, why: string } set when the file runs programs once it is in a checkout

---@class slipway.Review
---@field root string
---@field worktree { id: string, branch: string, path: string }
---@field files slipway.DiffFile[]
---@field base? string
---@field head? string
---@field tab integer the review's tab page
---@field index integer the file shown
---@field against? string the branch whose tip the files are compared with, instead of the base

--- The reviews open, by tab page handle.
---@type table<integer, slipway.Review>
M.sessions = {}

--- The review of the current tab page, if any.
---@return slipway.Review?
function M.current()
  local s = M.sessions[vim.api.nvim_get_current_tabpage()]
  if s and vim.api.nvim_tabpage_is_valid(s.tab) then
    return s
  end
end

local str = util.present

--- How a changed file reads in the quickfix list.
---@param f slipway.DiffFile
---@return string
function M.format_file(f)
  local bits = { f.status }
  if str(f.oldPath) then
    bits[#bits + 1] = 'from ' .. f.oldPath
  end
  if f.binary then
    bits[#bits + 1] = 'binary'
  else
    bits[#bits + 1] = ('+%d -%d'):format(tonumber(f.additions) or 0, tonumber(f.deletions) or 0)
  end
  local where = {}
  if f.committed then
    where[#where + 1] = 'committed'
  end
  if f.uncommitted then
    where[#where + 1] = 'uncommitted'
  end
  if #where > 0 then
    bits[#bits + 1] = '(' .. table.concat(where, ', ') .. ')'
  end
  if type(f.sensitive) == 'table' then
    bits[#bits + 1] = '! ' .. tostring(f.sensitive.why)
  end
  return table.concat(bits, ' ')
end

--- Lines of a text as a buffer holds them (no empty line for the final newline).
---@param text string?
---@return string[]
local function lines_of(text)
  if not text or text == vim.NIL or text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    lines[#lines] = nil
  end
  return lines
end

--- A scratch buffer named `name` holding `lines` (re-used when it exists).
---@param name string
---@param lines string[]
---@param filetype? string
---@return integer
local function scratch(name, lines, filetype)
  local buf = vim.fn.bufnr('^' .. vim.fn.escape(name, '^$.*[]~\\/') .. '$')
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype and filetype ~= '' and vim.bo[buf].filetype ~= filetype then
    pcall(function()
      vim.bo[buf].filetype = filetype
    end)
  end
  return buf
end

--- The review's key mappings in `buf`: land, discard, next and previous file,
--- quit; in the worktree's own file (`steps_only`) just next and previous file,
--- so that its other keys stay as they are.
---@param s slipway.Review
---@param buf integer
---@param steps_only? boolean
local function map_keys(s, buf, steps_only)
  local function map(lhs, fn, desc)
    vim.keymap.set('n', lhs, function()
      if M.sessions[s.tab] ~= s then
        -- A quickfix buffer outlives the review: the key is its own again.
        return vim.cmd('normal! ' .. vim.keycode(lhs))
      end
      fn()
    end, { buffer = buf, nowait = true, desc = 'slipway review: ' .. desc })
  end
  map(']f', function()
    M.step(s, 1)
  end, 'next file')
  map('[f', function()
    M.step(s, -1)
  end, 'previous file')
  if steps_only then
    return
  end
  map('L', function()
    require('slipway.commands').run('land', { worktree = s.worktree.id })
  end, 'land the worktree (:Slipway land)')
  map('X', function()
    require('slipway.commands').run('discard', { worktree = s.worktree.id })
  end, 'discard the worktree (:Slipway discard)')
  map('q', function()
    M.close(s)
  end, 'close the review')
end

--- Shows the diff of file `index` of the review, in a flow.
---@param s slipway.Review
---@param index integer
function M.show(s, index)
  local f = s.files[index]
  if not f then
    return
  end
  s.index = index
  local texts =
    lsp.must(s.root, 'slipway.diff', { root = s.root, worktree = s.worktree.id, path = f.path, against = s.against })
  if not vim.api.nvim_tabpage_is_valid(s.tab) then
    return
  end
  vim.api.nvim_set_current_tabpage(s.tab)
  pcall(vim.cmd, 'diffoff!')
  -- Every window but the quickfix list goes; one is kept for the file.
  local keep
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(s.tab)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.bo[buf].buftype ~= 'quickfix' then
      if keep then
        vim.api.nvim_win_close(win, true)
      else
        keep = win
      end
    end
  end
  if not keep then
    vim.cmd('topleft new')
    keep = vim.api.nvim_get_current_win()
  end
  vim.api.nvim_set_current_win(keep)
  local branch = s.worktree.branch
  local ft = vim.filetype.match({ filename = f.path }) or ''
  if f.status == 'deleted' then
    vim.api.nvim_win_set_buf(keep, scratch(('slipway://%s/deleted/%s'):format(branch, f.path), {}, ft))
  elseif not s.worktree.path then
    -- A kept branch has no files on disk: its tip's text, read-only.
    vim.api.nvim_win_set_buf(
      keep,
      scratch(('slipway://%s@tip/%s'):format(branch, f.path), lines_of(texts.worktreeText), ft)
    )
  else
    local file = s.worktree.path .. '/' .. f.path
    -- A filetype plugin that fails (a missing parser) must not end the review.
    local edited, err = pcall(vim.cmd, 'edit ' .. vim.fn.fnameescape(file))
    if not edited and vim.fn.bufnr(file) == -1 then
      async.fail(tostring(err))
    end
  end
  local right = vim.api.nvim_get_current_win()
  -- The cursor lands here: the review's keys work in every window of the tab.
  map_keys(s, vim.api.nvim_win_get_buf(right), vim.bo[vim.api.nvim_win_get_buf(right)].buftype == '')
  vim.fn.setqflist({}, 'a', { idx = index })
  if texts.binary == true then
    util.notify(('%s is a binary file: no text diff'):format(f.path))
    return
  end
  local base_name = ('slipway://%s@%s/%s'):format(branch, s.against or 'base', str(f.oldPath) or f.path)
  local base_lines = lines_of(texts.baseText)
  -- The filetype of the worktree's file (detected as it was opened), else from the name and text.
  local right_ft = vim.bo[vim.api.nvim_win_get_buf(right)].filetype
  if right_ft ~= '' then
    ft = right_ft
  elseif ft == '' then
    ft = vim.filetype.match({ filename = f.path, contents = base_lines }) or ''
  end
  local base = scratch(base_name, base_lines, ft)
  vim.b[base].slipway_review = { worktree = s.worktree.id, path = f.path, side = 'base' }
  map_keys(s, base)
  vim.cmd('leftabove vsplit')
  local left = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(left, base)
  vim.cmd('diffthis')
  vim.api.nvim_set_current_win(right)
  vim.cmd('diffthis')
end

--- Shows the next (`delta` 1) or previous (-1) file.
---@param s slipway.Review
---@param delta integer
function M.step(s, delta)
  local index = ((s.index - 1 + delta) % #s.files) + 1
  async.run(function()
    M.show(s, index)
  end)
end

--- Ends a review: its tab closes (the quickfix list stays).
---@param s slipway.Review
function M.close(s)
  M.sessions[s.tab] = nil
  if vim.api.nvim_tabpage_is_valid(s.tab) then
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd(vim.api.nvim_tabpage_get_number(s.tab) .. 'tabclose!')
    else
      vim.api.nvim_set_current_tabpage(s.tab)
      pcall(vim.cmd, 'diffoff!')
      vim.cmd('silent! only!')
      vim.cmd('enew')
    end
  end
end

--- Ends the reviews of a worktree that was removed.
---@param path string
function M.forget(path)
  local real = util.realpath(path)
  for _, s in pairs(M.sessions) do
    if s.worktree.path == path or util.realpath(s.worktree.path) == real then
      M.close(s)
    end
  end
end

--- Opens the review of worktree `w`, in a flow: a new tab (`:tcd` into the
--- worktree), its changed files in the quickfix list, the first one's diff.
--- With `opts.against` (another worktree's branch) its files are compared
--- with that branch's tip instead of the base.
---@param root string
---@param w { id: string, branch: string, path?: string }
---@param opts? { against?: string }
---@return slipway.Review?
function M.open(root, w, opts)
  local against = opts and opts.against or nil
  local diff = lsp.must(root, 'slipway.diff', { root = root, worktree = w.id, against = against })
  local files = diff.files or {}
  if #files == 0 then
    util.notify(
      ('nothing to review in %s: no change against %s'):format(
        w.branch,
        against or util.present(diff.target) or 'its base'
      )
    )
    return nil
  end
  local path = util.present(w.path) or util.present(diff.path)
  for _, old in pairs(M.sessions) do
    if old.worktree.id == w.id then
      M.close(old)
    end
  end
  vim.cmd('tabnew')
  vim.cmd('tcd ' .. vim.fn.fnameescape(path or root))
  local s = {
    root = root,
    worktree = { id = w.id, branch = w.branch, path = path },
    files = files,
    base = str(diff.base),
    head = str(diff.head),
    tab = vim.api.nvim_get_current_tabpage(),
    index = 1,
    against = against,
  }
  M.sessions[s.tab] = s
  local items = {}
  for _, f in ipairs(files) do
    items[#items + 1] = {
      filename = (path or root) .. '/' .. f.path,
      lnum = 1,
      col = 1,
      text = M.format_file(f),
      -- A file that runs programs reads as a warning.
      type = type(f.sensitive) == 'table' and 'W' or nil,
      valid = 1,
    }
  end
  vim.fn.setqflist({}, ' ', {
    title = ('slipway review %s%s (%d file%s)'):format(
      w.branch,
      against and (' against ' .. against) or '',
      #files,
      #files == 1 and '' or 's'
    ),
    items = items,
    context = { slipway_review = { root = root, worktree = w.id, branch = w.branch } },
  })
  vim.cmd('botright copen')
  local qf = vim.api.nvim_get_current_buf()
  map_keys(s, qf)
  vim.keymap.set('n', '<CR>', function()
    local ctx = vim.fn.getqflist({ context = 1 }).context
    if type(ctx) == 'table' and ctx.slipway_review and M.sessions[s.tab] == s then
      local index = vim.fn.line('.')
      async.run(function()
        M.show(s, index)
      end)
    else
      vim.cmd('.cc')
    end
  end, { buffer = qf, nowait = true, desc = "slipway review: the file's diff" })
  vim.cmd('wincmd p')
  M.show(s, 1)
  util.notify(
    ('review %s%s: %d changed file%s (<CR> diff, ]f/[f next/previous, L land, X discard, q close)'):format(
      w.branch,
      against and (' against ' .. against) or '',
      #files,
      #files == 1 and '' or 's'
    )
  )
  return s
end

return M
