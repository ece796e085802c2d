-- Citeline for Neovim (0.7+): ask your documents from the editor, with citations.
--
-- Starts `citeline serve` with Neovim's built-in LSP client for a documents folder
-- (the current directory by default) and offers:
--   :CiteAsk {question}   the answer in a scratch buffer (streamed, then settled to the final
--                         text), with a label saying how it was made and its sources;
--                         <CR> on a [n] opens that source; citations in the quickfix list
--   :CiteSearch {query}   passages in the quickfix list
--   :CiteStatus           folders, their state and counts
--   :CiteReindex          bring the folders up to date now
-- Jump to a citation with the quickfix list (:cnext, :cc N, <CR> in :copen).
-- Hover (K, `vim.lsp.buf.hover()`) on any buffer shows the passages the sentence
-- under the cursor is about.  See docs/lsp-extensions.md for the protocol.

local M = {}

local defaults = {
  -- The server command; e.g. { "/path/to/.venv/bin/citeline", "serve" }.
  cmd = { "citeline", "serve" },
  -- The documents folder; nil = the current directory.
  root_dir = nil,
  -- Sent as initializationOptions (camelCase keys, see docs/lsp-extensions.md).
  init_options = {},
  -- Attach to every file buffer, so saves reach the server and hover works.
  attach = true,
  -- Called with each `citeline/status` notification.
  on_status = nil,
}

M.config = vim.deepcopy(defaults)
M.client_id = nil
M.status = nil -- the latest citeline/status notification
M.last_answer = nil -- the latest answer object (citeline/ask result)
M.last_error = nil

local streams = {} -- partialResultToken -> function(delta)
local counter = 0

local function notify(msg, level)
  vim.notify("Citeline: " .. msg, level or vim.log.levels.INFO)
end

local function client()
  return M.client_id and vim.lsp.get_client_by_id(M.client_id) or nil
end

local function uri_path(uri)
  return vim.uri_to_fname((uri:gsub("#.*$", "")))
end

local function is_null(value)
  return value == nil or value == vim.NIL
end

-- Handlers -------------------------------------------------------------------

local function on_progress(err, result, ctx, config)
  local value = result and result.value
  if type(value) == "table" and value.kind == nil and value.delta ~= nil then
    local stream = streams[result.token]
    if stream then
      stream(value.delta)
    end
    return
  end
  local default = vim.lsp.handlers["$/progress"]
  if default then
    return default(err, result, ctx, config)
  end
end

local function on_status(_, result)
  M.status = result
  if M.config.on_status then
    M.config.on_status(result)
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "CitelineStatus", modeline = false })
end

-- Server ---------------------------------------------------------------------

function M.start()
  if client() then
    return M.client_id
  end
  local root = M.config.root_dir or vim.loop.cwd()
  M.client_id = vim.lsp.start_client({
    name = "citeline",
    cmd = M.config.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = M.config.init_options,
    handlers = {
      ["citeline/status"] = on_status,
      ["$/progress"] = on_progress,
    },
    on_exit = function(code)
      if code ~= 0 then
        notify("the server exited with status " .. code, vim.log.levels.WARN)
      end
      M.client_id = nil
    end,
  })
  return M.client_id
end

function M.stop()
  local c = client()
  if c then
    c.stop()
  end
end

-- Attaches a buffer to the server (didOpen/didSave, hover).
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if M.client_id and vim.api.nvim_buf_get_name(bufnr) ~= "" and vim.bo[bufnr].buftype == "" then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
end

-- Sends a request; callback(err, result).  Returns the request id or nil.
function M.request(method, params, callback)
  local c = client()
  if not c then
    callback({ message = "the Citeline server is not running" }, nil)
    return nil
  end
  local ok, id = c.request(method, params, function(err, result)
    callback(err, result)
  end)
  if not ok then
    callback({ message = "the Citeline server is not running" }, nil)
    return nil
  end
  return id
end

