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
    assert result["steps"] == ["started", "ready", "answered", "streamed", "searched"]
    assert result["status"][0].startswith(f"{docs}: ready, 4 files")

    answer = result["answer"]
    assert answer["question"] == QUESTION
    assert answer["answer"].strip()
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
    # The answer buffer shows the answer and its sources; :cc 1 opened the first one.
    buffer = "\n".join(result["answer_buffer"])
    assert buffer.startswith(f"# {QUESTION}")
    assert "Sources:" in buffer
    first = result["ask_quickfix"][0]
    assert result["jump"] == {"file": first["filename"], "line": first["lnum"]}
    # Streaming reached the Lua callback.
    assert result["deltas"], "no streamed pieces"
    assert result["api_answer"]["hits"][0]["path"] == "garden.md"
    # Search filled the quickfix list with passages.
    top = result["search_quickfix"][0]
    assert top["filename"] == str(docs / "kitchen.md")
    assert "Bread" in top["text"]
