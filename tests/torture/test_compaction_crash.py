"""Torture: kill -9 while the mirrors write a new base beside the edits; the index
opens with both mirrors exactly the store's (tests/torture/compaction.py)."""

from __future__ import annotations

from pathlib import Path

from torture import compaction


def test_kill_9_during_a_compaction_leaves_mirrors_that_are_the_store(tmp_path: Path) -> None:
    result = compaction.run(tmp_path, rounds=8, seed=11)
    figures = result.to_json()
    assert not result.problems, figures
    assert result.killed_compacting >= 2, figures  # kills that cut a new base short
