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
from answer_checks import QUOTED_LABEL, assert_extractive, flat
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
    # The documents' own sentence, cited: in the lines its [n] points at.
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    assert cited["path"] == "garden.md"
    # The buffer: the question, the label, the answer with its markers, the sources.
    shown = result["shown"]
    assert shown.startswith(f"{QUESTION}\n\n{QUOTED_LABEL}\n\n{answer['answer']}\n")
    assert sentence in flat(shown)
    assert "Sources:" in shown
    first = answer["citations"][0]
    assert f"[1] {first['path']}:{first['start_line']}-{first['end_line']}" in shown
    # RET on the first [n] of the answer opened its citation; on the first source, the first.
    n = int(result["marker"].strip("[]"))
    marked = next(c for c in answer["citations"] if c["n"] == n)
    marked_at = {"file": str(docs / marked["path"]), "line": marked["start_line"]}
    assert result["marker_jump"] == marked_at
    assert result["jump"] == {"file": str(docs / first["path"]), "line": first["start_line"]}
    assert result["hits"][0]["path"] == "kitchen.md"
    assert result["status"]["folders"][0]["state"] == "ready"

    # answer.mode = generative: the written text streamed into the buffer, then the
    # buffer settled to the final answer, under its label.
    generative = result["generative"]
    assert generative["generator_called"] is True
    assert any("Searching the documents" not in seen for seen in result["generative_seen"]), (
        "nothing streamed into the buffer"
    )
    if generative["mode"] == "generative":
        label = "Written by SmolLM2-135M-Instruct.Q4_1, checked against sources"
    else:
        assert generative["fallback"] == "unsupported"
        label = (
            f"{QUOTED_LABEL} · the model's answer was not supported by the sources; "
            "showing the documents' own sentences"
        )
    assert result["generative_shown"].startswith(
        f"{QUESTION}\n\n{label}\n\n{generative['answer']}\n"
    )


def test_emacs_shows_the_indexed_passage_when_the_local_copy_differs(tmp_path: Path) -> None:
    assert EMACS is not None
    out = tmp_path / "passage.txt"
    item = (
        '(list :n 1 :path "garden.md" :page nil :start_line 12 :end_line 13'
        ' :uri "file:///nowhere/garden.md" :local_copy "differs"'
        ' :text "Marigolds keep aphids away.\\nPlant them early.")'
    )
    program = (
        "(progn (package-initialize)"
        f' (add-to-list (quote load-path) "{REPO / "editor-clients" / "emacs"}")'
        " (require 'citeline)"
        f" (with-current-buffer (citeline--open {item})"
        f' (write-region (point-min) (point-max) "{out}")))'
    )
    completed = subprocess.run(
        [EMACS, "--batch", "--eval", program], capture_output=True, text=True, timeout=120
    )
    assert out.exists(), completed.stderr
    shown = out.read_text().splitlines()
    assert shown[0] == "garden.md:12-13"
    assert "differs from the indexed one" in shown[1]
    assert shown[3:] == ["Marigolds keep aphids away.", "Plant them early."]
