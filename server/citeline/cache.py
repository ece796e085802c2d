"""Citeline's cache folder: converted models, evaluation corpora and their indexes.

``$CITELINE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/citeline``, else
``~/.cache/citeline``.  Nothing in it is precious: everything is rebuilt on demand.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache folder (not created here)."""
    explicit = os.environ.get("CITELINE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "citeline"


def models_dir() -> Path:
    """Where converted GGUF models live."""
    return cache_dir() / "models"


def eval_dir() -> Path:
    """Where ``citeline eval`` writes benchmark corpora and indexes them."""
    return cache_dir() / "eval"
