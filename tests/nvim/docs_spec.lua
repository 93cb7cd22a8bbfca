-- doc/slipway.txt has a tag for every command and option, the tags build, and
-- every public function carries LuaCATS annotations.
local H = require('harness')

local plugin = vim.fs.dirname(vim.api.nvim_get_runtime_file('lua/slipway/init.lua', false)[1])
plugin = vim.fs.dirname(vim.fs.dirname(plugin))

local function read(path)
  local fd = assert(io.open(path))
  local text = fd:read('*a')
  fd:close()
  return text
end

H.test('doc/slipway.txt has a tag for every command and option, and the tags build', function()
  local doc = read(plugin .. '/doc/slipway.txt')
  H.contains(doc, '*:Slipway*', ':Slipway')
  for _, sub in ipairs(require('slipway.commands').subcommands) do
    H.ok(doc:find('*:Slipway-' .. sub .. '*', 1, true), 'a tag *:Slipway-' .. sub .. '* in doc/slipway.txt')
    H.ok(doc:find('*<Plug>(slipway-' .. sub .. ')*', 1, true), 'a tag of the <Plug> mapping of ' .. sub)
  end
  local options = {}
  local in_opts = false
  for line in read(plugin .. '/lua/slipway/config.lua'):gmatch('[^\n]+') do
    if line:match('^%-%-%-@class slipway%.Opts') then
      in_opts = true
    elseif in_opts and line:match('^%-%-%-@field') then
      options[#options + 1] = line:match('^%-%-%-@field ([%w_]+)')
    elseif in_opts then
      in_opts = false
    end
  end
  H.ok(#options >= 8, 'options found in config.lua: ' .. vim.inspect(options))
  for _, name in ipairs(options) do
    H.contains(doc, '*slipway-option-' .. name .. '*', 'tag of option ' .. name)
  end
  for _, tag in ipairs({ '*g:slipway*', '*slipway.setup()*', '*slipway.statusline()*', '*slipway-health*' }) do
    H.contains(doc, tag, tag)
  end

  -- :helptags on a copy: duplicate tags are an error.
  local dir = H.tmpdir() .. '/doc'
  vim.fn.mkdir(dir, 'p')
  H.write(dir .. '/slipway.txt', doc)
  local ok, err = pcall(vim.cmd, 'helptags ' .. vim.fn.fnameescape(dir))
  H.ok(ok, ':helptags: ' .. tostring(err))
  H.contains(read(dir .. '/tags'), ':Slipway-handoff', 'tags file')
end)

H.test('every public function is annotated (LuaCATS)', function()
  local missing = {}
  for _, file in ipairs(vim.fn.glob(plugin .. '/lua/slipway/*.lua', false, true)) do
    local lines = vim.split(read(file), '\n')
    for i, line in ipairs(lines) do
      local name = line:match('^function M[.:]([%w_]+)%(')
      if name and not (lines[i - 1] or ''):match('^%-%-%-') then
        missing[#missing + 1] = vim.fs.basename(file) .. ':' .. i .. ' ' .. name
      end
      local params = line:match('^function M[.:][%w_]+%((.-)%)')
      if params and params ~= '' and params ~= '_' then
        for param in params:gmatch('[%w_]+') do
          local found = false
          for j = i - 1, math.max(1, i - 15), -1 do
            if not lines[j]:match('^%-%-%-') then
              break
            end
            if lines[j]:match('^%-%-%-@param ' .. param .. '%??%s') then
              found = true
            end
          end
          if not found and param ~= '_' then
            missing[#missing + 1] = vim.fs.basename(file) .. ':' .. i .. ' @param ' .. param
          end
        end
      end
    end
  end
  H.eq(missing, {}, 'functions without annotations')
end)
