-- The Citeline server for Neovim 0.11+'s `vim.lsp.config` / `vim.lsp.enable`:
-- served only under a folder holding `citeline.toml` or `.citeline/` (see
-- `:help citeline-lsp-config`).  `require("citeline").setup()` enables it for you.
return require("citeline").lsp_config()
