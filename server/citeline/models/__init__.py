"""Locating and preparing the default GGUF models from files that PyPI packages ship.

- ``minilm``: the default embedding model, converted on first use into the cache;
- ``smollm``: the default answer model, shipped as GGUF;
- ``bert_gguf`` (with ``wordpiece_vocab``): the BERT to GGUF converter, for
  embedding models and cross-encoder rerankers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citeline.core.errors import BackendError


class ModelError(BackendError):
    """A default model is missing or cannot be prepared; the message is one line."""


def read_json(path: Path, *, required: bool) -> dict[str, Any]:
    """A model's JSON file as an object; {} when it is missing and not ``required``."""
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except FileNotFoundError as exc:
        if required:
            raise ModelError(f"{path} is missing") from exc
        return {}
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, dict):
        raise ModelError(f"{path} is not a JSON object")
    return value
