"""Torture: 300 file operations as fast as a script makes them, under a running
server; the index ends with exactly the files on disk (tests/torture/churn.py)."""

from __future__ import annotations

from pathlib import Path

from torture import churn


def test_churn_under_a_running_server_loses_nothing(tmp_path: Path) -> None:
    result = churn.run(tmp_path, operations=300, seed=3)
    figures = result.to_json()
    assert result.lost_files == 0 and result.stale_files == 0, figures
    assert result.rss_after_mb < result.rss_before_mb + 100, figures
