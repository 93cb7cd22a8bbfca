-- A small test harness for the plugin in a real headless Neovim: tests,
-- assertions, waiting, scripted pickers, captured notifications, and real git
-- repositories built with the git CLI. No third-party framework.
--
-- scripts/nvim-test.sh runs one Neovim per spec file with a hermetic HOME and
-- git config; results go to $SLIPWAY_TEST_RESULTS, one line per test.

local H = {}

---@type { name: string, fn: fun() }[]
local tests = {}

--- Registers a test.
---@param name string
---@param fn fun()
function H.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

-- Assertions ---------------------------------------------------------------

---@param got any
---@param want any
---@param what? string
function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(('%s: expected %s, got %s'):format(what or 'value', vim.inspect(want), vim.inspect(got)), 2)
  end
end

---@param cond any
---@param what string
function H.ok(cond, what)
  if not cond then
    error('expected: ' .. what, 2)
  end
end

---@param text string
---@param needle string
---@param what? string
function H.contains(text, needle, what)
  if type(text) ~= 'string' or not text:find(needle, 1, true) then
    error(('%s: %s does not contain %s'):format(what or 'text', vim.inspect(text), vim.inspect(needle)), 2)
  end
end

---@param text string
---@param needle string
---@param what? string
function H.not_contains(text, needle, what)
  if type(text) == 'string' and text:find(needle, 1, true) then
    error(('%s: %s contains %s'):format(what or 'text', vim.inspect(text), vim.inspect(needle)), 2)
  end
end

--- Waits (processing events) until `cond()` is truthy; fails after `ms`.
---@param cond fun(): any
---@param what string
---@param ms? integer default 30000
---@return any
function H.wait(cond, what, ms)
  local value
  local ok = vim.wait(ms or 30000, function()
    value = cond()
    return value
  end, 50)
  if not ok then
    error(('timed out after %d ms waiting for %s\n%s'):format(ms or 30000, what, H.debug_state()), 2)
  end
  return value
end

--- Waits until every callback scheduled so far has run, and those they
--- schedule in turn: what earlier events were going to say has been said.
function H.settle()
  local done = false
  vim.schedule(function()
    vim.schedule(function()
      done = true
    end)
  end)
  H.wait(function()
    return done
  end, 'the event loop to run what was scheduled')
end

-- Notifications ------------------------------------------------------------

