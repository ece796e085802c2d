-- Citeline for Neovim (0.7+; current APIs on 0.10+/0.11+): ask your documents from
-- the editor, with citations.  See doc/citeline.txt (`:help citeline`).
--
-- A documents folder is served when it holds a root marker (`citeline.toml` or a
-- `.citeline/` folder): opening a file under one starts `citeline serve` (one server
-- for every such folder) and attaches the buffer.  Nothing is indexed because Neovim
-- happened to start in a folder.  Folders the user names (`root_dir`, `folders`,
-- `:CiteIndexFolder`) are served regardless.
--
--   :CiteAsk {question}     the answer in a scratch buffer, under its grade and a label
--                           saying how it was made; <CR> on a [n] opens that source
--   :CiteSearch {query}     passages in the quickfix list
--   :CiteCopy [register]    the shown answer as Markdown, with its sources as links
--   :CiteHistory [query]    past answers of the served folders; <CR> reopens one
--   :CiteStatus             folders, their state and counts
--   :CiteReindex            bring the folders up to date now
--   :CitePause [dir]        pause indexing (of one folder; default: every folder):
--                           nothing more is committed, changes wait, searches go on
--   :CiteResume [dir]       resume it: what waited is indexed now
--   :CiteIndexFolder [dir]  serve a folder (default: the current directory), writing
--                           a minimal citeline.toml into it
--   :checkhealth citeline   what works and what is missing (runs `citeline doctor`)
-- Protocol: docs/lsp-extensions.md.

local compat = require("citeline.compat")

local M = {}

local defaults = {
  -- The server command; e.g. { "/path/to/.venv/bin/citeline", "serve" }.
  cmd = { "citeline", "serve" },
  -- A folder holding one of these is a documents folder.
  root_markers = { "citeline.toml", ".citeline" },
  -- Folders served regardless of markers (a folder you name is a folder you asked
  -- for); `root_dir` is one more.  Both start the server at setup.
  folders = {},
  root_dir = nil,
  -- Sent as initializationOptions (camelCase keys, see docs/lsp-extensions.md).
  init_options = {},
  -- Attach file buffers under a documents folder (saves reach the server, hover works).
  attach = true,
  -- The register :CiteCopy fills when none is named; nil: "+" when a clipboard
  -- provider exists, else the unnamed register.
  copy_register = nil,
  -- The PDF viewer for PDF citations, with {file} and {page} placeholders, e.g.
  -- { "zathura", "--page={page}", "{file}" }.  nil: the first of `pdf_viewers`
  -- found on PATH, else the system's handler (vim.ui.open), which cannot be told
  -- the page (the page is then named in a message).
  pdf_viewer = nil,
  pdf_viewers = {
    { "zathura", "--page={page}", "{file}" },
    { "sioyek", "--page", "{page}", "{file}" },
    { "okular", "-p", "{page}", "{file}" },
    { "evince", "--page-label={page}", "{file}" },
    { "qpdfview", "--unique", "{file}#{page}" },
    { "mupdf", "{file}", "{page}" },
  },
  -- Called with each `citeline/status` notification.
  on_status = nil,
}

M.config = vim.deepcopy(defaults)
M.client_id = nil
M.status = nil -- the latest citeline/status notification
M.last_answer = nil -- the latest answer object (citeline/ask result)
M.last_error = nil
M.last_opened = nil -- the last PDF open: { cmd = {...} } or { path = ..., page = ... }

local streams = {} -- partialResultToken -> function(delta)
local counter = 0
local initialized = {} -- client id -> true once `initialize` was answered
local pending = {} -- client id -> functions to call once initialized

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

local function normalize(path)
  return (vim.fn.fnamemodify(vim.fn.expand(path), ":p"):gsub("/$", ""))
end

-- Roots ----------------------------------------------------------------------