-- Whether every served folder is ready (false until the first status arrives).
function M.is_ready()
  local status = M.status
  if not status or is_null(status.folders) or #status.folders == 0 then
    return false
  end
  for _, folder in ipairs(status.folders) do
    if folder.state ~= "ready" then
      return false
    end
  end
  return true
end

-- Waits (processing events) until every folder is ready; true if it happened in time.
function M.wait_ready(timeout_ms)
  return vim.wait(timeout_ms or 60000, M.is_ready, 50)
end

-- Asks a question.  opts.on_delta(text) gets each streamed piece;
-- opts.on_done(err, answer) the answer object.  Returns the request id.
function M.ask(question, opts)
  opts = opts or {}
  counter = counter + 1
  local token = string.format("citeline-nvim-%d-%d", vim.loop.getpid(), counter)
  streams[token] = opts.on_delta
  return M.request("citeline/ask", { question = question, partialResultToken = token }, function(err, result)
    streams[token] = nil
    if opts.on_done then
      opts.on_done(err, result)
    end
  end)
end

function M.cancel(request_id)
  local c = client()
  if c and request_id then
    c.cancel_request(request_id)
  end
end

-- Whether a citation must not jump into the local file: the folder's copy is not the
-- one the team index holds ("differs" or "missing"), so its lines may say something else.
function M.local_copy_differs(item)
  return item.local_copy == "differs" or item.local_copy == "missing"
end

-- The lines shown instead of a jump: why, then the passage as the index holds it.
function M.passage_lines(item)
  local why = item.local_copy == "missing" and "is not in your copy of the documents"
    or "differs in your copy from the indexed one"
  local lines = {
    string.format("%s%s", item.path, is_null(item.start_line) and ""
      or string.format(":%d-%d", item.start_line, item.end_line)),
    string.format("(%s; the passage as the team index holds it)", why),
    "",
  }
  for _, line in ipairs(vim.split(is_null(item.text) and "" or item.text, "\n", { plain = true })) do
    table.insert(lines, line)
  end
  return lines
end

local passage_bufs = {} -- passage key -> buffer

-- A scratch buffer holding an item's indexed passage (one per passage, reused).
function M.passage_buffer(item)
  local key = string.format("citeline://passage/%s#%s", item.path,
    not is_null(item.start_line) and item.start_line or (item.page or 0))
  local buf = passage_bufs[key]
  if buf == nil or not vim.api.nvim_buf_is_valid(buf) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_option(buf, "bufhidden", "hide")
    pcall(vim.api.nvim_buf_set_name, buf, key)
    passage_bufs[key] = buf
  end
  vim.api.nvim_buf_set_option(buf, "modifiable", true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.passage_lines(item))
  vim.api.nvim_buf_set_option(buf, "modifiable", false)
  return buf
end

-- Quickfix items for citations or hits (a differing local copy: its passage buffer).
function M.quickfix_items(items)
  local out = {}
  for _, item in ipairs(items or {}) do
    local where
    if not is_null(item.page) then
      where = string.format("page %d", item.page)
    elseif not is_null(item.start_line) then
      where = string.format("lines %d-%d", item.start_line, item.end_line)
    else
      where = ""
    end
    local label = not is_null(item.n) and string.format("[%d] ", item.n) or ""
    local section = is_null(item.section) and "" or item.section
    if M.local_copy_differs(item) then
      table.insert(out, {
        bufnr = M.passage_buffer(item),
        lnum = 4,
        col = 1,
        text = vim.trim(string.format("%s%s  %s (your copy differs: the indexed passage)",
          label, section, where)),
      })
    else
      table.insert(out, {
        filename = uri_path(item.uri),
        lnum = (item.range and item.range.start.line or 0) + 1,
        col = 1,
        text = vim.trim(string.format("%s%s  %s", label, section, where)),
      })
    end
  end
  return out
end

-- How an answer was made -------------------------------------------------------

