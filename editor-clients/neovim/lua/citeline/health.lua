-- :checkhealth citeline — the client's own checks, then `citeline doctor`'s report
-- (Python, the llama.cpp build, models, each served folder and its index, with the
-- fix for each problem).
local compat = require("citeline.compat")

local M = {}

-- `citeline doctor [--docs DIR]` from the configured server command (the part before
-- `serve`, so `python -m citeline.cli serve` gives `python -m citeline.cli doctor`).
function M.doctor_command(cmd, docs)
  local out = {}
  for _, part in ipairs(cmd) do
    if part == "serve" then
      break
    end
    table.insert(out, part)
  end
  table.insert(out, "doctor")
  if docs then
    vim.list_extend(out, { "--docs", docs })
  end
  return out
end

local function lines_of(text)
  local out = {}
  for _, line in ipairs(vim.split(text or "", "\n", { plain = true })) do
    if vim.trim(line) ~= "" then
      table.insert(out, line)
    end
  end
  return out
end

function M.check()
  local health = compat.health()
  local citeline = require("citeline")
  local config = citeline.config

  health.start("Citeline client")
  local version = vim.version()
  health.ok(string.format("Neovim %d.%d.%d%s", version.major, version.minor, version.patch,
    compat.has_lsp_config and " (started through vim.lsp.config / vim.lsp.enable)" or ""))
  local exe = config.cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok("server command: " .. table.concat(config.cmd, " "))
  else
    health.error("server command not found: " .. exe, {
      "install Citeline (pip install citeline) or set cmd in require('citeline').setup({ cmd = { '/path/to/citeline', 'serve' } })",
    })
  end
  -- :checkhealth runs in its own buffer: the buffer it was called from is the alternate.
  local from = vim.fn.bufnr("#")
  local root = from > 0 and citeline.find_root(from) or citeline.last_root
  if root then
    health.ok("documents folder: " .. root)
  else
    health.info("no documents folder here (none of " .. table.concat(config.root_markers, ", ")
      .. " above it); :CiteIndexFolder serves one")
  end
  local status = citeline.status
  if citeline.client_id and status and type(status.folders) == "table" then
    for _, line in ipairs(citeline.status_lines(status)) do
      if line:find(": not served", 1, true) then
        health.warn(line, { ":CiteIndexFolder serves it (and writes a minimal citeline.toml)" })
      elseif line:find(": error,", 1, true) then
        health.error("served: " .. line)
      else
        health.ok("served: " .. line)
      end
    end
  elseif citeline.client_id then
    health.info("the server is starting")
  else
    health.info("no server running (it starts when you open a file under a documents folder)")
  end

  health.start("citeline doctor")
  if vim.fn.executable(exe) ~= 1 then
    health.error("not run: the server command is not found")
    return
  end
  local docs = root or (status and type(status.folders) == "table" and status.folders[1] and status.folders[1].docs) or nil
  local cmd = M.doctor_command(config.cmd, docs)
  table.insert(cmd, "--json")
  local shown = table.concat(cmd, " ")
  local code, stdout, stderr = compat.run(cmd, 120000)
  if code == 2 and stderr:find("invalid choice", 1, true) then
    health.warn(shown .. ": this Citeline has no `doctor` command ("
      .. (lines_of(stderr)[#lines_of(stderr)] or "") .. ")",
      { "upgrade Citeline to a version with `citeline doctor`" })
    return
  end
  local ok, report = pcall(vim.json and vim.json.decode or vim.fn.json_decode, stdout)
  if not ok or type(report) ~= "table" or type(report.checks) ~= "table" then
    health.error(string.format("%s exited with status %d and no report", shown, code))
    for _, line in ipairs(vim.list_extend(lines_of(stdout), lines_of(stderr))) do
      health.info(line)
    end
    return
  end
  if report.ok then
    health.ok(shown .. ": all is well")
  else
    health.error(string.format("%s: %d problem(s)", shown, report.problems or 0), { "follow the fixes below" })
  end
  -- Each check as doctor reports it: ok, a note (works, worth knowing) or a problem.
  for _, check in ipairs(report.checks) do
    local text = string.format("%s: %s", check.area, check.summary)
    local advice = type(check.fix) == "string" and { check.fix } or nil
    if check.level == "problem" then
      health.error(text, advice)
    elseif check.level == "note" then
      health.warn(text, advice)
    else
      health.ok(text)
    end
  end
end

return M
