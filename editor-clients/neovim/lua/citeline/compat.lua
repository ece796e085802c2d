-- The one place that knows which Neovim has which API.
--
-- Every Neovim function that has a newer replacement is reached through this table:
-- the newer one where it exists (0.10+: `vim.uv`, `vim.fs.root`, `vim.ui.open`,
-- `vim.health.start/ok/…`; 0.11+: `vim.lsp.start(…, { attach = false })`, colon-called
-- client methods, `vim.lsp.config`), the older one only where the newer is absent
-- (Neovim 0.7, which Debian 12 ships).  tests/e2e/test_neovim.py makes the older
-- names raise where the newer exist, and checks that no other file names them.
local M = {}

M.uv = vim.uv or vim.loop

local has = function(version)
  return vim.fn.has("nvim-" .. version) == 1
end

-- Client methods are colon-called from 0.11 on (`client:request(…)`); before, they
-- are plain functions closed over the client (`client.request(…)`).
local colon_methods = has("0.11")

function M.client_call(client, method, ...)
  if colon_methods then
    return client[method](client, ...)
  end
  return client[method](...)
end

-- Starts a language client without attaching a buffer; returns its id.
function M.start_client(config)
  if colon_methods then
    return vim.lsp.start(config, { attach = false, reuse_client = function() return false end })
  end
  return vim.lsp.start_client(config)
end

-- Whether `vim.lsp.config` / `vim.lsp.enable` (0.11+) are there.
M.has_lsp_config = vim.lsp.config ~= nil and type(vim.lsp.enable) == "function"

-- The nearest folder at or above `path` (a file or folder) holding one of `markers`.
function M.root(path, markers)
  if vim.fs and vim.fs.root then
    return vim.fs.root(path, markers)
  end
  local stat = M.uv.fs_stat(path)
  local dir = (stat and stat.type == "directory") and path or vim.fn.fnamemodify(path, ":h")
  while dir and dir ~= "" do
    for _, marker in ipairs(markers) do
      if M.uv.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return nil
end

-- Opens a file or URL with the system's handler.  Returns true, or false and why.
function M.open(path)
  if vim.ui and vim.ui.open then
    local _, err = vim.ui.open(path)
    if err then
      return false, err
    end
    return true
  end
  local opener = (vim.fn.has("mac") == 1 and "open") or (vim.fn.executable("xdg-open") == 1 and "xdg-open")
  if not opener then
    return false, "no handler found (tried xdg-open, open)"
  end
  local job = vim.fn.jobstart({ opener, path }, { detach = true })
  if job <= 0 then
    return false, "could not start " .. opener
  end
  return true
end

-- The health report functions: vim.health.start/ok/warn/error/info (0.10+), else
-- the report_* names of 0.7–0.9.
function M.health()
  local health = vim.health or require("health")
  if health.start then
    return { start = health.start, ok = health.ok, warn = health.warn, error = health.error, info = health.info }
  end
  return {
    start = health.report_start,
    ok = health.report_ok,
    warn = health.report_warn,
    error = health.report_error,
    info = health.report_info,
  }
end

-- Runs a command to completion (for :checkhealth); returns exit code, stdout, stderr.
function M.run(cmd, timeout_ms)
  if vim.system then
    local ok, proc = pcall(vim.system, cmd, { text = true })
    if not ok then
      return -1, "", tostring(proc)
    end
    local done = proc:wait(timeout_ms)
    return done.code, done.stdout or "", done.stderr or ""
  end
  local stdout, stderr = {}, {}
  local job = vim.fn.jobstart(cmd, {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data) stdout = data end,
    on_stderr = function(_, data) stderr = data end,
  })
  if job <= 0 then
    return -1, "", "could not start " .. tostring(cmd[1])
  end
  local codes = vim.fn.jobwait({ job }, timeout_ms)
  return codes[1], table.concat(stdout, "\n"), table.concat(stderr, "\n")
end

return M
