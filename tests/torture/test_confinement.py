"""Torture: a checked-in citeline.toml never makes Citeline move, rename or write
anything outside the documents folder (tests/torture/confinement.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torture import confinement


@pytest.mark.parametrize("case", confinement.CASES, ids=lambda case: case.name)
def test_an_index_path_from_the_folder_is_confined(tmp_path: Path, case: confinement.Case) -> None:
    assert confinement.run_case(tmp_path, case) is None
