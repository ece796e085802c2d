-- Drives the Citeline client in headless Neovim as a user would, over the real server:
-- the root rules (a file outside any marked folder starts nothing; a file under one
-- serves that folder, not the directory Neovim started in; :CiteIndexFolder serves an
-- unmarked one), :CiteAsk with its grade, :CiteCopy into a register, :CiteHistory and
-- reopening an entry, a PDF citation opened at its page, :checkhealth citeline.
-- Every deprecated API call is recorded: vim.deprecate is wrapped, and where a newer
-- API exists the older name raises (and is recorded).  Writes what it saw as JSON.
local env = vim.env
local result = { steps = {}, deprecated = {}, guarded = {} }

local function record(name)
  table.insert(result.deprecated, { name = name, trace = debug.traceback("", 2) })
end

-- The guard: installed before the plugin loads.
local original_deprecate = vim.deprecate
vim.deprecate = function(name, alternative, ...)
  record(tostring(name) .. " -> " .. tostring(alternative))
  return original_deprecate(name, alternative, ...)
end
local function forbid(tbl, key, label)
  if tbl[key] ~= nil then
    tbl[key] = function()
      record(label)
      error(label .. " is deprecated here", 2)
    end
    table.insert(result.guarded, label)
  end
end
if vim.fn.has("nvim-0.11") == 1 then
  forbid(vim.lsp, "start_client", "vim.lsp.start_client")
end
if vim.fn.has("nvim-0.10") == 1 then
  forbid(vim.lsp, "get_active_clients", "vim.lsp.get_active_clients")
  forbid(vim.lsp, "buf_get_clients", "vim.lsp.buf_get_clients")
  forbid(vim, "tbl_islist", "vim.tbl_islist")
  for _, name in ipairs({ "nvim_buf_set_option", "nvim_buf_get_option", "nvim_win_set_option", "nvim_win_get_option" }) do
    forbid(vim.api, name, "vim.api." .. name)
  end
  for _, name in ipairs({ "report_start", "report_ok", "report_warn", "report_error", "report_info" }) do
    forbid(vim.health, name, "vim.health." .. name)
  end
end
if vim.uv ~= nil then
  rawset(vim, "loop", setmetatable({}, {
    __index = function(_, key)
      record("vim.loop." .. key)
      error("vim.loop is deprecated here (vim.uv exists)", 2)
    end,
  }))
  table.insert(result.guarded, "vim.loop")
end

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(result) }, env.CITELINE_TEST_OUT)
  vim.cmd("qall!")
end

