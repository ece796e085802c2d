-- Drives Citeline from headless Neovim with the client in editor-clients/neovim:
-- waits for the folder to be ready, runs :CiteAsk and :CiteSearch, and writes what
-- the user would see (answer buffer, quickfix lists, the answer object) as JSON.
local env = vim.env
local out_path = env.CITELINE_TEST_OUT
local result = { steps = {} }

local function finish()
  vim.fn.writefile({ vim.fn.json_encode(result) }, out_path)
  vim.cmd("qall!")
end

local function with_names(items)
  for _, item in ipairs(items) do
    item.filename = vim.api.nvim_buf_get_name(item.bufnr)
  end
  return items
end

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(env.CITELINE_NVIM_CLIENT)
  local citeline = require("citeline")
  citeline.setup({
    cmd = { env.CITELINE_PYTHON, "-m", "citeline.cli", "serve" },
    root_dir = env.CITELINE_TEST_DOCS,
    init_options = { answer = { maxAnswerTokens = 48, timeoutSeconds = 600 } },
  })
  local timeout = tonumber(env.CITELINE_TEST_TIMEOUT_MS)
  table.insert(result.steps, "started")
  if not citeline.wait_ready(timeout) then
    result.error = "the folder never became ready: " .. vim.inspect(citeline.status)
    return
  end
  table.insert(result.steps, "ready")
  result.status = citeline.status_lines(citeline.status)

  -- Ask through the user command, as a person would type it.
  vim.cmd("CiteAsk " .. env.CITELINE_TEST_QUESTION)
  local answered = vim.wait(timeout, function()
    return citeline.last_answer ~= nil or citeline.last_error ~= nil
  end, 50)
  if not answered then
    result.error = "no answer in time"
    return
  end
  if citeline.last_error then
    result.error = "ask failed: " .. vim.inspect(citeline.last_error)
    return
  end
  table.insert(result.steps, "answered")
  result.answer = citeline.last_answer
  result.answer_buffer = vim.api.nvim_buf_get_lines(citeline.answer_buffer(), 0, -1, false)
  result.ask_quickfix = with_names(vim.fn.getqflist())
  -- Jump to the first citation, as :cc 1 does.
  if #result.ask_quickfix > 0 then
    vim.cmd("cc 1")
    result.jump = { file = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
  end
  -- <CR> on the first [n] of the answer text opens its source.
  local buf = citeline.answer_buffer()
  if vim.fn.bufwinid(buf) == -1 then
    vim.cmd("botright sbuffer " .. buf)
  end
  local win = vim.fn.bufwinid(buf)
  for lnum, line in ipairs(result.answer_buffer) do
    local col = line:find("%[%d+%]")
    if lnum > 2 and col and not line:match("^Sources:") then
      vim.api.nvim_set_current_win(win)
      vim.api.nvim_win_set_cursor(win, { lnum, col })
      result.marker = line:match("%[%d+%]", col)
      vim.cmd('execute "normal \\<CR>"')
      result.marker_jump = { file = vim.api.nvim_buf_get_name(0), line = vim.api.nvim_win_get_cursor(0)[1] }
      break
    end
  end

  -- Streaming through the Lua API.
  local deltas, done = {}, false
  citeline.ask(env.CITELINE_TEST_QUESTION, {
    on_delta = function(d) table.insert(deltas, d) end,
    on_done = function(e, answer)
      result.api_error = e
      result.api_answer = answer
      done = true
    end,
  })
  vim.wait(timeout, function() return done end, 50)
  result.deltas = deltas
  table.insert(result.steps, "streamed")

  local title = "Citeline: " .. env.CITELINE_TEST_QUERY
  vim.cmd("CiteSearch " .. env.CITELINE_TEST_QUERY)
  vim.wait(timeout, function() return vim.fn.getqflist({ title = 0 }).title == title end, 50)
  result.search_quickfix = with_names(vim.fn.getqflist())
  table.insert(result.steps, "searched")

  -- A written answer streams into the buffer, then settles to the final text.
  local lsp = vim.lsp.get_client_by_id(citeline.client_id)
  local settings = { answer = { maxAnswerTokens = 48, timeoutSeconds = 600, mode = "generative" } }
  require("citeline.compat").client_call(lsp, "notify", "workspace/didChangeConfiguration",
    { settings = { citeline = settings } })
  vim.cmd("CiteAsk " .. env.CITELINE_TEST_QUESTION)
  -- What the buffer showed while the answer was being written.
  local seen, last = {}, nil
  vim.wait(timeout, function()
    if citeline.last_answer ~= nil or citeline.last_error ~= nil then
      return true
    end
    local text = table.concat(vim.api.nvim_buf_get_lines(citeline.answer_buffer(), 0, -1, false), "\n")
    if text ~= last then
      table.insert(seen, text)
      last = text
    end
    return false
  end, 20)
  if citeline.last_error then
    result.error = "generative ask failed: " .. vim.inspect(citeline.last_error)
    return
  end
  result.generative = citeline.last_answer
  result.generative_buffer = vim.api.nvim_buf_get_lines(citeline.answer_buffer(), 0, -1, false)
  result.generative_seen = seen
  result.model = citeline.status.models.generation
  table.insert(result.steps, "settled")
  citeline.stop()
  vim.wait(10000, function() return citeline.client_id == nil end, 50)
end)
if not ok then
  result.error = "lua error: " .. tostring(err)
end
finish()
