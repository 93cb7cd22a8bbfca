--- `:Slipway {subcommand}`: each one asks what it needs through
--- `vim.ui.select` / `vim.ui.input`, calls the sidecar, and renders the answer.
--- Every decision is the sidecar's.

local async = require('slipway.async')
local buffers = require('slipway.buffers')
local config = require('slipway.config')
local lsp = require('slipway.lsp')
local pick = require('slipway.pick')
local trust = require('slipway.trust')
local util = require('slipway.util')

local M = {}

---@class slipway.CommandArgs
---@field worktree? string id, path or branch (`open`, `close`, `agent`, `handoff`)
---@field strategy? string `branch`, `merge-to-head` (and `head` for `run`)
---@field branch? string
---@field base? string
---@field source? string `host_head`, `current_branch`, `default`, `ask` or `named:REF`
---@field prompt? string
---@field how? slipway.OpenHow
---@field open? string `false`: `new` does not open the worktree
---@field run? string a run id (`cancel`, `log`)
---@field workspace? string a workspace name (`workspace`)
---@field agent? string an agent name: overrides the type of the configured agent (`run`, `handoff`, `workspace`, `agent`)
---@field sandbox? string a sandbox name: overrides the type of the configured sandbox
---@field network? string the docker network of the run's container (`none`, `bridge`, …)
---@field into? string the host branch to land into (`land`)
---@field message? string the commit message of a squash (`land`)
---@field group? string a group of attempts (`attempts`)
---@field on_done? fun(ok: boolean, result: any) called when the flow ends

local function fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

--- The host repository of the current buffer (or cwd); ends the flow outside one.
---@return string
local function need_root()
  -- While a run works in a worktree, its `.git` file names the run's private
  -- git dir: the status cache knows the worktree's host better than the files.
  local repo, w = require('slipway.status').lookup()
  if repo and w and util.present(repo.root) then
    return util.realpath(repo.root)
  end
  local root = util.repo_root()
  if not root then
    async.fail('not inside a git repository (' .. util.current_path() .. ')')
  end
  return root
end

--- The configured agent (its type replaced by `agent=NAME`); nil when none
--- is, so the sidecar's plan takes the repository's or the user's default.
---@param args? slipway.CommandArgs
---@return slipway.AgentSpec?
local function agent_of(args)
  local agent = config.get().agent
  local name = args and args.agent
  if name and name ~= '' then
    if type(agent) ~= 'table' or agent.type ~= name then
      agent = { type = name }
    end
    if name == 'command' and type(agent.command) ~= 'table' then
      async.fail("agent=command needs its program: vim.g.slipway = { agent = { type = 'command', command = { … } } }")
    end
  end
  if type(agent) ~= 'table' or not agent.type then
    return nil
  end
  return agent
end

--- The agent for an interactive command: the configured one (an interactive
--- terminal needs a program to start), else how to configure one ends the flow.
---@param args? slipway.CommandArgs
---@return slipway.AgentSpec
local function need_agent(args)
  local agent = agent_of(args)
  if not agent then
    async.fail(
      "no agent configured: set vim.g.slipway = { agent = { type = 'claude-code' } } "
        .. "or { type = 'command', command = { 'my-agent' } } (see :help slipway-agent)"
    )
  end
  return agent
end

--- The configured sandbox, its type replaced by `sandbox=NAME`.
---@param args slipway.CommandArgs
---@return slipway.SandboxSpec?
local function sandbox_of(args)
  local sandbox = config.get().sandbox
  if args.sandbox and args.sandbox ~= '' then
    if type(sandbox) ~= 'table' or sandbox.type ~= args.sandbox then
      sandbox = { type = args.sandbox }
    end
  end
  if args.network and args.network ~= '' then
    if type(sandbox) ~= 'table' or not tostring(sandbox.type):match('^docker') then
      async.fail('network= is an option of the docker sandboxes: add sandbox=docker (or set the sandbox option)')
    end
    sandbox = vim.tbl_extend('force', sandbox, { network = args.network })
  end
  return sandbox
end

--- Parses a source argument: `host_head`, `current_branch`, `default`, `ask`
--- (or the `host-head` spellings, which the sidecar accepts too), `named:REF`.
---@param text string?
---@return table?
local function parse_source(text)
  if not text or text == '' then
    return nil
  end
  local ref = text:match('^named:(.+)$')
  if ref then
    return { policy = 'named', ref = ref }
  end
  return { policy = text }
end

--- The source policy the user chose here (`source=`, else the `source`
--- option), or nil: the sidecar's plan then takes the repository's or the
--- user's default, and says when one must be picked (`sourceBranchRequired`).
---@param args slipway.CommandArgs
---@return table?
local function chosen_source(args)
  local source = parse_source(args.source)
  if source then
    return source
  end
  local opt = config.get().source
  if type(opt) == 'table' then
    return opt
  elseif type(opt) == 'string' then
    return parse_source(opt)
  end
  return nil
end

--- Source errors whose `data.choices` the branch picker can answer.
local source_choice_kinds = {
  sourceBranchRequired = true,
  unknownRef = true,
  noDefaultBranch = true,
  detachedHead = true,
}

--- Whether an error's hints ask for `field` (`{do = "give", field = …}`).
---@param err slipway.RpcError?
---@param field string
---@return boolean
local function asks_for(err, field)
  local hints = err and type(err.data) == 'table' and err.data.hints or nil
  for _, h in ipairs(type(hints) == 'table' and hints or {}) do
    if h['do'] == 'give' and h.field == field then
      return true
    end
  end
  return false