-- The documents folder a buffer or path belongs to: the nearest folder at or above it
-- holding a root marker, or nil.  Never the directory Neovim started in by itself.
function M.find_root(source)
  local path = source
  if source == nil or type(source) == "number" then
    local bufnr = source or vim.api.nvim_get_current_buf()
    if vim.bo[bufnr].buftype ~= "" then
      return nil
    end
    path = vim.api.nvim_buf_get_name(bufnr)
  end
  if path == nil or path == "" or path:match("^%a[%w+.-]*://") then
    return nil
  end
  return compat.root(normalize(path), M.config.root_markers)
end

-- The folders the running server was told about (workspace folders), as paths.
function M.folders()
  local c = client()
  local out = {}
  for _, folder in ipairs((c and c.workspace_folders) or {}) do
    table.insert(out, uri_path(folder.uri))
  end
  return out
end

local function add_folder(c, root)
  for _, folder in ipairs(c.workspace_folders or {}) do
    if uri_path(folder.uri) == root then
      return
    end
  end
  local folder = { uri = vim.uri_from_fname(root), name = root }
  c.workspace_folders = c.workspace_folders or {}
  table.insert(c.workspace_folders, folder)
  compat.client_call(c, "notify", "workspace/didChangeWorkspaceFolders", {
    event = { added = { folder }, removed = {} },
  })
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

local function when_initialized(id, fn)
  if initialized[id] then
    fn()
  else
    pending[id] = pending[id] or {}
    table.insert(pending[id], fn)
  end
end

-- The client configuration shared by every way of starting (setup's own start,
-- vim.lsp.config/vim.lsp.enable on 0.11+, and lsp/citeline.lua).
function M.lsp_config()
  local cmd = vim.deepcopy(M.config.cmd)
  for _, folder in ipairs(M.named_folders()) do
    vim.list_extend(cmd, { "--docs", folder })
  end
  return {
    name = "citeline",
    cmd = cmd,
    -- An empty Lua table would go out as a JSON array.
    init_options = next(M.config.init_options or {}) and M.config.init_options or vim.empty_dict(),
    handlers = {
      ["citeline/status"] = on_status,
      ["$/progress"] = on_progress,
    },
    -- A buffer is served only under a folder with a root marker.
    root_dir = function(bufnr, on_dir)
      local root = M.find_root(bufnr)
      if root then
        on_dir(root)
      end
    end,
    -- One server for all documents folders: a new one is added to it.
    reuse_client = function(c)
      return c.name == "citeline"
    end,
    on_init = function(c)
      M.client_id = c.id
      initialized[c.id] = true
      local waiting = pending[c.id] or {}
      pending[c.id] = nil
      -- After on_init returns: Neovim registers the client (get_client_by_id) then.
      vim.schedule(function()
        for _, fn in ipairs(waiting) do
          fn()
        end
      end)
    end,
    on_attach = function(c, bufnr)
      M.client_id = c.id
      local root = M.find_root(bufnr)
      if root then
        M.last_root = root
        add_folder(c, root)
      end
    end,
    on_exit = function(code, _, id)
      if code ~= 0 then
        vim.schedule(function()
          notify("the server exited with status " .. code, vim.log.levels.WARN)
        end)
      end
      initialized[id or M.client_id or -1] = nil
      if id == nil or id == M.client_id then
        M.client_id = nil
      end
    end,
  }
end

function M.named_folders()
  local out = {}
  for _, folder in ipairs(M.config.folders or {}) do
    table.insert(out, normalize(folder))
  end
  if M.config.root_dir then
    table.insert(out, normalize(M.config.root_dir))
  end
  return out
end

-- Server ---------------------------------------------------------------------

-- Starts the server (once) with `root` as its first workspace folder (nil: only the
-- named folders).  Returns the client id.
function M.start(root)
  local c = client()
  if c then
    if root then
      add_folder(c, root)
    end
    return M.client_id
  end
  local config = M.lsp_config()
  config.root_dir = root or M.named_folders()[1]
  if root then
    config.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  end
  M.client_id = compat.start_client(config)
  return M.client_id
