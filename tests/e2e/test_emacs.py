"""A real editor: Emacs (batch) with eglot and the Citeline client in
editor-clients/emacs asks a question and follows a citation.

Needs `emacs` with eglot (scripts/install-editors.sh installs both).
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

EMACS = shutil.which("emacs")


def _has_eglot() -> bool:
    if EMACS is None:
        return False
    probe = subprocess.run(
        [EMACS, "--batch", "--eval", "(progn (package-initialize) (require 'eglot))"],
        capture_output=True,
        timeout=120,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _has_eglot(), reason="emacs with eglot is not installed (run scripts/install-editors.sh)"
)

QUESTION = "How many hours of sun do tomatoes need?"


def test_emacs_eglot_asks_and_follows_a_citation(tmp_path: Path) -> None:
    assert EMACS is not None
    docs = make_corpus(tmp_path / "docs")
    out = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        {
            "CITELINE_TEST_OUT": str(out),
            "CITELINE_TEST_DOCS": str(docs),
            "CITELINE_TEST_QUESTION": QUESTION,
            "CITELINE_TEST_QUERY": "bread dough rising time",
            "CITELINE_TEST_TIMEOUT": str(int(READY_TIMEOUT)),
            "CITELINE_PYTHON": sys.executable,
            "CITELINE_EMACS_CLIENT": str(REPO / "editor-clients" / "emacs"),
            "HOME": str(tmp_path / "home"),
        }
    )
    script = REPO / "tests" / "e2e" / "emacs" / "ask.el"
    completed = subprocess.run(
        [EMACS, "--batch", "-l", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    assert out.exists(), completed.stderr[-4000:]
    result = json.loads(out.read_text())
    assert "error" not in result, f"{result['error']}\n{completed.stderr[-4000:]}"
    answer = result["answer"]
    assert answer["hits"][0]["path"] == "garden.md"
    assert answer["citations"], answer
    assert result["shown"].startswith(QUESTION)
    assert "Sources:" in result["shown"]
    first = answer["citations"][0]
    assert f"[1] {first['path']}:{first['start_line']}-{first['end_line']}" in result["shown"]
    # RET on the first source opened the cited file at the cited line.
    assert result["jump"] == {"file": str(docs / first["path"]), "line": first["start_line"]}
    assert result["hits"][0]["path"] == "kitchen.md"
    assert result["status"]["folders"][0]["state"] == "ready"
