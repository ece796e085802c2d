"""The cache folder: one home for converted models and evaluation corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citeline import cache


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"
    assert cache.models_dir() == tmp_path / "mine" / "models"
    assert cache.eval_dir() == tmp_path / "mine" / "eval"
    monkeypatch.delenv("CITELINE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.models_dir() == tmp_path / "citeline" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.models_dir() == Path(os.path.expanduser("~/.cache/citeline/models"))