end

function M.stop()
  local c = client()
  if c then
    compat.client_call(c, "stop")
  end
end

-- Attaches a buffer under a documents folder, starting the server for it.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  if vim.api.nvim_buf_get_name(bufnr) == "" or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local root = M.find_root(bufnr)
  if not root then
    return
  end
  M.last_root = root
  M.start(root)
  if M.client_id then
    vim.lsp.buf_attach_client(bufnr, M.client_id)
  end
end

-- Sends a request; callback(err, result).  Returns the request id or nil.
function M.request(method, params, callback)
  local c = client()
  if not c then
    callback({ message = "no documents folder is served (open a file under a folder with citeline.toml, or :CiteIndexFolder)" }, nil)
    return nil
  end
  local ok, id = compat.client_call(c, "request", method, params, function(err, result)
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
  local token = string.format("citeline-nvim-%d-%d", compat.uv.os_getpid(), counter)
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
    compat.client_call(c, "cancel_request", request_id)
  end
end

-- Serves `dir` (default: the current directory): `citeline/indexFolder` writes a
-- minimal citeline.toml when it has no marker.  callback(err, folder_status).
function M.index_folder(dir, callback)
  dir = normalize(dir and dir ~= "" and dir or vim.fn.getcwd())
  callback = callback or function() end
  if vim.fn.isdirectory(dir) ~= 1 then
    callback({ message = dir .. " is not a folder" }, nil)
    return
  end
  local id = M.start(dir)
  if not id then
    callback({ message = "the server could not be started: " .. table.concat(M.config.cmd, " ") }, nil)
    return
  end
  when_initialized(id, function()
    M.request("citeline/indexFolder", { folder = vim.uri_from_fname(dir) }, callback)
  end)
end

-- Citations ------------------------------------------------------------------

-- Whether a citation must not jump into the local file: the folder's copy is not the
-- one the team index holds ("differs" or "missing"), so its lines may say something else.
function M.local_copy_differs(item)
  return item.local_copy == "differs" or item.local_copy == "missing"
end

-- What the server says of a local copy that is not the indexed one (`local_copy_note`).
local function copy_note(item)
  return not is_null(item.local_copy_note) and item.local_copy_note or item.local_copy
end

-- The lines shown instead of a jump: why, then the passage as the index holds it.
function M.passage_lines(item)
  local why = copy_note(item)
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

local function scratch(name)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "hide"
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

-- A scratch buffer holding an item's indexed passage (one per passage, reused).
function M.passage_buffer(item)
  local key = string.format("citeline://passage/%s#%s", item.path,
    not is_null(item.start_line) and item.start_line or (item.page or 0))
  local buf = passage_bufs[key]
  if buf == nil or not vim.api.nvim_buf_is_valid(buf) then
    buf = scratch(key)
    passage_bufs[key] = buf
  end
  set_lines(buf, M.passage_lines(item))
  return buf
end

-- Where a citation points, for people: "path:12-14" or "path, page 3".
function M.location(item)
  if not is_null(item.page) then
    return string.format("%s, page %d", item.path, item.page)
  elseif not is_null(item.start_line) then
    if is_null(item.end_line) or item.end_line == item.start_line then
      return string.format("%s:%d", item.path, item.start_line)
    end
    return string.format("%s:%d-%d", item.path, item.start_line, item.end_line)
  end
  return item.path
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
    local changed = item.changed == true and " (changed since)" or ""
    if M.local_copy_differs(item) then
      table.insert(out, {
        bufnr = M.passage_buffer(item),
        lnum = 4,
        col = 1,
        text = vim.trim(string.format("%s%s  %s (%s: the indexed passage)",
          label, section, where, copy_note(item))),
      })
    else
      table.insert(out, {
        filename = uri_path(item.uri),
        lnum = (item.range and item.range.start.line or 0) + 1,
        col = 1,
        text = vim.trim(string.format("%s%s  %s%s", label, section, where, changed)),
      })
    end
  end
  return out
end

-- PDFs -----------------------------------------------------------------------

local function fill(template, file, page)
  return (template:gsub("{file}", function() return file end):gsub("{page}", function() return tostring(page) end))
end

-- The command that opens `file` at `page`: the configured viewer, else the first
-- known viewer on PATH; nil when none is found (the system handler is used).
function M.pdf_command(file, page)
  local candidates = M.config.pdf_viewer and { M.config.pdf_viewer } or M.config.pdf_viewers
  for _, template in ipairs(candidates or {}) do
    if vim.fn.executable(template[1]) == 1 then
      local cmd = {}
      for _, part in ipairs(template) do
        table.insert(cmd, fill(part, file, page))
      end
      return cmd
    end
  end
  return nil
end

-- Opens a PDF at a page (never its bytes in a buffer).
function M.open_pdf(file, page)
  local cmd = M.pdf_command(file, page)
  if cmd then
    M.last_opened = { cmd = cmd }
    local job = vim.fn.jobstart(cmd, { detach = true })
    if job <= 0 then
      notify("could not start " .. cmd[1], vim.log.levels.ERROR)
      return false
    end
    return true
  end
  M.last_opened = { path = file, page = page }
  local ok, err = compat.open(file)
  if not ok then
    notify(string.format("could not open %s: %s", file, err), vim.log.levels.ERROR)
    return false
  end
  notify(string.format("opened %s: see page %d (set pdf_viewer to open at the page)",
    vim.fn.fnamemodify(file, ":t"), page))
  return true
end

-- Labels ---------------------------------------------------------------------

-- The label line over an answer, as the server words it: how it was made
-- (`mode_label`), and why when a model's answer fell back to the documents' own
-- sentences (`fallback_note`).  nil for a refusal.
function M.answer_label(answer)
  if not answer or answer.refused or type(answer.mode_label) ~= "string" or answer.mode_label == "" then
    return nil
  end
  if type(answer.fallback_note) == "string" and answer.fallback_note ~= "" then
    return answer.mode_label .. " · " .. answer.fallback_note
  end
  return answer.mode_label
end

-- The server's grade text for an answer ("Answer", "Closest passages — …", "Not
-- found in the documents"), shown verbatim; nil from a server without grades.
function M.grade_label(answer)
  if answer and type(answer.grade_label) == "string" and answer.grade_label ~= "" then
    return answer.grade_label
  end
  return nil
end

-- Copy -------------------------------------------------------------------------

-- The link a source opens: `file:///…/doc.md#L103-L107`, `…#L12` or `…/guide.pdf#page=3`.
function M.citation_link(item)
  local base = (item.uri:gsub("#.*$", ""))
  if not is_null(item.page) then
    return base .. "#page=" .. item.page
  end
  if not is_null(item.start_line) then
    local last = is_null(item.end_line) and item.start_line or item.end_line
    if last > item.start_line then
      return string.format("%s#L%d-L%d", base, item.start_line, last)
    end
    return base .. "#L" .. item.start_line
  end
  return base
end

local function link_label(text)
  return (text:gsub("([\\%[%]])", "\\%1"))
end

local function link_target(uri)
  return (uri:gsub(" ", "%%20"):gsub("%(", "%%28"):gsub("%)", "%%29"))
end

local function source_line(prefix, item)
  local section = (not is_null(item.section) and item.section ~= "") and (" — " .. item.section) or ""
  local changed = item.changed == true and " (changed since)" or ""
  return string.format("%s[%s](%s)%s%s", prefix, link_label(M.location(item)),
    link_target(M.citation_link(item)), section, changed)
end

-- An answer as Markdown, as every Citeline client copies it: the question, when it
-- was asked (a history entry), the grade when it is not a plain answer, the text with
-- its [n] markers, and the sources as file:line / page links (a refusal: the nearest
-- passages).
function M.answer_markdown(answer)
  local question = vim.trim(((answer.question or ""):gsub("%s+", " ")))
  local out = { "## " .. question, "" }
  local grade = M.grade_label(answer)
  if not is_null(answer.time) then
    local stale = answer.stale == true and "; its sources changed since" or ""
    vim.list_extend(out, { string.format("*From Citeline's history, asked %s%s.*", answer.time, stale), "" })
  end
  if answer.refused == true then
    table.insert(out, ((string.format("**%s.**", grade or answer.grade or "refused")):gsub("%.%.%*%*$", ".**")))
    table.insert(out, "")
    local hits = answer.hits or {}
    if #hits > 0 then
      vim.list_extend(out, { "Nearest passages:", "" })
      for i = 1, math.min(3, #hits) do
        table.insert(out, source_line("- ", hits[i]))
      end
    end
  else
    if grade and answer.grade ~= "answer" then
      vim.list_extend(out, { "> **" .. grade .. "**", "" })
    end
    vim.list_extend(out, vim.split((answer.answer or ""):gsub("%s+$", ""), "\n", { plain = true }))
    table.insert(out, "")
    local citations = answer.citations or {}
    if #citations > 0 then
      vim.list_extend(out, { "Sources:", "" })
      for _, item in ipairs(citations) do
        table.insert(out, source_line(string.format("- [%d] ", item.n), item))
      end
    end
  end
  while #out > 0 and out[#out] == "" do
    table.remove(out)
  end
  return out
end

-- UI -------------------------------------------------------------------------

local answer_buf = nil
local shown_answer = nil -- the answer object the answer buffer shows
local shown_question = nil

local function show_buffer(lines)
  if not (answer_buf and vim.api.nvim_buf_is_valid(answer_buf)) then
    answer_buf = scratch("citeline://answer")
    vim.bo[answer_buf].filetype = "markdown"
    vim.keymap.set("n", "<CR>", M.follow_marker, { buffer = answer_buf, desc = "Citeline: open the source of the [n] under the cursor" })
  end
  if vim.fn.bufwinid(answer_buf) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, answer_buf)
  end
  set_lines(answer_buf, lines)
  return answer_buf
end

function M.answer_buffer()
  return answer_buf
end

-- The answer object the answer buffer shows (what :CiteCopy copies).
function M.shown_answer()
  return shown_answer
end

-- What the answer buffer shows for a finished answer: the question, the grade, the
-- label, the final text (it replaces what streamed), the sources.
function M.answer_lines(question, answer)
  local lines = { "# " .. question, "" }
  local grade = M.grade_label(answer)
  local label = M.answer_label(answer)
  if grade then
    table.insert(lines, "**" .. grade .. "**")
  end
  if label then
    table.insert(lines, "_" .. label .. "_")
  end
  if grade or label then
    table.insert(lines, "")
  end
  if not is_null(answer.time) then
    local note = "Asked " .. answer.time
    if answer.stale == true then
      note = note .. " · a cited source changed since: it may say something else now"
    end
    vim.list_extend(lines, { "_" .. note .. "_", "" })
  end
  vim.list_extend(lines, vim.split(answer.answer or "", "\n", { plain = true }))
  if answer.citations and #answer.citations > 0 then
    vim.list_extend(lines, { "", "Sources:" })
    for _, item in ipairs(M.quickfix_items(answer.citations)) do
      local name = item.filename and vim.fn.fnamemodify(item.filename, ":~:.") or vim.api.nvim_buf_get_name(item.bufnr)
      table.insert(lines, string.format("%s:%d  %s", name, item.lnum, item.text))
    end
  end
  return lines
end

-- Shows a finished answer (an ask's, or a reopened history entry).
function M.show_answer(question, answer)
  shown_answer, shown_question = answer, question
  show_buffer(M.answer_lines(question, answer))
  vim.fn.setqflist({}, " ", { title = "Citeline: " .. question, items = M.quickfix_items(answer.citations) })
end

-- Opens a citation (or hit) in the window the answer buffer was opened from; when the
-- local copy of its file is not the indexed one, its passage instead of a wrong line;
-- a PDF in a viewer at its page.
function M.open_citation(item)
  local file = uri_path(item.uri)
  local line = (item.range and item.range.start.line or 0) + 1
  if not is_null(item.page) and not M.local_copy_differs(item) then
    return M.open_pdf(file, item.page)
  end
  if vim.api.nvim_get_current_buf() == answer_buf then
    vim.cmd("wincmd p")
    if vim.api.nvim_get_current_buf() == answer_buf then
      vim.cmd("aboveleft split")
    end
  end
  if M.local_copy_differs(item) then
    vim.api.nvim_set_current_buf(M.passage_buffer(item))
    notify(string.format("%s: %s: showing the indexed passage", item.path, copy_note(item)))
    return
  end
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  vim.api.nvim_win_set_cursor(0, { math.min(line, vim.api.nvim_buf_line_count(0)), 0 })
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
      M.show_answer(question, answer)
    end,
  })