--- Every notification: `msg` is the whole text (`opts.details` of the
--- plugin's `vim.notify` calls), `line` what was shown.
---@type { msg: string, line: string, level: integer, seq: integer }[]
H.notes = {}
--- Everything the UI did, in order: notifications, pickers, inputs.
---@type string[]
H.events = {}

local real_notify = vim.notify

local function capture_notify(msg, level, opts)
  local full = type(opts) == 'table' and type(opts.details) == 'string' and opts.details or tostring(msg)
  H.notes[#H.notes + 1] =
    { msg = full, line = tostring(msg), level = level or vim.log.levels.INFO, seq = #H.events + 1 }
  H.events[#H.events + 1] = 'notify: ' .. full
end

--- Fails when a notification was shown on more than one line or wider than an
--- echo without a hit-enter prompt.
function H.notes_one_line()
  for _, n in ipairs(H.notes) do
    if n.line:find('\n', 1, true) or vim.fn.strdisplaywidth(n.line) >= math.max(vim.v.echospace, 40) then
      error('a notification that is not one short line: ' .. vim.inspect(n.line), 2)
    end
  end
end

--- The first notification (after index `from`) containing `needle`.
---@param needle string
---@param from? integer
---@return { msg: string, level: integer, seq: integer }?
function H.find_note(needle, from)
  for i = (from or 0) + 1, #H.notes do
    if H.notes[i].msg:find(needle, 1, true) then
      return H.notes[i]
    end
  end
end

--- Waits for a notification containing `needle`.
---@param needle string
---@param ms? integer
---@param from? integer
function H.wait_note(needle, ms, from)
  return H.wait(function()
    return H.find_note(needle, from)
  end, 'a notification containing ' .. vim.inspect(needle), ms)
end

-- Scripted pickers ---------------------------------------------------------

---@class harness.Step
---@field kind? string the `opts.kind` the picker must have
---@field choose string|fun(item: any, text: string): boolean

---@type harness.Step[]
local select_queue = {}
---@type (string|false)[]
local input_queue = {}
--- Every picker shown: kind, prompt and the items as they read.
---@type { kind: string?, prompt: string?, items: string[], raw: any[] }[]
H.pickers = {}
---@type { prompt: string? }[]
H.inputs = {}
---@type string[]
H.ui_errors = {}

--- Queues the answers of the next `vim.ui.select` calls.
---@param steps harness.Step[]
function H.script_select(steps)
  vim.list_extend(select_queue, steps)
end

--- Queues the answers of the next `vim.ui.input` calls (`false` dismisses).
---@param answers (string|false)[]
function H.script_input(answers)
  vim.list_extend(input_queue, answers)
end

local function fake_select(items, opts, on_choice)
  opts = opts or {}
  local fmt = opts.format_item or tostring
  local texts = {}
  for i, item in ipairs(items) do
    texts[i] = fmt(item)
  end
  H.pickers[#H.pickers + 1] = { kind = opts.kind, prompt = opts.prompt, items = texts, raw = items }
  H.events[#H.events + 1] = 'select: ' .. tostring(opts.prompt)
  local step = table.remove(select_queue, 1)
  local chosen, index
  if not step then
    H.ui_errors[#H.ui_errors + 1] = 'unexpected picker ' .. vim.inspect(opts.prompt) .. ' ' .. vim.inspect(texts)
  elseif step.kind and step.kind ~= opts.kind then
    H.ui_errors[#H.ui_errors + 1] = ('picker kind %s, expected %s (%s)'):format(
      tostring(opts.kind),
      step.kind,
      tostring(opts.prompt)
    )
  else
    -- A function decides; a string is an item itself first, else a part of an item's text.
    local tries = type(step.choose) == 'function' and { step.choose }
      or {
        function(item)
          return item == step.choose
        end,
        function(_, text)
          return text:find(step.choose, 1, true) ~= nil
        end,
      }
    for _, try in ipairs(tries) do
      for i, item in ipairs(items) do
        if not chosen and try(item, texts[i]) then
          chosen, index = item, i
        end
      end
    end
    if not chosen then
      H.ui_errors[#H.ui_errors + 1] = ('no item of %s matches the script: %s'):format(
        vim.inspect(opts.prompt),
        vim.inspect(texts)
      )
    end
  end
  vim.schedule(function()
    on_choice(chosen, index)
  end)
end

local function fake_input(opts, on_confirm)
  opts = opts or {}
  H.inputs[#H.inputs + 1] = { prompt = opts.prompt }
  H.events[#H.events + 1] = 'input: ' .. tostring(opts.prompt)
  local answer = table.remove(input_queue, 1)
  if answer == nil then
    H.ui_errors[#H.ui_errors + 1] = 'unexpected input ' .. vim.inspect(opts.prompt)
  end
  vim.schedule(function()
    on_confirm(answer or nil)
  end)
end

--- Fails when a scripted answer was left unused or a picker went unanswered.
function H.ui_done()
  H.notes_one_line()
  if #H.ui_errors > 0 then
    error('scripted UI: ' .. table.concat(H.ui_errors, '\n'), 2)
  end
  if #select_queue > 0 or #input_queue > 0 then
    error(('scripted UI: %d picker and %d input answers unused'):format(#select_queue, #input_queue), 2)
  end
end

--- Writes the user's slipway config (`$XDG_CONFIG_HOME/slipway/config.toml`:
--- run defaults for every repository); nil removes it.
---@param text string?
function H.user_config(text)
  local dir = vim.env.XDG_CONFIG_HOME .. '/slipway'
  local file = dir .. '/config.toml'
  if text == nil then
    os.remove(file)
    return
  end
  vim.fn.mkdir(dir, 'p')
  H.write(file, text)
end

--- The last picker of `kind`.
---@param kind string
function H.picker(kind)
  for i = #H.pickers, 1, -1 do
    if H.pickers[i].kind == kind then
      return H.pickers[i]
    end
  end
end

-- Processes and git --------------------------------------------------------

---@param argv string[]
---@param cwd? string
---@return { code: integer, stdout: string, stderr: string }
function H.system(argv, cwd)
  return vim.system(argv, { cwd = cwd, text = true }):wait(60000)
end

--- Runs git in `dir`; fails with its output when it fails; returns trimmed stdout.
---@param dir string
---@param ... string
---@return string
function H.git(dir, ...)
  local argv = { 'git', ... }
  local res = H.system(argv, dir)
  if res.code ~= 0 then
    error(('%s failed in %s:\n%s%s'):format(table.concat(argv, ' '), dir, res.stdout or '', res.stderr or ''), 2)
  end
  return vim.trim(res.stdout or '')
end

---@param dir string
---@param rev string
---@return string
function H.rev(dir, rev)
  return H.git(dir, 'rev-parse', rev)
end

---@param path string
---@param text string
function H.write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local fd = assert(io.open(path, 'w'))
  fd:write(text)
  fd:close()
end

---@param path string
---@return boolean
function H.exists(path)
  return vim.uv.fs_stat(path) ~= nil
end

---@param dir string
---@param file string
---@param text string
---@param message string
function H.commit_file(dir, file, text, message)
  H.write(dir .. '/' .. file, text)
  H.git(dir, 'add', '--', file)
  H.git(dir, 'commit', '-q', '-m', message)
end

local counter = 0

--- A fresh folder for one test under $SLIPWAY_TEST_TMP.
---@return string
function H.tmpdir()
  counter = counter + 1
  local base = vim.env.SLIPWAY_TEST_TMP or vim.fn.tempname()
  local dir = ('%s/t%d'):format(base, counter)
  vim.fn.mkdir(dir, 'p')
  return assert(vim.uv.fs_realpath(dir))
end

---@class harness.Repos
---@field dir string
---@field upstream string
---@field repo string the host checkout (a clone of upstream)

--- An upstream repository with `main` and `feature/x`, and a clone of it
--- whose own local `feature/x` differs from `origin/feature/x`.
---@return harness.Repos
function H.repo_with_remote()
  local dir = H.tmpdir()
  local upstream = dir .. '/upstream'
  vim.fn.mkdir(upstream, 'p')
  H.git(upstream, 'init', '-q', '-b', 'main')
  H.commit_file(upstream, 'README.md', 'hello\n', 'initial commit')
  H.git(upstream, 'checkout', '-q', '-b', 'feature/x')
  H.commit_file(upstream, 'remote-x.txt', 'remote x\n', 'remote feature x')
  H.git(upstream, 'checkout', '-q', 'main')
  H.git(dir, 'clone', '-q', upstream, 'repo')
  local repo = dir .. '/repo'
  H.git(repo, 'checkout', '-q', '-b', 'feature/x', 'main')
  H.commit_file(repo, 'local-x.txt', 'local x\n', 'local feature x')
  H.git(repo, 'checkout', '-q', 'main')
  return { dir = dir, upstream = upstream, repo = repo }
end

--- A plain repository with one commit on `main`.
---@return string repo
function H.repo()
  local dir = H.tmpdir()
  local repo = dir .. '/repo'
  vim.fn.mkdir(repo, 'p')
  H.git(repo, 'init', '-q', '-b', 'main')
  H.commit_file(repo, 'README.md', 'hello\n', 'initial commit')
  return repo
end

--- Writes an executable shell script and returns its path.
---@param path string
---@param body string
---@return string
function H.script(path, body)
  H.write(path, '#!/bin/sh\nset -eu\n' .. body)
  vim.uv.fs_chmod(path, tonumber('755', 8))
  return path
end

-- Plugin helpers -------------------------------------------------------------

--- Runs a `:Slipway` subcommand through the plugin and waits for its flow to end.
---@param name string
---@param args? table
---@param ms? integer
---@return boolean ok
---@return any result
function H.slipway(name, args, ms)
  local done, ok, result = false, nil, nil
  args = vim.tbl_extend('force', args or {}, {
    on_done = function(o, r)
      done, ok, result = true, o, r
    end,
  })
  require('slipway.commands').run(name, args)
  H.wait(function()
    return done
  end, ':Slipway ' .. name .. ' to finish', ms or 60000)
  return ok, result
end

--- Every slipway diagnostic Neovim holds.
---@return vim.Diagnostic[]
function H.slipway_diagnostics()
  return vim.tbl_filter(function(d)
    return d.source == 'slipway'
  end, vim.diagnostic.get())
end

--- What the test state looks like, for failure messages.
---@return string
function H.debug_state()
  local lines = { '--- last UI events:' }
  for i = math.max(1, #H.events - 15), #H.events do
    lines[#lines + 1] = '  ' .. H.events[i]:gsub('\n', '\n    ')
  end
  if #H.ui_errors > 0 then
    lines[#lines + 1] = '--- scripted UI errors: ' .. table.concat(H.ui_errors, '; ')
  end
  local ok, status = pcall(function()
    return require('slipway.status').statusline()
  end)
  lines[#lines + 1] = '--- statusline: ' .. vim.inspect(ok and status or 'error')
  return table.concat(lines, '\n')
end

--- Stops every LSP client and waits until they are gone.
function H.stop_clients()
  local clients = vim.lsp.get_clients()
  for _, c in ipairs(clients) do
    c:stop(true)
  end
  vim.wait(5000, function()
    return #vim.lsp.get_clients() == 0
  end, 20)
end

local function reset()
  H.notes, H.events, H.pickers, H.inputs, H.ui_errors = {}, {}, {}, {}, {}
  -- A test that failed half way leaves no defaults for the next one.
  H.user_config(nil)
  select_queue, input_queue = {}, {}
  vim.notify = capture_notify
  vim.ui.select = fake_select
  vim.ui.input = fake_input
  vim.g.slipway = { cmd = { vim.env.SLIPWAY_BIN, 'lsp' } }
  require('slipway.config').set(nil)
end

--- Cancels every run the status cache says is running (a failed test must not leave agents behind).
function H.cancel_runs()
  local pending = 0
  for _, r in ipairs(require('slipway.status').running_runs()) do
    pending = pending + 1
    require('slipway.lsp').exec(r.root, 'slipway.cancel', { runId = r.run.runId, root = r.root }, function()
      pending = pending - 1
    end)
  end
  vim.wait(5000, function()
    return pending == 0
  end, 20)
end

local function cleanup()
  H.cancel_runs()
  H.stop_clients()
  pcall(vim.cmd, 'silent! tabonly!')
  pcall(vim.cmd, 'silent! only!')
  pcall(vim.cmd, 'enew!')
  pcall(vim.cmd, 'silent! %bwipeout!')
  pcall(vim.cmd, 'cd ' .. vim.fn.fnameescape(vim.env.SLIPWAY_TEST_TMP or '/'))
  vim.diagnostic.reset()
  require('slipway.status').by_client = {}
end

--- Appends one line to the results file.
---@param line string
local function emit(line)
  local path = vim.env.SLIPWAY_TEST_RESULTS
  if path then
    local fd = assert(io.open(path, 'a'))
    fd:write(line, '\n')
    fd:close()
  else
    io.stdout:write(line, '\n')
  end
end

--- Runs every test of `spec`, writes one result line per test, then quits Neovim.
---@param spec string path of a `*_spec.lua` file
function H.main(spec)
  -- A terminal of 120 columns (one-line messages are checked against its echo space).
  vim.o.columns = 120
  local name = vim.fn.fnamemodify(spec, ':t:r')
  local loaded, load_err = xpcall(dofile, debug.traceback, spec)
  if not loaded then
    emit(('FAIL\t%s: loading the spec\t%s'):format(name, (tostring(load_err):gsub('\n', '\\n'))))
  elseif #tests == 0 then
    -- A spec that runs nothing proves nothing: that is a failure, not a pass.
    emit(('FAIL\t%s: the spec defines no test\t'):format(name))
  end
  for _, t in ipairs(tests) do
    reset()
    local started = vim.uv.hrtime()
    local ok, err = xpcall(t.fn, debug.traceback)
    if ok then
      ok, err = pcall(H.ui_done)
    end
    local ms = math.floor((vim.uv.hrtime() - started) / 1e6)
    vim.notify = real_notify
    if ok then
      emit(('ok\t%s: %s (%d ms)'):format(name, t.name, ms))
    else
      emit(('FAIL\t%s: %s (%d ms)\t%s'):format(name, t.name, ms, (tostring(err):gsub('\n', '\\n'))))
    end
    local cleaned, cerr = pcall(cleanup)
    if not cleaned then
      emit(('FAIL\t%s: cleanup after %s\t%s'):format(name, t.name, tostring(cerr)))
    end
  end
  emit('done\t' .. name)
  vim.cmd('qall!')
end

return H
