"""Torture: kill -9 of ``citeline index`` at random points and inside commits over a
churning folder; the store stays consistent and ends equal to a fresh index
(tests/torture/crashes.py)."""

from __future__ import annotations

from pathlib import Path

from torture import crashes

ROUNDS = 8


def test_kill_9_anywhere_leaves_a_consistent_store_that_ends_as_a_fresh_one(
    tmp_path: Path,
) -> None:
    result = crashes.run(tmp_path, rounds=ROUNDS, seed=5)
    figures = result.to_json()
    assert result.problems == [], figures
    assert result.consistent == result.rounds == ROUNDS, figures
    assert result.kills_in_commit >= 2, figures
    assert result.lost_files == result.stale_files == 0, figures
    assert result.equal_to_fresh, figures
