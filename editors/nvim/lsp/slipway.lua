-- The slipway sidecar as a Neovim 0.11 LSP config: `vim.lsp.enable('slipway')`.
-- cmd `{ 'slipway', 'lsp' }` (or `vim.g.slipway.cmd`), root markers `.git`;
-- a buffer in a worktree is served by its host repository's sidecar.

---@type vim.lsp.Config
return require('slipway.lsp').config()
