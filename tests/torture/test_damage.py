"""Torture: every kind of damage to the index folder is recovered by the next command,
with at most one line said about it (tests/torture/damage.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torture import damage


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return damage.indexed_folder(tmp_path_factory.mktemp("damage"))


@pytest.mark.parametrize("name", sorted(damage.DAMAGE))
def test_a_damaged_index_is_moved_aside_and_rebuilt(
    tmp_path: Path, template: Path, name: str
) -> None:
    assert damage.recovers(tmp_path, name, template) is None