local FALLBACK_NOTES = {
  unsupported = "the model's answer was not supported by the sources; showing the documents' own sentences",
  timeout = "the model took too long; showing the documents' own sentences",
  cancelled = "the model was stopped; showing the documents' own sentences",
  context = "the sources did not fit in the model's context; showing the documents' own sentences",
}

-- A model file's name for people: without its folder and ".gguf".
function M.model_name(model)
  if is_null(model) or model == "" then
    return nil
  end
  local name = tostring(model):gsub("^.*[/\\]", ""):gsub("%.[gG][gG][uU][fF]$", "")
  return name ~= "" and name or nil
end

-- The label line over an answer: how it was made, and why when a model's answer
-- fell back to the documents' own sentences.  nil for a refusal.  `model` is the
-- generation model (citeline/status `models.generation`).
function M.answer_label(answer, model)
  if not answer or answer.refused then
    return nil
  end
  if answer.mode == "generative" then
    return string.format("Written by %s, checked against sources", M.model_name(model) or "the model")
  end
  if answer.mode == "extractive" then
    local reason = not is_null(answer.fallback) and answer.fallback or (not is_null(answer.degraded) and answer.degraded or nil)
    if reason then
      local note = FALLBACK_NOTES[reason] or ("the model's answer was not used (" .. reason .. "); showing the documents' own sentences")
      return "Quoted from your documents · " .. note
    end
    return "Quoted from your documents"
  end
  return nil
end

-- UI -------------------------------------------------------------------------

local answer_buf = nil
local shown_answer = nil -- the answer object the answer buffer shows

local function show_buffer(lines)
  if not (answer_buf and vim.api.nvim_buf_is_valid(answer_buf)) then
    answer_buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(answer_buf, "citeline://answer")
    vim.bo[answer_buf].filetype = "markdown"
    vim.bo[answer_buf].bufhidden = "hide"
    vim.keymap.set("n", "<CR>", M.follow_marker, { buffer = answer_buf, desc = "Citeline: open the source of the [n] under the cursor" })
  end
  if vim.fn.bufwinid(answer_buf) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, answer_buf)
  end
  vim.api.nvim_buf_set_lines(answer_buf, 0, -1, false, lines)
  return answer_buf
end

function M.answer_buffer()
  return answer_buf
end

-- What the answer buffer shows for a finished answer: the question, the label,
-- the final text (it replaces what streamed), the sources.
function M.answer_lines(question, answer, model)
  local lines = { "# " .. question, "" }
  local label = M.answer_label(answer, model)
  if label then
    vim.list_extend(lines, { "_" .. label .. "_", "" })
  end
  vim.list_extend(lines, vim.split(answer.answer or "", "\n", { plain = true }))
  if answer.citations and #answer.citations > 0 then
    vim.list_extend(lines, { "", "Sources:" })
    for _, item in ipairs(M.quickfix_items(answer.citations)) do
      table.insert(lines, string.format("%s:%d  %s", vim.fn.fnamemodify(item.filename, ":~:."), item.lnum, item.text))
    end
  end
  return lines
end

-- Opens a citation (or hit) in the window the answer buffer was opened from; when the
-- local copy of its file is not the indexed one, its passage instead of a wrong line.
function M.open_citation(item)
  local file = uri_path(item.uri)
  local line = (item.range and item.range.start.line or 0) + 1
  if vim.api.nvim_get_current_buf() == answer_buf then
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_buf() == answer_buf then
      vim.cmd("aboveleft split")
    end
  end
  if M.local_copy_differs(item) then
    vim.api.nvim_set_current_buf(M.passage_buffer(item))
    notify(string.format("your copy of %s differs from the team index: showing the indexed passage",
      item.path))
    return
  end
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  if is_null(item.page) then
    vim.api.nvim_win_set_cursor(0, { math.min(line, vim.api.nvim_buf_line_count(0)), 0 })
  else
    notify(string.format("%s: page %d", vim.fn.fnamemodify(file, ":t"), item.page))
  end
end

