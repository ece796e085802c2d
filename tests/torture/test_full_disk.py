"""Torture: a full disk on a small tmpfs mounted for the test (tests/torture/full_disk.py):
`citeline index` says so in one line, the intact index answers `citeline search`, and
a daemon meeting it mid-edit recovers by itself with nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from torture import full_disk


@pytest.mark.skipif(not full_disk.can_mount(), reason="mounting a tmpfs needs root")
def test_a_full_disk_is_one_line_loses_nothing_and_recovers_by_itself(tmp_path: Path) -> None:
    result = full_disk.run(tmp_path)
    assert result.problems == []
    assert (result.index_exit, result.index_error_lines, result.tracebacks) == (2, 1, 0)
    assert result.search_while_full and result.index_after == result.files
    assert result.daemon_alive and result.daemon_said_full and result.daemon_search_while_full
    assert result.lost == 0
