"""The command line's progress bar: drawn on a terminal only, ended with a newline."""

from __future__ import annotations

import io

import pytest

from citeline.cli import progress as progress_module


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(progress_module.sys, "stderr", terminal)
    with progress_module.progress("indexing") as bar:
        bar(1, 4, "notes/a.md")
        bar(4, 4, "notes/" + "x" * 60 + ".md")
    text = terminal.getvalue()
    assert "indexing [#######" in text and "1/4" in text and "4/4" in text
    assert "…" in text  # a long path is shortened from the left
    assert text.endswith("\n")


def test_nothing_is_drawn_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = io.StringIO()
    monkeypatch.setattr(progress_module.sys, "stderr", plain)
    with progress_module.progress("indexing") as bar:
        bar(1, 4, "a.md")
    assert plain.getvalue() == ""