end

--- Calls `command`, asking only for what the sidecar's plan says is missing:
--- a branch name when it hints `give branch` (the strategy is `branch`), and
--- a source branch when it answers `sourceBranchRequired` (or another source
--- error with `choices`: the branch picker over them, then the `named` source);
--- an `untrustedConfig` one asks to trust.
---@param root string
---@param command string
---@param request table
---@return table
local function call_with_source(root, command, request)
  local result, err = trust.call(root, command, request)
  if err and not request.branch and asks_for(err, 'branch') then
    request.branch = vim.trim(async.input({ prompt = 'slipway: branch name: ' }))
    result, err = trust.call(root, command, request)
  end
  if err and type(err.data) == 'table' and source_choice_kinds[err.data.kind] then
    local choices = err.data.choices
    if type(choices) ~= 'table' or #choices == 0 then
      async.fail(err.message)
    end
    local b = pick.branch(root, { prompt = 'slipway: start from (' .. err.message .. ')', entries = choices })
    request.source = { policy = 'named', ref = b.name }
    result, err = trust.call(root, command, request)
  end
  if err then
    lsp.fail(root, err)
  end
  return result
end

--- The worktree the current buffer (or cwd) is in, else the one the picker returns.
---@param args slipway.CommandArgs
---@param root string
---@param prompt string
---@return { id: string, branch: string, path?: string }
local function current_or_pick(args, root, prompt)
  -- `slipway.list` rather than `slipway.status`: the latter answers from the
  -- sidecar's cache, which can lag a worktree created a moment ago.
  local answer = lsp.must(root, 'slipway.list', { root = root })
  local list = answer.worktrees or {}
  if args.worktree then
    local wanted = args.worktree
    for _, w in ipairs(list) do
      if w.id == wanted or w.branch == wanted or util.realpath(w.path) == util.realpath(wanted) then
        return { id = w.id, branch = w.branch, path = w.path }
      end
    end
    -- A branch a merge-to-head run kept without a worktree.
    for _, k in ipairs(type(answer.keptBranches) == 'table' and answer.keptBranches or {}) do
      if k.branch == wanted then
        return { id = k.branch, branch = k.branch }
      end
    end
    async.fail('no slipway worktree matches ' .. wanted)
  end
  local here = util.current_path()
  for _, w in ipairs(list) do
    if util.is_within(here, util.realpath(w.path)) then
      return { id = w.id, branch = w.branch, path = w.path }
    end
  end
  local w = pick.worktree(root, prompt)
  return { id = w.id, branch = w.branch, path = w.path }
end

--- Opens `path`: a new tab with `:tcd` (`tab`), `:lcd` in the current window (`window`), or `:cd` (`cd`).
---@param path string
---@param how? slipway.OpenHow
function M.open_path(path, how)
  how = how or config.get().open or 'tab'
  local dir = vim.fn.fnameescape(path)
  if how == 'window' then
    vim.cmd('lcd ' .. dir)
  elseif how == 'cd' then
    vim.cmd('cd ' .. dir)
  else
    vim.cmd('tabnew')
    vim.cmd('tcd ' .. dir)
  end
  vim.cmd('redrawstatus!')
end

--- Moves every tab (and the global cwd) out of a worktree that was removed.
---@param path string
---@param root string
local function leave_removed(path, root)
  path = util.realpath(path)
  local dir = vim.fn.fnameescape(root)
  for tabnr = 1, vim.fn.tabpagenr('$') do
    local cwd = util.realpath(vim.fn.getcwd(-1, tabnr))
    if util.is_within(cwd, path) and vim.fn.haslocaldir(-1, tabnr) == 1 then
      local current = vim.fn.tabpagenr()
      vim.cmd(tabnr .. 'tabnext')
      vim.cmd('tcd ' .. dir)
      vim.cmd(current .. 'tabnext')
    end
  end
  if util.is_within(util.realpath(vim.fn.getcwd(-1, -1)), path) then
    vim.cmd('cd ' .. dir)
  end
end

--- After a worktree was removed: tabs leave it, its buffers are forgotten
--- (`:w` must not fail with E212), and the review of it ends.
---@param path string
---@param root string
function M.removed(path, root)
  leave_removed(path, root)
  buffers.forget(path)
  require('slipway.status').own[util.realpath(path)] = nil
  pcall(function()
    require('slipway.review').forget(path)
  end)
end

---@type table<string, fun(args: slipway.CommandArgs): any>
local flows = {}

