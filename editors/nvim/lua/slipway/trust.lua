--- Repository files that run programs (`slipway.toml`, prompt templates in a
--- checkout): when the sidecar answers `untrustedConfig`, show what each file
--- would run and set, ask Trust or Cancel (Cancel first: the default), approve
--- exactly the content shown with `slipway.trust`, and send the request again.
--- Files that run programs in a change (`sensitiveChanges`, `sensitive`) are
--- named the same way everywhere.

local async = require('slipway.async')
local lsp = require('slipway.lsp')
local util = require('slipway.util')

local M = {}

---@class slipway.TrustFile
---@field path string
---@field role 'repositoryConfig'|'promptTemplate'
---@field hash? string the content's id; nil (JSON null) when the file is gone
---@field trustedHash? string what was approved before
---@field commands? { source: string, command: string }[]
---@field settings? { key: string, value: string }[]
---@field symlinkTo? string

local str = util.present

--- What approving `f` means, line by line.
---@param f slipway.TrustFile
---@return string[]
function M.describe(f)
  local lines = {}
  local state
  if not str(f.hash) then
    state = 'is gone (you had trusted it): the defaults it set no longer apply'
  elseif str(f.trustedHash) then
    state = 'has changed since you trusted it'
  else
    state = 'is not trusted yet'
  end
  local link = str(f.symlinkTo) and (' (a symlink to ' .. f.symlinkTo .. ')') or ''
  lines[1] = ('%s%s %s'):format(f.path, link, state)
  for _, c in ipairs(type(f.commands) == 'table' and f.commands or {}) do
    lines[#lines + 1] = ('  runs: %s  (%s)'):format(c.command, c.source)
  end
  for _, s in ipairs(type(f.settings) == 'table' and f.settings or {}) do
    lines[#lines + 1] = ('  sets: %s = %s'):format(s.key, s.value)
  end
  if str(f.hash) then
    lines[#lines + 1] = '  hash: ' .. f.hash
  end
  return lines
end

--- Asks about the files of an `untrustedConfig` error, in a flow; true when
--- the user trusted them (and the approval is recorded), false on Cancel.
---@param root string
---@param err slipway.RpcError
---@return boolean
function M.ask(root, err)
  local files = type(err.data) == 'table' and err.data.files or nil
  if type(files) ~= 'table' or #files == 0 then
    async.fail(err.message)
  end
  local lines, names = {}, {}
  for _, f in ipairs(files) do
    vim.list_extend(lines, M.describe(f))
    names[#names + 1] = vim.fn.fnamemodify(f.path, ':t')
  end
  util.notify(table.concat(lines, '\n'), vim.log.levels.WARN)
  local what = {}
  for _, f in ipairs(files) do
    for _, c in ipairs(type(f.commands) == 'table' and f.commands or {}) do
      what[#what + 1] = c.command
    end
    for _, s in ipairs(type(f.settings) == 'table' and f.settings or {}) do
      what[#what + 1] = s.key .. '=' .. s.value
    end
  end
  local prompt = ('slipway: %s would %s; trust it? (:Slipway details has it all)'):format(
    table.concat(names, ', '),
    #what > 0 and ('run or set: ' .. table.concat(what, '; ')) or 'change the run defaults'
  )
  -- Cancel is the first item, the one a picker starts on.
  local choice = async.select({ 'Cancel', 'Trust' }, { prompt = prompt, kind = 'slipway.trust' })
  if choice ~= 'Trust' then
    return false
  end
  local approve = {}
  for _, f in ipairs(files) do
    if str(f.hash) then
      approve[#approve + 1] = { path = f.path, hash = f.hash }
    else
      approve[#approve + 1] = { path = f.path, removed = true }
    end
  end
  local _, trust_err = lsp.call(root, 'slipway.trust', { root = root, files = approve })
  if trust_err and type(trust_err.data) == 'table' and trust_err.data.kind == 'untrustedConfig' then
    -- It changed after it was shown: show it again.
    return M.ask(root, trust_err)
  elseif trust_err then
    lsp.fail(root, trust_err)
  end
  util.notify(('trusted %s'):format(table.concat(names, ', ')))
  return true
end

--- `lsp.call`, in a flow; an `untrustedConfig` answer asks (see `ask`) and,
--- once trusted, sends the request again. Cancel ends the flow saying nothing ran.
---@param root string
---@param command string
---@param request table
---@return any result
---@return slipway.RpcError? err
function M.call(root, command, request)
  local result, err = lsp.call(root, command, request)
  -- One more round per file at most: a run can need the config and a template.
  for _ = 1, 3 do
    if not (err and type(err.data) == 'table' and err.data.kind == 'untrustedConfig') then
      break
    end
    if not M.ask(root, err) then
      async.fail('not trusted: nothing was done')
    end
    result, err = lsp.call(root, command, request)
  end
  return result, err
end

--- One line for each file of `changes` that runs programs (`sensitiveChanges`
--- of a run or a land), for a summary's details.
---@param changes any
---@return string[]
function M.sensitive_lines(changes)
  local lines = {}
  for _, c in ipairs(type(changes) == 'table' and changes or {}) do
    lines[#lines + 1] = ('read before your tools do: %s %s: %s'):format(
      tostring(c.path),
      ({ added = 'added', modified = 'changed', deleted = 'removed' })[c.status] or tostring(c.status),
      tostring(c.why)
    )
  end
  return lines
end

return M
