-- The Neovim init of the plugin tests: nothing from the user, the plugin
-- from this checkout, the harness on package.path. Used as
--   nvim --headless -u tests/minimal_init.lua -c "lua require('harness').main('tests/nvim/x_spec.lua')"
local here = debug.getinfo(1, 'S').source:sub(2)
local repo = vim.fn.fnamemodify(here, ':p:h:h')

vim.opt.runtimepath = { repo .. '/editors/nvim', vim.env.VIMRUNTIME }
vim.opt.packpath = { vim.env.VIMRUNTIME }
vim.o.swapfile = false
vim.o.shadafile = 'NONE'
vim.o.more = false
package.path = repo .. '/tests/nvim/?.lua;' .. package.path

if vim.env.SLIPWAY_BIN and vim.env.SLIPWAY_BIN ~= '' then
  vim.g.slipway = { cmd = { vim.env.SLIPWAY_BIN, 'lsp' } }
end