local timeout = tonumber(env.CITELINE_TEST_TIMEOUT_MS)
local function wait(label, predicate)
  if not vim.wait(timeout, predicate, 50) then
    error("timed out waiting for " .. label)
  end
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(env.CITELINE_NVIM_CLIENT)
  local citeline = require("citeline")
  local compat = require("citeline.compat")
  result.version = tostring(vim.version().major) .. "." .. tostring(vim.version().minor)
  citeline.setup({
    cmd = { env.CITELINE_PYTHON, "-m", "citeline.cli", "serve" },
    init_options = { answer = { maxAnswerTokens = 48, timeoutSeconds = 600 } },
  })

  -- A file outside any marked folder (Neovim started in that folder): nothing starts.
  vim.cmd("edit " .. vim.fn.fnameescape(env.CITELINE_TEST_HOME .. "/notes.md"))
  result.plain_root = citeline.find_root(0)
  vim.wait(1000, function() return citeline.client_id ~= nil end, 50)
  result.plain_client = citeline.client_id
  table.insert(result.steps, "plain")

  -- A file under the marked folder: that folder is served.
  vim.cmd("edit " .. vim.fn.fnameescape(env.CITELINE_TEST_DOCS .. "/garden.md"))
  wait("the server to start", function() return citeline.client_id ~= nil end)
  result.docs_root = citeline.find_root(0)
  result.attached = vim.lsp.buf_is_attached(0, citeline.client_id)
  wait("the folder to be ready", citeline.is_ready)
  result.workspace_folders = citeline.folders()
  result.status = citeline.status_lines(citeline.status)
  table.insert(result.steps, "ready")

  -- Ask; the grade and the label are shown above the answer.
  vim.cmd("CiteAsk " .. env.CITELINE_TEST_QUESTION)
  wait("the answer", function() return citeline.last_answer ~= nil or citeline.last_error ~= nil end)
  if citeline.last_error then
    error("ask failed: " .. vim.inspect(citeline.last_error))
  end
  result.answer = citeline.last_answer
  result.answer_buffer = lines(citeline.answer_buffer())
  table.insert(result.steps, "asked")

  -- Copy into a named register, and into the default one.
  vim.cmd("CiteCopy a")
  result.register_a = vim.fn.getreg("a")
  result.register_a_type = vim.fn.getregtype("a")
  result.copied = citeline.copy()
  result.register_default = vim.fn.getreg('"')
  table.insert(result.steps, "copied")

  -- A question the documents do not answer well: its grade label is shown as is.
  citeline.last_answer = nil
  vim.cmd("CiteAsk " .. env.CITELINE_TEST_CLOSEST)
  wait("the second answer", function() return citeline.last_answer ~= nil or citeline.last_error ~= nil end)
  result.closest = citeline.last_answer
  result.closest_buffer = lines(citeline.answer_buffer())
  table.insert(result.steps, "asked-closest")

  -- A PDF citation opens in a viewer at its page: a known viewer found on PATH ...
  local search
  citeline.request("citeline/search", { query = env.CITELINE_TEST_PDF_QUERY, k = 1 }, function(e, r)
    search = { err = e, result = r }
  end)
  wait("the PDF search", function() return search ~= nil end)
  if search.err then
    error("search failed: " .. vim.inspect(search.err))
  end
  local hit = search.result.hits[1]
  result.pdf_hit = hit
  citeline.open_citation(hit)
  result.pdf_viewer = citeline.last_opened
  wait("the viewer to record its arguments", function() return vim.fn.filereadable(env.CITELINE_TEST_VIEWER_LOG) == 1 end)
  result.pdf_viewer_argv = vim.fn.readfile(env.CITELINE_TEST_VIEWER_LOG)
  -- ... else the system's handler.
  citeline.config.pdf_viewers = {}
  citeline.open_citation(hit)
  result.pdf_system = citeline.last_opened
  wait("xdg-open to record its arguments", function() return vim.fn.filereadable(env.CITELINE_TEST_OPENER_LOG) == 1 end)
  result.pdf_system_argv = vim.fn.readfile(env.CITELINE_TEST_OPENER_LOG)
  result.buffers_after_pdf = vim.tbl_map(function(b) return vim.api.nvim_buf_get_name(b) end, vim.api.nvim_list_bufs())
  table.insert(result.steps, "pdf")

  -- History: the asks above, newest first; <CR> reopens one.
  local listed
  citeline.history_command("", function(e, r) listed = { err = e, result = r } end)
  wait("the history", function() return listed ~= nil end)
  if listed.err then
    result.history_error = listed.err
  else
    result.history = listed.result
    result.history_buffer = lines(citeline.history_buffer())
    local win = vim.fn.bufwinid(citeline.history_buffer())
    vim.api.nvim_set_current_win(win)
    local target
    for lnum, line in ipairs(result.history_buffer) do
      if line:find(env.CITELINE_TEST_QUESTION, 1, true) then
        target = lnum
        break
      end
    end
    if target then
      citeline.last_answer = nil
      local before = citeline.shown_answer()
      vim.api.nvim_win_set_cursor(win, { target, 0 })
      vim.cmd('execute "normal \\<CR>"')
      wait("the reopened answer", function() return citeline.shown_answer() ~= before end)
      result.reopened = citeline.shown_answer()
      result.reopened_buffer = lines(citeline.answer_buffer())
      result.copied_entry = citeline.copy("h")
    end
    local filtered
    citeline.history_command(env.CITELINE_TEST_CLOSEST, function(e, r) filtered = { err = e, result = r } end)
    wait("the filtered history", function() return filtered ~= nil end)
    result.history_filtered = filtered.result
  end
  table.insert(result.steps, "history")

  -- :CiteIndexFolder serves a folder without a marker (and writes citeline.toml).
  local indexed
  citeline.index_folder(env.CITELINE_TEST_OTHER, function(e, r) indexed = { err = e, result = r } end)
  wait("indexFolder", function() return indexed ~= nil end)
  result.index_folder = indexed
  if not indexed.err then
    wait("the new folder in the status", function()
      for _, folder in ipairs((citeline.status or {}).folders or {}) do
        if folder.docs == env.CITELINE_TEST_OTHER and folder.state == "ready" then
          return true
        end
      end
      return false
    end)
  end
  result.status_after = citeline.status_lines(citeline.status)
  table.insert(result.steps, "indexed")

  -- :CitePause / :CiteResume (every folder): the status says paused, then not.
  local function all_paused(flag)
    local folders = (citeline.status or {}).folders or {}
    for _, folder in ipairs(folders) do
      if (folder.paused == true) ~= flag then
        return false
      end
    end
    return #folders > 0
  end
  vim.cmd("CitePause")
  wait("the folders paused", function() return all_paused(true) end)
  result.status_paused = citeline.status_lines(citeline.status)
  local resumed
  citeline.set_paused(false, env.CITELINE_TEST_DOCS, function(e, r) resumed = { err = e, result = r } end)
  wait("the resume", function() return resumed ~= nil end)
  result.resumed = resumed
  vim.cmd("CiteResume")
  wait("the folders resumed", function() return all_paused(false) end)
  result.status_resumed = citeline.status_lines(citeline.status)
  table.insert(result.steps, "paused")

  -- :checkhealth citeline, from the document buffer.
  vim.cmd("edit " .. vim.fn.fnameescape(env.CITELINE_TEST_DOCS .. "/garden.md"))
  vim.cmd("checkhealth citeline")
  result.health = lines(0)
  table.insert(result.steps, "health")

  citeline.stop()
  wait("the server to stop", function() return citeline.client_id == nil end)
  local _ = compat -- loaded through the guard
end)
if not ok then
  result.error = "lua error: " .. tostring(err)
end
finish()
