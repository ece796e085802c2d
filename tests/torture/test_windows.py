"""Torture: two daemons on one folder, one indexing 150 new files: the other's searches
are answered all along, and `citeline search` says that it waits, and why
(tests/torture/windows.py)."""

from __future__ import annotations

from pathlib import Path

from torture import windows


def test_a_window_is_never_held_behind_another_windows_indexing(tmp_path: Path) -> None:
    result = windows.run(tmp_path, files=500)  # a batch that outlasts the CLI's start
    assert result.problems == []
    waiting = [w for w in result.windows if w.waited]
    assert len(waiting) == 1  # one window wrote, the other waited for its lock
    assert waiting[0].searches >= 10  # answered one after another meanwhile
    assert result.cli_exit == 0 and result.cli_said_wait
    assert "pid" in result.cli_line and "is indexing" in result.cli_line
