"""Torture: every kind of bad setting is a bounded warning and the default, and search,
hover's search and ask still answer (tests/torture/bad_settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.app import ModelPool
from citeline.core.embedding import Embedder
from citeline.settings import EmbeddingSettings
from torture import bad_settings


@pytest.fixture(scope="module")
def models(real_embedder: Embedder) -> ModelPool:
    return ModelPool(embedders={EmbeddingSettings(): real_embedder})


@pytest.mark.parametrize("case", bad_settings.CASES, ids=lambda case: case.name)
def test_a_bad_setting_is_a_warning_and_the_default(
    tmp_path: Path, case: bad_settings.Case, models: ModelPool
) -> None:
    assert bad_settings.run_case(tmp_path, case, models) is None
