-- slipway: private git worktrees and unattended agent runs, through the
-- `slipway lsp` sidecar. Everything is loaded on first use.
if vim.g.loaded_slipway then
  return
end
vim.g.loaded_slipway = 1
if vim.fn.has('nvim-0.11') == 0 then
  vim.notify_once('slipway: Neovim 0.11 or later is needed', vim.log.levels.ERROR)
  return
end

vim.api.nvim_create_user_command('Slipway', function(info)
  require('slipway.commands').dispatch(info)
end, {
  nargs = '*',
  desc = 'slipway: worktrees and agent runs',
  complete = function(arglead, cmdline)
    return require('slipway.commands').complete(arglead, cmdline)
  end,
})

for _, sub in ipairs(require('slipway.subcommands')) do
  vim.keymap.set('n', '<Plug>(slipway-' .. sub .. ')', function()
    require('slipway.commands').run(sub)
  end, { desc = 'slipway: ' .. sub })
end

vim.api.nvim_create_autocmd('LspProgress', {
  group = vim.api.nvim_create_augroup('slipway.progress', {}),
  desc = 'slipway: redraw status lines while a run reports progress',
  callback = function(ev)
    local client = ev.data and vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'slipway' then
      vim.cmd('redrawstatus!')
    end
  end,
})

vim.api.nvim_create_autocmd('ExitPre', {
  group = vim.api.nvim_create_augroup('slipway.quit', {}),
  desc = 'slipway: say why :qa is refused while an interactive agent runs',
  callback = function()
    -- Loaded only once :Slipway agent started a terminal.
    local terminals = package.loaded['slipway.terminals']
    if terminals then
      terminals.on_exit_pre()
    end
  end,
})

vim.api.nvim_create_autocmd('FileType', {
  group = vim.api.nvim_create_augroup('slipway.enable', {}),
  desc = 'slipway: say clearly when vim.lsp.enable("slipway") cannot find the binary',
  callback = function(ev)
    if vim.lsp.is_enabled and vim.lsp.is_enabled('slipway') then
      require('slipway.lsp').check_enabled(ev.buf)
    end
  end,
})

-- A run waiting for an answer stands out in the status line; a colorscheme
-- that clears highlights gets the default back.
local function highlights()
  vim.api.nvim_set_hl(0, 'SlipwayNeedsInput', { link = 'WarningMsg', default = true })
end
highlights()
vim.api.nvim_create_autocmd('ColorScheme', {
  group = vim.api.nvim_create_augroup('slipway.highlights', {}),
  desc = 'slipway: the SlipwayNeedsInput highlight',
  callback = highlights,
})