-- <CR> in the answer buffer: the source of the [n] under the cursor.
function M.follow_marker()
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2] + 1
  local n
  local init = 1
  while true do
    local s, e, digits = line:find("%[(%d+)%]", init)
    if not s then
      break
    end
    if col >= s and col <= e then
      n = tonumber(digits)
      break
    end
    init = e + 1
  end
  if not n then
    return false
  end
  for _, citation in ipairs((shown_answer and shown_answer.citations) or {}) do
    if citation.n == n then
      M.open_citation(citation)
      return true
    end
  end
  return false
end

function M.ask_command(question)
  if question == nil or question:match("^%s*$") then
    notify("usage: :CiteAsk {question}", vim.log.levels.WARN)
    return
  end
  local text = ""
  show_buffer({ "# " .. question, "", "Searching the documents…" })
  M.last_answer, M.last_error, shown_answer = nil, nil, nil
  M.ask(question, {
    on_delta = function(delta)
      text = text .. delta
      show_buffer(vim.list_extend({ "# " .. question, "" }, vim.split(text, "\n", { plain = true })))
    end,
    on_done = function(err, answer)
      if err then
        M.last_error = err
        show_buffer({ "# " .. question, "", "Citeline could not answer: " .. (err.message or vim.inspect(err)) })
        return
      end
      M.last_answer = answer
      shown_answer = answer
      local model = M.status and M.status.models and M.status.models.generation
      show_buffer(M.answer_lines(question, answer, model))
      vim.fn.setqflist({}, " ", { title = "Citeline: " .. question, items = M.quickfix_items(answer.citations) })
    end,
  })
end

function M.search_command(query)
  if query == nil or query:match("^%s*$") then
    notify("usage: :CiteSearch {query}", vim.log.levels.WARN)
    return
  end
  M.request("citeline/search", { query = query }, function(err, result)
    if err then
      notify("search failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    vim.fn.setqflist({}, " ", { title = "Citeline: " .. query, items = M.quickfix_items(result.hits) })
    vim.cmd("copen")
  end)
end

function M.status_lines(status)
  local lines = {}
  for _, folder in ipairs((status and status.folders) or {}) do
    local line = string.format("%s: %s, %d files, %d chunks, %d pending, %d errors",
      uri_path(folder.uri), folder.state, folder.files, folder.chunks, folder.pending, #(folder.errors or {}))
    if not is_null(folder.collection) then
      line = line .. string.format("; team index %s%s, generation %s, updated %s", folder.collection,
        folder.read_only and " (read-only)" or "", tostring(folder.generation),
        is_null(folder.last_update) and "never" or folder.last_update)
    end
    if not is_null(folder.message) then
      line = line .. " (" .. folder.message .. ")"
    end
    table.insert(lines, line)
  end
  if #lines == 0 then
    lines = { "no documents folder" }
  end
  return lines
end

function M.status_command()
  M.request("citeline/status", {}, function(err, status)
    if err then
      notify("status failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    notify(table.concat(M.status_lines(status), "\n"))
  end)
end

function M.reindex_command()
  M.request("citeline/reindex", {}, function(err, result)
    if err then
      notify("reindex failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    for _, folder in ipairs(result.folders) do
      notify(string.format("%s: %d files, %d chunks, %d embedded", uri_path(folder.uri), folder.files, folder.chunks, folder.embedded))
    end
  end)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  vim.api.nvim_create_user_command("CiteAsk", function(args) M.ask_command(args.args) end, { nargs = "+" })
  vim.api.nvim_create_user_command("CiteSearch", function(args) M.search_command(args.args) end, { nargs = "+" })
  vim.api.nvim_create_user_command("CiteStatus", function() M.status_command() end, { nargs = 0 })
  vim.api.nvim_create_user_command("CiteReindex", function() M.reindex_command() end, { nargs = 0 })
  M.start()
  if M.config.attach then
    local group = vim.api.nvim_create_augroup("citeline", { clear = true })
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = group,
      callback = function(args) M.attach(args.buf) end,
    })
  end
  return M
end

return M