--- `new`: create a worktree by the defaults, asking only what the sidecar says is missing.
function flows.new(args)
  local root = need_root()
  -- What is not given is the defaults' (the repository's slipway.toml, the
  -- user's config.toml); the sidecar says what is still missing.
  local request = {
    root = root,
    strategy = args.strategy,
    branch = args.branch,
    base = args.base,
    source = chosen_source(args),
    copy = config.get().copy,
  }
  local created = call_with_source(root, 'slipway.createWorktree', request)
  local lines = {
    ('%s worktree %s (from %s)'):format(
      created.reused and 'reusing' or 'created',
      created.branch,
      created.sourceLabel or util.short(created.baseCommit)
    ),
    'at ' .. created.path,
  }
  for _, note in ipairs(created.notes or {}) do
    lines[#lines + 1] = note
  end
  util.notify(table.concat(lines, '\n'))
  fire('SlipwayWorktreeCreated', created)
  if args.open ~= 'false' and config.get().open_after_new ~= false then
    M.open_path(created.path, args.how)
  end
  return created
end

--- `branch`: the branch picker alone; the chosen branch becomes the source of a new worktree.
function flows.branch(args)
  local root = need_root()
  local b = pick.branch(root, { prompt = 'slipway: branch' })
  return flows.new(vim.tbl_extend('force', args, { source = 'named:' .. b.name }))
end

--- `open`: choose a worktree and open it.
function flows.open(args)
  local root = need_root()
  local target
  if args.worktree then
    target = current_or_pick(args, root, 'slipway: open worktree')
  else
    target = pick.worktree(root, 'slipway: open worktree')
  end
  M.open_path(target.path, args.how)
  return target
end

--- `agent`: the agent's interactive command in a terminal in the current worktree.
function flows.agent(args)
  local root = need_root()
  local agent = need_agent(args)
  local w = current_or_pick(args, root, 'slipway: run the agent in')
  -- The worktree's status with `agent` carries the agent's command line there;
  -- nothing is created and no branch lock is taken.
  local result = lsp.must(root, 'slipway.status', { path = w.path, agent = agent })
  local ic = result.interactiveCommand
  if type(ic) ~= 'table' or type(ic.argv) ~= 'table' then
    async.fail('the sidecar gave no interactive command for agent ' .. agent.type)
  end
  local how = config.get().terminal or 'vsplit'
  if how == 'tab' then
    vim.cmd('tabnew')
  elseif how == 'split' then
    vim.cmd('new')
  else
    vim.cmd('vnew')
  end
  local terminals = require('slipway.terminals')
  local job = vim.fn.jobstart(ic.argv, {
    term = true,
    cwd = ic.cwd or result.path,
    on_exit = function(j, code)
      terminals.exited(j, code)
    end,
  })
  if job <= 0 then
    async.fail('could not start ' .. table.concat(ic.argv, ' '))
  end
  terminals.started(w.path or result.path, job, vim.api.nvim_get_current_buf(), w.branch)
  vim.cmd('startinsert')
  return { job = job, argv = ic.argv, cwd = ic.cwd }
end

--- `handoff`: the current worktree goes to an unattended run, with a prompt from `vim.ui.input`.
function flows.handoff(args)
  local root = need_root()
  local agent = agent_of(args)
  local w = current_or_pick(args, root, 'slipway: hand off')
  local prompt = args.prompt or async.input({ prompt = 'slipway: prompt for the agent: ' })
  -- The agent sees files on disk: unsaved edits of this worktree are offered a write first.
  if w.path then
    buffers.offer_write(w.path, 'hand off')
    -- One writer per session: the interactive agent this editor started there ends first.
    if require('slipway.terminals').of(w.path) then
      util.notify(('ending the interactive agent in %s before the handoff'):format(w.branch))
      async.await(function(cb)
        require('slipway.terminals').stop(w.path, cb)
      end)
    end
  end
  local started, err = trust.call(root, 'slipway.handoff', {
    root = root,
    worktree = w.id,
    agent = agent,
    sandbox = sandbox_of(args),
    prompt = prompt,
  })
  if err then
    lsp.fail(root, err)
  end
  if w.path then
    require('slipway.status').claim(w.path)
    require('slipway.activity').forget_done(w.path)
  end
  util.notify(
    ('run %s started on %s (:Slipway log %s)\nit goes on if you close the editor; :Slipway cancel stops it'):format(
      started.runId,
      w.branch,
      started.runId
    )
  )
  fire('SlipwayRunStarted', { runId = started.runId, branch = w.branch, root = root })
  return started
end

--- `run`: a new worktree and an unattended run in it.
function flows.run(args)
  local root = need_root()
  local prompt = args.prompt or async.input({ prompt = 'slipway: prompt for the agent: ' })
  -- Strategy, source, agent and sandbox not given here are the defaults'.
  local request = {
    root = root,
    strategy = args.strategy,
    branch = args.branch,
    base = args.base,
    source = chosen_source(args),
    agent = agent_of(args),
    sandbox = sandbox_of(args),
    prompt = prompt,
    copy = config.get().copy,
  }
  local started = call_with_source(root, 'slipway.run', request)
  util.notify(
    ('run %s started (%s; :Slipway log %s)\nit goes on if you close the editor'):format(
      started.runId,
      request.branch or 'by the defaults',
      started.runId
    )
  )
  fire('SlipwayRunStarted', { runId = started.runId, branch = request.branch, root = root })
  return started
end

---@class slipway.WorkspaceMount
---@field src string
---@field dst string
---@field readonly? boolean
---@field isolation? string `shared`, `worktree` or `clone`
---@field source? table

---@class slipway.Workspace
---@field name string
---@field path? string
---@field workdir? string
---@field mounts? slipway.WorkspaceMount[]
---@field error? string why the file could not be read

--- Runs the slipway CLI inside a flow and decodes its `--json` answer (used
--- outside a repository, where there is no sidecar to ask).
---@param argv string[] the arguments after the binary
---@return table
local function cli_json(argv)
  local cmd = { config.cmd()[1] }
  vim.list_extend(cmd, argv)
  local res = async.await(function(cb)
    local ok, err = pcall(vim.system, cmd, { text = true }, vim.schedule_wrap(cb))
    if not ok then
      cb({ code = -1, stdout = '', stderr = tostring(err) })
    end
  end)
  local ok, decoded = pcall(vim.json.decode, res.stdout or '', { luanil = { object = true, array = true } })
  if res.code ~= 0 or not ok or type(decoded) ~= 'table' then
    async.fail(('%s failed: %s'):format(table.concat(cmd, ' '), vim.trim(res.stderr or '')))
  end
  return decoded
end

--- Every workspace: from the sidecar of `root`, else (outside a repository) from the CLI.
---@param root string?
---@return slipway.Workspace[]
local function list_workspaces(root)
  if root then
    return lsp.must(root, 'slipway.workspaces', {}).workspaces or {}
  end
  return cli_json({ 'workspace', 'list', '--json' }).workspaces or {}
end

--- `workspace`: an unattended run on a workspace; one branch picker per `ask` mount, in order.
function flows.workspace(args)
  local here = util.repo_root()
  local listed = list_workspaces(here)
  local usable, broken = {}, {}
  for _, ws in ipairs(listed) do
    if ws.error and ws.error ~= vim.NIL then
      broken[#broken + 1] = ('%s: %s'):format(ws.name, ws.error)
    else
      usable[#usable + 1] = ws
    end
  end
  if #broken > 0 then
    util.notify('unreadable workspaces:\n' .. table.concat(broken, '\n'), vim.log.levels.WARN)
  end
  local ws
  if args.workspace then
    for _, w in ipairs(usable) do
      if w.name == args.workspace then
        ws = w
      end
    end
    if not ws then
      async.fail('no workspace named ' .. args.workspace .. ' (slipway workspace list)')
    end
  else
    if #usable == 0 then
      async.fail('no workspaces (create one with: slipway workspace create NAME --mount SRC:DST …)')
    end
    ws = async.select(usable, {
      prompt = 'slipway: workspace',
      kind = 'slipway.workspace',
      format_item = function(w)
        local mounts = type(w.mounts) == 'table' and #w.mounts or w.mounts
        return ('%s  %s mount%s  workdir %s'):format(
          w.name,
          tostring(mounts or 0),
          mounts == 1 and '' or 's',
          tostring(w.workdir or '?')
        )
      end,
    })
  end
  -- Which repository a workspace runs in is the sidecar's decision
  -- (`repository` of `slipway.workspaces`); the request names none.
  local root = ws.repository or here
  if not root then
    async.fail('no repository to run from: the workspace ' .. ws.name .. ' has no mount that is a git repository')
  end
  local agent = agent_of(args)
  local prompt = args.prompt or async.input({ prompt = 'slipway: prompt for the agent: ' })
  -- The sandbox is the workspace's (or its repository's slipway.toml) unless configured.
  local request = {
    workspace = ws.name,
    agent = agent,
    sandbox = sandbox_of(args),
    prompt = prompt,
  }
  local started, err = trust.call(root, 'slipway.run', request)
  if err and type(err.data) == 'table' and err.data.kind == 'sourceBranchRequired' then
    local mounts = err.data.mounts
    if type(mounts) ~= 'table' or #mounts == 0 then
      async.fail(err.message)
    end
    local sources = vim.empty_dict()
    for _, m in ipairs(mounts) do
      -- Each choice is a whole branch entry: its details need no second request.
      local entries = type(m.choices) == 'table' and m.choices or {}
      if #entries == 0 then
        async.fail(('no branch to start %s from (%s)'):format(m.dst, err.message))
      end
      local by_name, names = {}, {}
      for _, b in ipairs(entries) do
        by_name[b.name] = b
        names[#names + 1] = b.name
      end
      local ref = async.select(names, {
        prompt = ('slipway: start %s from'):format(m.dst),
        kind = 'slipway.mount_branch',
        format_item = function(name)
          return pick.format_branch(by_name[name])
        end,
      })
      sources[m.dst] = { policy = 'named', ref = ref }
    end
    request.sources = sources
    started, err = trust.call(root, 'slipway.run', request)
  end
  if err then
    lsp.fail(root, err)
  end
  util.notify(('run %s started on workspace %s; it goes on if you close the editor'):format(started.runId, ws.name))
  fire('SlipwayRunStarted', { runId = started.runId, workspace = ws.name, root = root })
  return started
end

--- `list`: every slipway worktree of the repository, one row each, in the
--- `slipway://list` buffer (a message would show only its first line).
function flows.list(_)
  local root = need_root()
  local answer = lsp.must(root, 'slipway.list', { root = root })
  local list = answer.worktrees or {}
  local kept = type(answer.keptBranches) == 'table' and answer.keptBranches or {}
  if #list == 0 and #kept == 0 then
    util.notify('no slipway worktrees in ' .. root)
    return list
  end
  local lines = {
    ('%d worktree%s in %s'):format(#list, #list == 1 and '' or 's', root),
  }
  for _, w in ipairs(list) do
    lines[#lines + 1] = '  ' .. pick.format_worktree(w)
    lines[#lines + 1] = '      ' .. w.path
  end
  for _, k in ipairs(kept) do
    lines[#lines + 1] = ('  %s  kept branch, no worktree  %d ahead, %d behind  (:Slipway review %s)'):format(
      k.branch,
      tonumber(k.ahead) or 0,
      tonumber(k.behind) or 0,
      k.branch
    )
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = 'q closes; :Slipway review|land|discard|close BRANCH acts on a row'
  util.show_lines('slipway://list', lines)
  return list
end

--- `close`: close a worktree; when it is preserved, show what would be lost, then offer force.
function flows.close(args)
  local root = need_root()
  local id = args.worktree
  if not id then
    id = pick.worktree(root, 'slipway: close worktree').id
  end
  local first = lsp.must(root, 'slipway.close', { root = root, worktree = id, force = false })
  local function removed(answer)
    local text = ('closed %s: worktree removed'):format(answer.branch or id)
    if answer.branchDeleted then
      text = text .. ', branch deleted'
    end
    if answer.branchKept and answer.branchKept ~= vim.NIL then
      text = text .. '\n' .. tostring(answer.branchKept)
    end
    util.notify(text)
    if answer.path then
      M.removed(answer.path, root)
    end
    return answer
  end
  if first.removed then
    return removed(first)
  end
  local changed = first.changedPaths or {}
  local lines = {
    ('%s was kept: %s'):format(first.branch or id, first.reason or 'it has uncommitted changes'),
  }
  if #changed > 0 then
    lines[#lines + 1] = ('%d uncommitted path%s would be lost:'):format(#changed, #changed == 1 and '' or 's')
    for i, p in ipairs(changed) do
      if i > 20 then
        lines[#lines + 1] = ('  … and %d more'):format(#changed - 20)
        break
      end
      lines[#lines + 1] = '  ' .. p
    end
  end
  for _, c in ipairs(first.commands or {}) do
    lines[#lines + 1] = '  inspect: ' .. c
  end
  lines[#lines + 1] = util.actions_text(first.actions)
  util.notify(table.concat(lines, '\n'), vim.log.levels.WARN)
  local choice = async.select({ 'keep', 'force' }, {
    prompt = ('slipway: discard %d uncommitted path%s in %s?'):format(
      #changed,
      #changed == 1 and '' or 's',
      first.preservedPath or id
    ),
    kind = 'slipway.close',
    format_item = function(c)
      return c == 'keep' and 'Keep the worktree'
        or ('Force close: discard %d uncommitted path%s'):format(#changed, #changed == 1 and '' or 's')
    end,
  })
  if choice ~= 'force' then
    -- Asked to close it: no longer a worktree only "handed off" by the user.
    if first.preservedPath and first.preservedPath ~= vim.NIL then
      require('slipway.status').own[util.realpath(first.preservedPath)] = nil
    end
    util.notify('kept ' .. (first.preservedPath or id))
    return first
  end
  local forced = lsp.must(root, 'slipway.close', { root = root, worktree = first.id or id, force = true })
  if not forced.removed then
    async.fail('the worktree was not removed: ' .. tostring(forced.reason))
  end
  return removed(forced)
end

--- `cancel`: stop a run in progress.
function flows.cancel(args)
  local root = need_root()
  local run_id = args.run
  if not run_id then
    local running = {}
    for _, r in ipairs(require('slipway.status').running_runs()) do
      running[#running + 1] = { runId = r.run.runId, branch = r.run.branch, root = r.root }
    end
    if #running == 0 then
      for _, w in ipairs(pick.worktrees(root)) do
        if w.state == 'running' and w.runId and w.runId ~= vim.NIL then
          running[#running + 1] = { runId = w.runId, branch = w.branch, root = root }
        end
      end
    end
    if #running == 0 then
      util.notify('no run in progress')
      return nil
    end
    local r = async.select(running, {
      prompt = 'slipway: cancel run',
      kind = 'slipway.run',
      format_item = function(r)
        local step = require('slipway.activity').step(r.runId)
        return ('%s  %s%s'):format(r.runId, r.branch ~= vim.NIL and r.branch or '', step and ('  · ' .. step) or '')
      end,
    })
    run_id, root = r.runId, r.root or root
  end
  local answer = lsp.must(root, 'slipway.cancel', { runId = run_id, root = root })
  util.notify(('run %s: %s'):format(run_id, answer.status or 'cancel requested'))
  return answer
end

--- The runs of `root` waiting for an answer: those heard ending so, else
--- those `slipway.runs` lists as `needsInput`.
---@param root string
---@return { runId: string, question: string, branch?: string, root: string }[]
local function waiting_runs(root)
  local activity = require('slipway.activity')
  local out = {}
  local real = util.realpath(root)
  for id, q in pairs(activity.waiting) do
    if q.root == real then
      out[#out + 1] = { runId = id, question = q.question, branch = q.branch, root = root }
    end
  end
  if #out == 0 then
    for _, r in ipairs(lsp.must(root, 'slipway.runs', { root = root }).runs or {}) do
      if r.status == 'needsInput' and type(r.question) == 'table' then
        out[#out + 1] = { runId = r.runId, question = tostring(r.question.text), branch = r.branch, root = root }
      end
    end
  end
  table.sort(out, function(a, b)
    return a.runId > b.runId
  end)
  return out
end

--- `reply`: answer a run that ended asking; a new run resumes its session.
function flows.reply(args)
  local root = need_root()
  local waiting = waiting_runs(root)
  local chosen
  for _, r in ipairs(waiting) do
    if r.runId == args.run then
      chosen = r
    end
  end
  if not chosen and args.run then
    chosen = { runId = args.run, question = nil, root = root }
  elseif not chosen then
    if #waiting == 0 then
      util.notify('no run is waiting for input')
      return nil
    end
    chosen = #waiting == 1 and waiting[1]
      or async.select(waiting, {
        prompt = 'slipway: reply to run',
        kind = 'slipway.run',
        format_item = function(r)
          return ('%s  %s  · %s'):format(r.runId, r.branch ~= vim.NIL and r.branch or '', r.question)
        end,
      })
  end
  local question = chosen.question and (chosen.question .. '\n') or ''
  local answer = args.prompt or async.input({ prompt = ('%sslipway: answer to %s: '):format(question, chosen.runId) })
  local started = lsp.must(chosen.root, 'slipway.reply', { runId = chosen.runId, answer = answer, root = chosen.root })
  require('slipway.activity').waiting[chosen.runId] = nil
  util.notify(('run %s answers %s (:Slipway log %s)'):format(started.runId, chosen.runId, started.runId))
  vim.cmd('redrawstatus!')
  return started
end

--- `problems`: slipway's diagnostics into the quickfix list.
function flows.problems(_)
  local items = {}
  for _, d in ipairs(vim.diagnostic.get()) do
    if d.source == 'slipway' then
      items[#items + 1] = d
    end
  end
  local qf = vim.diagnostic.toqflist(items)
  vim.fn.setqflist({}, ' ', { title = 'slipway problems', items = qf })
  if #qf == 0 then
    util.notify('no slipway problems')
  else
    vim.cmd('copen')
  end
  return qf
end

--- `review`: the worktree's changed files in the quickfix list, the first one's diff shown.
function flows.review(args)
  local root = need_root()
  local w = current_or_pick(args, root, 'slipway: review worktree')
  return require('slipway.review').open(root, w)
end

--- `land`: bring a worktree's branch into a host branch (merge, squash or rebase: the sidecar's `landModes`).
function flows.land(args)
  local root = need_root()
  local w = current_or_pick(args, root, 'slipway: land worktree')
  local how = args.how
  if not how or how == '' then
    local modes = lsp.names(root, 'landModes')
    if #modes == 0 then
      async.fail('the sidecar offers no land modes; update the binary and the plugin together')
    end
    how = async.select(modes, {
      prompt = ('slipway: land %s how?'):format(w.branch),
      kind = 'slipway.land',
    })
  end
  if w.path then
    buffers.offer_write(w.path, 'land')
  end
  local answer = lsp.must(root, 'slipway.land', {
    root = root,
    worktree = w.id,
    how = how,
    into = args.into,
    message = args.message,
  })
  local into = answer.into ~= vim.NIL and answer.into or 'the host branch'
  local text = ('landed %s into %s (%s%s)'):format(
    w.branch,
    tostring(into),
    tostring(answer.kind ~= vim.NIL and answer.kind or how),
    (answer.commit and answer.commit ~= vim.NIL) and (' ' .. util.short(answer.commit)) or ''
  )
  local lines = { text }
  vim.list_extend(lines, trust.sensitive_lines(answer.sensitiveChanges))
  if answer.removed == true then
    lines[#lines + 1] = 'worktree removed'
  elseif w.path then
    lines[#lines + 1] = ('next: :Slipway discard %s removes the worktree and its branch'):format(w.branch)
  end
  util.notify(table.concat(lines, '\n'))
  buffers.reload({ root })
  if w.path and not vim.uv.fs_stat(w.path) then
    M.removed(w.path, root)
  elseif w.path then
    buffers.reload({ w.path })
  end
  fire('SlipwayLanded', vim.tbl_extend('force', { root = root, worktree = w.id, branch = w.branch }, answer))
  return answer
end

--- `discard`: remove a worktree (or a kept branch) and its branch. The
--- sidecar says what would be lost (`dryRun`); only when that is not nothing
--- does a confirmation list it, and nothing happens without it.
function flows.discard(args)
  local root = need_root()
  local w = current_or_pick(args, root, 'slipway: discard worktree')
  local preview = lsp.must(root, 'slipway.discard', { root = root, worktree = w.id, dryRun = true })
  local risk = type(preview.atRisk) == 'table' and preview.atRisk or {}
  local uncommitted = type(risk.uncommitted) == 'table' and risk.uncommitted or {}
  local commits = type(risk.commits) == 'table' and risk.commits or {}
  local force = false
  if #uncommitted + #commits > 0 then
    local lost = {}
    if #commits > 0 then
      lost[#lost + 1] = ('%d commit%s'):format(#commits, #commits == 1 and '' or 's')
    end
    if #uncommitted > 0 then
      lost[#lost + 1] = ('%d uncommitted file%s'):format(#uncommitted, #uncommitted == 1 and '' or 's')
    end
    local what = table.concat(lost, ' and ')
    local lines = { ('discarding %s loses %s:'):format(w.branch, what) }
    for _, c in ipairs(commits) do
      lines[#lines + 1] = ('  commit %s %s'):format(util.short(c.sha), tostring(c.subject))
    end
    for _, p in ipairs(uncommitted) do
      lines[#lines + 1] = '  uncommitted ' .. p
    end
    util.notify(table.concat(lines, '\n'), vim.log.levels.WARN)
    local choice = async.select({ 'keep', 'discard' }, {
      prompt = ('slipway: discard %s (worktree and branch)? %s would be lost'):format(w.branch, what),
      kind = 'slipway.discard',
      format_item = function(c)
        return c == 'keep' and 'Keep it' or ('Discard %s: lose %s'):format(w.branch, what)
      end,
    })
    if choice ~= 'discard' then
      util.notify('kept ' .. w.branch)
      return nil
    end
    force = true
  end
  if w.path then
    buffers.offer_write(w.path, 'discard')
  end
  local answer = lsp.must(root, 'slipway.discard', { root = root, worktree = w.id, force = force })
  if answer.removed == false then
    local lines = { ('%s was not discarded: %s'):format(w.branch, tostring(answer.reason)) }
    lines[#lines + 1] = util.actions_text(answer.actions)
    util.notify(table.concat(lines, '\n'), vim.log.levels.WARN)
    return answer
  end
  util.notify(('discarded %s: %s'):format(w.branch, w.path and 'worktree and branch removed' or 'branch removed'))
  local path = util.present(answer.path) or w.path
  if path then
    M.removed(path, root)
  end
  return answer
end

--- `log`: a buffer that follows a run's output.
function flows.log(args)
  local root = need_root()
  local run_id = args.run
  if not run_id or run_id == '' then
    local listed = lsp.must(root, 'slipway.runs', { root = root }).runs or {}
    if #listed == 0 then
      util.notify('no runs in ' .. root)
      return nil
    end
    local r = async.select(listed, {
      prompt = 'slipway: log of run',
      kind = 'slipway.run',
      format_item = require('slipway.activity').row,
    })
    run_id = r.runId
  end
  return require('slipway.log').open(root, run_id)
end

--- `stop`: ends the interactive agent `:Slipway agent` started in a worktree
--- (the current one, else the one named, else the only one, else a picker) and
--- waits for its exit.
function flows.stop(args)
  local terminals = require('slipway.terminals')
  local live = terminals.list()
  if #live == 0 then
    util.notify('no interactive agent is running')
    return nil
  end
  local target
  local wanted = args.worktree
  local here = util.realpath(util.current_path())
  for _, t in ipairs(live) do
    if wanted and (t.branch == wanted or t.path == util.realpath(wanted)) then
      target = t
    elseif not wanted and (util.is_within(here, t.path) or vim.api.nvim_get_current_buf() == t.buf) then
      target = t
    end
  end
  if wanted and not target then
    async.fail('no interactive agent runs in ' .. wanted)
  end
  if not target and #live == 1 then
    target = live[1]
  elseif not target then
    target = async.select(live, {
      prompt = 'slipway: stop the agent in',
      kind = 'slipway.terminal',
      format_item = function(t)
        return ('%s  %s'):format(t.branch or '', t.path)
      end,
    })
  end
  local code = async.await(function(cb)
    terminals.stop(target.path, cb)
  end)
  util.notify(('stopped the interactive agent in %s (exit %s)'):format(target.branch or target.path, tostring(code)))
  return { path = target.path, code = code }
end

--- `runs`: the runs of the repository in the `slipway://runs` buffer, each
--- with its latest step, elapsed time, tokens and cost (kept up to date while open).
function flows.runs(_)
  local root = need_root()
  local listed = lsp.must(root, 'slipway.runs', { root = root }).runs or {}
  if #listed == 0 then
    util.notify('no runs in ' .. root)
    return listed
  end
  return { buf = require('slipway.activity').show(root, listed), runs = listed }
end

--- `attempts`: a group of attempts side by side (picked from the
--- repository's groups when none is named), with keys to diff, compare and land.
function flows.attempts(args)
  local root = need_root()
  local attempts = require('slipway.attempts')
  local group = util.present(args.group) or attempts.pick_group(root)
  return attempts.open(root, group)
end

--- `details`: every message in full, in the `slipway://details` buffer.
function flows.details(_)
  return { buf = util.show_details() }
end

--- Every subcommand, in the order completion offers them.
M.subcommands = require('slipway.subcommands')

--- The `key=` arguments each subcommand takes.
M.keys = {
  new = { 'strategy=', 'branch=', 'base=', 'source=', 'how=', 'open=' },
  branch = { 'strategy=', 'branch=', 'how=' },
  open = { 'worktree=', 'how=' },
  agent = { 'worktree=', 'agent=' },
  handoff = { 'worktree=', 'agent=', 'sandbox=', 'network=', 'prompt=' },
  run = { 'strategy=', 'branch=', 'base=', 'source=', 'agent=', 'sandbox=', 'network=', 'prompt=' },
  workspace = { 'workspace=', 'agent=', 'sandbox=', 'network=', 'prompt=' },
  list = {},
  review = { 'worktree=' },
  land = { 'worktree=', 'how=', 'into=', 'message=' },
  discard = { 'worktree=' },
  runs = {},
  attempts = { 'group=' },
  log = { 'run=' },
  stop = { 'worktree=' },
  close = { 'worktree=' },
  cancel = { 'run=' },
  reply = { 'run=', 'prompt=' },
  problems = {},
  details = {},
}

--- What a bare word is, per subcommand (the rest: a worktree).
local positional = {
  cancel = 'run',
  reply = 'run',
  log = 'run',
  attempts = 'group',
  workspace = 'workspace',
  list = false,
  problems = false,
  details = false,
  runs = false,
}

--- The root for completion: the current buffer's repository, without waiting.
local function completion_root()
  local ok, root = pcall(util.repo_root)
  return ok and root or nil
end

--- Worktree branch names then ids, from the status cache (else a short `slipway.list`).
---@return string[]
local function worktree_names()
  local status = require('slipway.status')
  local root = completion_root()
  local worktrees
  for _, repo in ipairs(status.repositories()) do
    if not root or util.realpath(repo.root or '') == root then
      worktrees = repo.worktrees
    end
  end
  if not worktrees and root then
    local client = lsp.client_for(root)
    if client and client.initialized then
      local res = client:request_sync('workspace/executeCommand', {
        command = 'slipway.list',
        arguments = { { root = root } },
      }, 1000)
      worktrees = res and res.result and res.result.worktrees or nil
    end
  end
  local names, ids = {}, {}
  for _, w in ipairs(worktrees or {}) do
    names[#names + 1] = w.branch
    ids[#ids + 1] = w.id
  end
  return vim.list_extend(names, ids)
end

--- Run ids: running ones first (status cache), then those that finished here.
---@return string[]
local function run_ids()
  local out, seen = {}, {}
  local function add(id)
    if type(id) == 'string' and not seen[id] then
      seen[id] = true
      out[#out + 1] = id
    end
  end
  for _, r in ipairs(require('slipway.status').running_runs()) do
    add(r.run.runId)
  end
  for _, repo in ipairs(require('slipway.status').repositories()) do
    for _, r in ipairs(repo.runs or {}) do
      add(r.runId)
    end
  end
  local finished = require('slipway.runs').finished
  for i = #finished, 1, -1 do
    add(finished[i].runId)
  end
  return out
end

--- The values each `key=` completes to (`sub` is the subcommand); names are
--- what a running sidecar accepts (none before one runs).
local values = {
  strategy = function()
    return lsp.known_names('strategies')
  end,
  source = function()
    return vim.tbl_map(function(p)
      return p == 'named' and 'named:' or p
    end, lsp.known_names('policies'))
  end,
  how = function(sub)
    if sub == 'land' then
      return lsp.known_names('landModes')
    end
    return { 'tab', 'window', 'cd' }
  end,
  open = function()
    return { 'true', 'false' }
  end,
  agent = function()
    return lsp.known_names('agents')
  end,
  sandbox = function()
    return lsp.known_names('sandboxes')
  end,
  worktree = worktree_names,
  run = function(sub)
    if sub ~= 'reply' then
      return run_ids()
    end
    local ids = vim.tbl_keys(require('slipway.activity').waiting)
    table.sort(ids)
    return ids
  end,
  group = function()
    return {}
  end,
  workspace = function()
    return {}
  end,
}

--- Runs one subcommand as a flow.
---@param name string
---@param args? slipway.CommandArgs
function M.run(name, args)
  args = args or {}
  local flow = flows[name]
  if not flow then
    util.notify(
      ('unknown subcommand %q; use one of: %s'):format(name, table.concat(M.subcommands, ', ')),
      vim.log.levels.ERROR
    )
    return
  end
  async.run(function()
    return flow(args)
  end, args.on_done)
end

--- Parses `key=value` words; a bare word is the worktree (the run for
--- `cancel` and `log`). `prompt=` takes the rest of the line.
---@param name string
---@param words string[]
---@param line? string the raw arguments after the subcommand (for `prompt=`)
---@return slipway.CommandArgs
function M.parse(name, words, line)
  local args = {}
  if line then
    local before, prompt = (' ' .. line):match('^(.-)%sprompt=(.*)$')
    if before then
      words = vim.split(before, '%s+', { trimempty = true })
      args.prompt = prompt
    end
  end
  for _, word in ipairs(words) do
    local k, v = word:match('^([%w_]+)=(.*)$')
    if k then
      args[k] = v
    elseif positional[name] == 'run' then
      args.run = word
    elseif positional[name] == 'group' then
      args.group = word
    elseif name == 'workspace' then
      if args.workspace then
        args.prompt = (args.prompt and (args.prompt .. ' ') or '') .. word
      else
        args.workspace = word
      end
    elseif name == 'handoff' and args.worktree then
      args.prompt = (args.prompt and (args.prompt .. ' ') or '') .. word
    else
      args.worktree = word
    end
  end
  return args
end

--- The `:Slipway` command.
---@param info { fargs: string[], args?: string }
function M.dispatch(info)
  local words = vim.deepcopy(info.fargs or {})
  local name = table.remove(words, 1)
  if not name then
    async.run(function()
      local chosen = async.select(M.subcommands, { prompt = 'slipway', kind = 'slipway.subcommand' })
      return flows[chosen]({})
    end)
    return
  end
  local line = info.args and info.args:match('^%s*%S+%s*(.*)$') or nil
  M.run(name, M.parse(name, words, line))
end

--- Completion of `:Slipway`: subcommands, keys, and values: worktree branch
--- names and ids, run ids, and the agent, sandbox, policy, strategy and land
--- mode names of the running sidecar.
---@param arglead string
---@param cmdline string
---@return string[]
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, '%s+', { trimempty = true })
  local typing_new_word = cmdline:match('%s$') ~= nil
  local index = #words + (typing_new_word and 1 or 0)
  local candidates
  if index <= 2 then
    candidates = M.subcommands
  else
    local sub = words[2]
    local key = arglead:match('^([%w_]+)=')
    if key == 'prompt' or cmdline:match('%sprompt=.*%s') then
      return {}
    end
    if key and values[key] then
      local ok, got = pcall(values[key], sub)
      candidates = vim.tbl_map(function(v)
        return key .. '=' .. v
      end, ok and got or {})
    else
      candidates = vim.deepcopy(M.keys[sub] or {})
      local bare = positional[sub]
      if bare == nil and vim.list_contains(M.keys[sub] or {}, 'worktree=') then
        bare = 'worktree'
      end
      if bare and values[bare] and not arglead:find('=', 1, true) then
        local ok, got = pcall(values[bare], sub)
        candidates = vim.list_extend(ok and got or {}, candidates)
      end
    end
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, candidates)
end

return M
