"""A real editor: headless Neovim with its built-in LSP client and the Citeline client
in editor-clients/neovim asks a question and jumps to the citation.

Needs `nvim` (scripts/install-editors.sh installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from answer_checks import QUOTED_LABEL, assert_extractive, flat
from lsp_harness import READY_TIMEOUT, REPO, make_corpus

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim is not installed (run scripts/install-editors.sh)"
)

QUESTION = "How many hours of sun do tomatoes need?"
QUERY = "bread dough rising time"


def test_neovim_asks_and_jumps_to_the_citation(tmp_path: Path) -> None:
    assert NVIM is not None
    docs = make_corpus(tmp_path / "docs")
    out = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        {
            "CITELINE_TEST_OUT": str(out),
            "CITELINE_TEST_DOCS": str(docs),
            "CITELINE_TEST_QUESTION": QUESTION,
            "CITELINE_TEST_QUERY": QUERY,
            "CITELINE_TEST_TIMEOUT_MS": str(int(READY_TIMEOUT * 1000)),
            "CITELINE_PYTHON": sys.executable,
            "CITELINE_NVIM_CLIENT": str(REPO / "editor-clients" / "neovim"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
        }
    )
    script = REPO / "tests" / "e2e" / "nvim" / "ask.lua"
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", f"luafile {script}"],
        cwd=docs,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    lsp_logs = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "cache").rglob("*.log"))
    assert out.exists(), f"nvim wrote no result\n{completed.stderr}\n{lsp_logs[-4000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, f"{result.get('error')}\n{lsp_logs[-4000:]}"
    assert result["steps"] == ["started", "ready", "answered", "streamed", "searched", "settled"]
    assert result["status"][0].startswith(f"{docs}: ready, 4 files")

    answer = result["answer"]
    assert answer["question"] == QUESTION
    # The documents' own sentence, cited: in the lines its [n] points at.
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    assert cited["path"] == "garden.md"
    assert answer["hits"][0]["path"] == "garden.md"
    citations = answer["citations"]
    assert citations, answer
    garden = (docs / "garden.md").read_text().splitlines()
    # Each citation's range is the lines of its passage; the quickfix list points there.
    for citation, item in zip(citations, result["ask_quickfix"], strict=True):
        rng = citation["range"]
        assert item["filename"] == str(docs / citation["path"])
        assert item["lnum"] == rng["start"]["line"] + 1
    sun = next(c for c in citations if c["path"] == "garden.md")
    cited_lines = "\n".join(garden[sun["range"]["start"]["line"] : sun["range"]["end"]["line"]])
    assert "six hours of direct sun" in cited_lines
    # The answer buffer: the question, the label, the answer with its [n] markers,
    # the sources; :cc 1 opened the first one.
    lines = result["answer_buffer"]
    assert lines[:4] == [f"# {QUESTION}", "", f"_{QUOTED_LABEL}_", ""]
    buffer = "\n".join(lines)
    assert answer["answer"] in buffer
    assert sentence in flat(buffer)
    assert "Sources:" in buffer
    first = result["ask_quickfix"][0]
    assert result["jump"] == {"file": first["filename"], "line": first["lnum"]}
    # <CR> on a [n] in the answer opened that citation.
    n = int(result["marker"].strip("[]"))
    marked = next(c for c in citations if c["n"] == n)
    assert result["marker_jump"] == {
        "file": str(docs / marked["path"]),
        "line": marked["range"]["start"]["line"] + 1,
    }
    # Through the Lua API: an extractive answer arrives as one piece, the whole text.
    assert result["deltas"] == [result["api_answer"]["answer"]]
    assert result["api_answer"]["hits"][0]["path"] == "garden.md"
    # Search filled the quickfix list with passages.
    top = result["search_quickfix"][0]
    assert top["filename"] == str(docs / "kitchen.md")
    assert "Bread" in top["text"]

    # answer.mode = generative: the written text streamed into the buffer, then the
    # buffer settled to the final answer, under its label.
    generative = result["generative"]
    assert generative["generator_called"] is True
    assert any("Searching the documents" not in seen for seen in result["generative_seen"]), (
        "nothing streamed into the buffer"
    )
    final = result["generative_buffer"]
    assert final[:2] == [f"# {QUESTION}", ""]
    if generative["mode"] == "generative":
        label = "Written by SmolLM2-135M-Instruct.Q4_1, checked against sources"
    else:
        assert generative.get("fallback") == "unsupported"
        label = (
            f"{QUOTED_LABEL} · the model's answer was not supported by the sources; "
            "showing the documents' own sentences"
        )
    assert final[2] == f"_{label}_"
    text = generative["answer"].split("\n")
    assert final[4 : 4 + len(text)] == text


PASSAGE_ITEM = {
    "n": 1,
    "path": "garden.md",
    "section": "Garden notes > Marigolds",
    "page": None,
    "start_line": 12,
    "end_line": 13,
    "uri": "file:///nowhere/garden.md",
    "range": {"start": {"line": 11, "character": 0}, "end": {"line": 13, "character": 0}},
    "local_copy": "differs",
    "text": "Marigolds keep aphids away.\nPlant them early.",
}

PASSAGE_SCRIPT = """
local citeline = require("citeline")
local item = vim.fn.json_decode(vim.env.CITELINE_TEST_ITEM)
citeline.open_citation(item)
local shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local qf = citeline.quickfix_items({ item })
vim.fn.writefile({ vim.fn.json_encode({
  shown = shown,
  name = vim.api.nvim_buf_get_name(0),
  qf_is_passage = qf[1].bufnr ~= nil and qf[1].filename == nil,
  qf_text = qf[1].text,
}) }, vim.env.CITELINE_TEST_OUT)
vim.cmd("qall!")
"""


def test_neovim_shows_the_indexed_passage_when_the_local_copy_differs(tmp_path: Path) -> None:
    assert NVIM is not None
    script = tmp_path / "passage.lua"
    script.write_text(PASSAGE_SCRIPT, "utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_ITEM": json.dumps(PASSAGE_ITEM),
    }
    client = REPO / "editor-clients" / "neovim"
    subprocess.run(
        [
            NVIM,
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"set rtp^={client}",
            "-c",
            f"luafile {script}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result = json.loads(out.read_text())
    assert result["shown"][0] == "garden.md:12-13"
    assert "differs" in result["shown"][1]
    assert result["shown"][3:] == ["Marigolds keep aphids away.", "Plant them early."]
    assert result["name"].startswith("citeline://passage/garden.md")
    assert result["qf_is_passage"] and "your copy differs" in result["qf_text"]
