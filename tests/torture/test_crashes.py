"""Torture: kill -9 of ``citeline index`` at random points and inside commits over a
churning folder; the store stays consistent and ends equal to a fresh index
(tests/torture/crashes.py)."""

from __future__ import annotations

from pathlib import Path

from torture import crashes

ROUNDS = 8
FIRST_INDEX_FILES = 150  # three embedding batches of 64; killed in the second


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


def test_a_first_index_killed_halfway_finishes_equal_to_a_fresh_one(tmp_path: Path) -> None:
    """A first index of many small files, killed with SIGKILL inside a commit halfway:
    what was committed stays consistent, and the next run finishes the job, nothing lost,
    equal to a fresh index (each batch is committed as it goes)."""
    result = crashes.first_index(tmp_path, files=FIRST_INDEX_FILES, seed=3)
    figures = result.to_json()
    assert result.problems == [], figures
    assert result.killed_in_commit and result.consistent, figures
    assert 0 < result.committed_before_kill < FIRST_INDEX_FILES, figures
    assert result.lost_files == result.stale_files == 0, figures
    assert result.equal_to_fresh, figures