end

-- Copies the shown answer as Markdown into `register`; returns the text or nil.
function M.copy(register)
  if not shown_answer then
    notify("no answer to copy: ask with :CiteAsk first", vim.log.levels.WARN)
    return nil
  end
  local answer = vim.tbl_extend("keep", { question = shown_answer.question or shown_question }, shown_answer)
  local lines = M.answer_markdown(answer)
  local reg = (register and register ~= "") and register
    or M.config.copy_register
    or (vim.fn.has("clipboard") == 1 and "+" or '"')
  vim.fn.setreg(reg, lines, "l")
  notify(string.format("copied the answer with %d sources to register %s", #(answer.citations or {}), reg))
  return table.concat(lines, "\n") .. "\n"
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

-- History ----------------------------------------------------------------------

local history_buf = nil
local history_ids = {} -- line number -> entry id
M.history = nil -- the latest citeline/history result

-- One line per history entry: when, grade, question, how many sources, a preview.
function M.history_lines(result)
  local lines = { string.format("Citeline history: %d of %d (<CR> reopens an answer)",
    #(result.entries or {}), result.total or 0), "" }
  local ids = {}
  for _, entry in ipairs(result.entries or {}) do
    local when = tostring(entry.time):gsub("T", " "):gsub("%.%d+", ""):gsub("Z$", "")
    table.insert(lines, string.format("%s  %-8s %s  (%d sources) — %s", when, entry.grade, entry.question,
      entry.sources or 0, (tostring(entry.preview or "")):gsub("\n", " ")))
    ids[#lines] = entry.id
  end
  return lines, ids
end

-- Lists past answers (newest first) in the citeline://history buffer.
-- callback(err, result) is called once it is shown.
function M.history_command(query, callback)
  local params = { limit = 50 }
  if query and query ~= "" then
    params.query = query
  end
  M.request("citeline/history", params, function(err, result)
    if err then
      notify("history failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    else
      M.history = result
      local lines
      lines, history_ids = M.history_lines(result)
      if not (history_buf and vim.api.nvim_buf_is_valid(history_buf)) then
        history_buf = scratch("citeline://history")
        vim.keymap.set("n", "<CR>", function()
          local id = history_ids[vim.api.nvim_win_get_cursor(0)[1]]
          if id then
            M.open_history_entry(id)
          end
        end, { buffer = history_buf, desc = "Citeline: reopen this answer" })
      end
      set_lines(history_buf, lines)
      if vim.fn.bufwinid(history_buf) == -1 then
        vim.cmd("botright split")
        vim.api.nvim_win_set_buf(0, history_buf)
      end
    end
    if callback then
      callback(err, result)
    end
  end)
end

function M.history_buffer()
  return history_buf
end

-- Reopens a recorded answer in the answer buffer (saying when a source changed since).
function M.open_history_entry(id, callback)
  M.request("citeline/historyEntry", { id = id }, function(err, entry)
    if err then
      notify("could not reopen the answer: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    else
      M.show_answer(entry.question or "", entry)
    end
    if callback then
      callback(err, entry)
    end
  end)
end

-- Status -----------------------------------------------------------------------

-- A folder's state as shown: "pausing" while a paused folder finishes the file it is
-- committing, then "paused"; an error stays an error.
function M.shown_state(folder)
  if folder.paused ~= true or folder.state == "error" then
    return folder.state
  end
  return folder.state == "indexing" and "pausing" or "paused"
end

function M.status_lines(status)
  local lines = {}
  for _, folder in ipairs((status and status.folders) or {}) do
    local line = string.format("%s: %s, %d files, %d chunks, %d %s, %d errors",
      uri_path(folder.uri), M.shown_state(folder), folder.files, folder.chunks, folder.pending,
      folder.paused == true and "waiting" or "pending", #(folder.errors or {}))
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
  -- Folders the server was told about and does not serve (no marker), and why.
  for _, folder in ipairs((status and not is_null(status.unserved) and status.unserved) or {}) do
    table.insert(lines, string.format("%s: %s", folder.docs or uri_path(folder.uri), folder.reason))
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

-- Pauses (`pause` true) or resumes indexing of `dir` (nil or "": every folder).
-- callback(err, result) with result.folders as citeline/status lists them.
function M.set_paused(pause, dir, callback)
  local params = {}
  if dir and dir ~= "" then
    params.folder = vim.uri_from_fname(normalize(dir))
  end
  local method = pause and "citeline/pauseIndexing" or "citeline/resumeIndexing"
  M.request(method, params, function(err, result)
    if err then
      notify((pause and "pause" or "resume") .. " failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    else
      for _, folder in ipairs(result.folders or {}) do
        notify(string.format("%s: indexing %s (%d files waiting)", uri_path(folder.uri),
          pause and "paused" or "resumed", folder.pending or 0))
      end
    end
    if callback then
      callback(err, result)
    end
  end)
end

function M.index_folder_command(dir)
  M.index_folder(dir, function(err, folder)
    if err then
      notify("could not index the folder: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    notify(string.format("serving %s (%s)", folder.docs or uri_path(folder.uri or ""), folder.state or "?"))
  end)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  local command = vim.api.nvim_create_user_command
  command("CiteAsk", function(args) M.ask_command(args.args) end, { nargs = "+" })
  command("CiteSearch", function(args) M.search_command(args.args) end, { nargs = "+" })
  command("CiteCopy", function(args) M.copy(args.args) end, { nargs = "?" })
  command("CiteHistory", function(args) M.history_command(args.args) end, { nargs = "*" })
  command("CiteStatus", function() M.status_command() end, { nargs = 0 })
  command("CiteReindex", function() M.reindex_command() end, { nargs = 0 })
  command("CitePause", function(args) M.set_paused(true, args.args) end, { nargs = "?", complete = "dir" })
  command("CiteResume", function(args) M.set_paused(false, args.args) end, { nargs = "?", complete = "dir" })
  command("CiteIndexFolder", function(args) M.index_folder_command(args.args) end, { nargs = "?", complete = "dir" })
  if #M.named_folders() > 0 then
    M.start(nil)
  end
  if M.config.attach then
    if compat.has_lsp_config then
      -- 0.11+: Neovim starts and attaches it (root_dir gates on the markers).
      vim.lsp.config("citeline", M.lsp_config())
      vim.lsp.enable("citeline")
    else
      local group = vim.api.nvim_create_augroup("citeline", { clear = true })
      vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
        group = group,
        callback = function(args) M.attach(args.buf) end,
      })
    end
  end
  return M
end

return M
