"""Typed settings with safe fallbacks.

One frozen dataclass tree with defaults.  Layers apply in order, each over the
previous: defaults < ``citeline.toml`` in the documents folder < editor or
command-line overrides.  Keys may be snake_case (TOML) or camelCase (editors).
A value of the wrong type, or an unknown key, is reported as a warning and the
previous layer's value stays: bad settings never stop Citeline.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

from citeline.core.answering.settings import ANSWER_MODES, AnswerSettings
from citeline.core.chunking import ChunkSettings
from citeline.core.retrieval import RetrievalSettings

log = logging.getLogger(__name__)

SETTINGS_FILE = "citeline.toml"

# Query/document prefixes that common embedding model families were trained with.
EMBEDDING_PRESETS: dict[str, tuple[str, str]] = {
    "none": ("", ""),
    "e5": ("query: ", "passage: "),
    "nomic": ("search_query: ", "search_document: "),
    "bge": ("Represent this sentence for searching relevant passages: ", ""),
}


# Retrieval defaults follow the embedding model (measured in docs/quality.md):
# - the bundled all-MiniLM-L6-v2 is English-only and weaker than BM25 on its own, so
#   keyword and dense count equally, and Chinese/Japanese/Korean questions use
#   keyword search alone (MiniLM maps CJK text to near-identical vectors);
# - a model the user brings is presumed stronger and multilingual (bge, e5, nomic,
#   Qwen3-Embedding…): dense leads and keywords weigh half, as equal-weight fusion
#   is known to lose to a strong dense model alone (Pyserini, BEIR FiQA).
BUNDLED_MODEL_RETRIEVAL = RetrievalSettings(
    rrf_k=10.0, dense_weight=1.0, keyword_weight=1.0, dense_for_cjk=False
)
OWN_MODEL_RETRIEVAL = RetrievalSettings(
    rrf_k=60.0, dense_weight=1.0, keyword_weight=0.5, dense_for_cjk=True
)


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str = ""  # path to a GGUF embedding model; empty = bundled all-MiniLM-L6-v2
    preset: str = ""  # "e5", "nomic", "bge": sets both prefixes
    query_prefix: str = ""
    document_prefix: str = ""
    max_tokens: int = 0  # 0 = the model's own context (256 for the default model)
    threads: int = 0  # 0 = all cores

    def prefixes(self) -> tuple[str, str]:
        query, document = EMBEDDING_PRESETS.get(self.preset, ("", ""))
        return (self.query_prefix or query, self.document_prefix or document)


@dataclass(frozen=True)
class GenerationSettings:
    model: str = ""  # path to a GGUF chat model; empty = bundled SmolLM2-135M-Instruct
    context_size: int = 2048
    threads: int = 0  # 0 = all cores


@dataclass(frozen=True)
class RerankingSettings:
    model: str = ""  # path to a GGUF reranker (rank pooling); empty = no reranking
    candidates: int = 10  # best hits reordered by the reranker (hover skips it)
    max_tokens: int = 0  # 0 = 512 (question + passage), or less if the model is shorter
    threads: int = 0  # 0 = all cores


@dataclass(frozen=True)
class SearchSettings:
    top_k: int = 5


@dataclass(frozen=True)
class RecordSettings:
    asks: bool = True  # one JSON line per ask in <index>/asks.jsonl


VECTOR_INDEXES = ("auto", "flat", "ivf-sq8", "hnsw")
STORE_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class IndexSettings:
    """Where a folder's index lives: its own folder (the default), or a shared team
    collection in PostgreSQL (``store`` = a ``postgresql://`` URL, ``collection`` = its
    name), which ``citeline index`` writes and every other use only reads."""

    path: str = ""  # empty = <docs>/.citeline (for a team index: the ask log only)
    max_file_mb: float = 20.0
    # The vector index: "auto" is exact (flat) up to 150,000 chunks and an inverted file
    # over 8-bit codes (ivf-sq8) above; "flat", "ivf-sq8" or "hnsw" forces one.
    vectors: str = "auto"
    store: str = ""  # empty = the embedded index; "postgresql://…" = a team collection
    collection: str = ""  # the team collection's name; empty = "default"
    exact_search: bool = False  # team index: exact vector search instead of HNSW

    @property
    def team(self) -> bool:
        return bool(self.store)

    @property
    def collection_name(self) -> str:
        return self.collection or "default"

    def location(self) -> str:
        """The team collection, for people: the URL without secrets, then ``#name``."""
        return f"{redacted_store(self.store)}#{self.collection_name}"


def store_password(url: str) -> bool:
    """Whether a store URL carries a password (in its user part or its parameters)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parts.query)
    return bool(parts.password) or "password" in query


def redacted_store(url: str) -> str:
    """A store URL without its password or any parameter but where the server is."""
    return _store_url(url, lambda key: key in ("host", "port", "service", "dbname"), "postgresql")


def _store_url(url: str, keep: Callable[[str], bool], scheme: str | None = None) -> str:
    """``url`` rebuilt without its password, with the query parameters ``keep`` keeps."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if keep(k)]
    return urllib.parse.urlunsplit(
        (scheme or parts.scheme, netloc, parts.path, urllib.parse.urlencode(query, safe="/"), "")
    )


@dataclass(frozen=True)
class Settings:
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    chunking: ChunkSettings = field(default_factory=ChunkSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    retrieval: RetrievalSettings = BUNDLED_MODEL_RETRIEVAL  # follows the model: load_settings
    reranking: RerankingSettings = field(default_factory=RerankingSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    records: RecordSettings = field(default_factory=RecordSettings)

    def index_dir(self, docs_root: Path) -> Path:
        if self.index.path:
            path = Path(self.index.path).expanduser()
            return path if path.is_absolute() else docs_root / path
        return docs_root / ".citeline"


T = TypeVar("T")


def snake_case(key: str) -> str:
    """``maxCost`` -> ``max_cost``: editors send camelCase, TOML has snake_case."""
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def merge(base: T, values: Mapping[str, Any], where: str, warnings: list[str]) -> T:
    """Return ``base`` with ``values`` applied; problems go to ``warnings``."""
    assert dataclasses.is_dataclass(base) and not isinstance(base, type)
    hints = get_type_hints(type(base))
    fields = {f.name for f in dataclasses.fields(base)}
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = snake_case(raw_key)
        label = f"{where}.{raw_key}" if where else raw_key
        if key not in fields:
            warnings.append(f"unknown setting {label!r} ignored")
            continue
        current = getattr(base, key)
        if dataclasses.is_dataclass(current):
            if isinstance(value, Mapping):
                changes[key] = merge(current, value, label, warnings)
            else:
                warnings.append(f"setting {label!r} must be a table; ignored")
            continue
        expected = hints[key]
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if expected in (int, float) and isinstance(value, bool):
            ok = False
        else:
            ok = isinstance(value, expected) if isinstance(expected, type) else True
        if not ok:
            warnings.append(
                f"setting {label!r} must be {getattr(expected, '__name__', expected)},"
                f" got {value!r}; using {current!r}"
            )
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            warnings.append(f"setting {label!r} must not be negative; using {current!r}")
            continue
        changes[key] = value
    result = dataclasses.replace(base, **changes)
    if isinstance(result, EmbeddingSettings) and result.preset not in ("", *EMBEDDING_PRESETS):
        warnings.append(
            f"unknown embedding preset {result.preset!r} (known: {', '.join(EMBEDDING_PRESETS)})"
        )
        result = dataclasses.replace(result, preset="")
    if (
        isinstance(result, AnswerSettings)
        and isinstance(base, AnswerSettings)
        and result.mode not in ANSWER_MODES
    ):
        warnings.append(
            f"unknown answer mode {result.mode!r} (known: {', '.join(ANSWER_MODES)});"
            f" using {base.mode!r}"
        )
        result = dataclasses.replace(result, mode=base.mode)
    if isinstance(result, IndexSettings) and result.vectors not in VECTOR_INDEXES:
        warnings.append(
            f"unknown vector index {result.vectors!r} (known: {', '.join(VECTOR_INDEXES)});"
            f" using {getattr(base, 'vectors', 'auto')!r}"
        )
        result = dataclasses.replace(result, vectors=getattr(base, "vectors", "auto"))
    if (
        isinstance(result, IndexSettings)
        and isinstance(base, IndexSettings)
        and result.store
        and not result.store.startswith(STORE_SCHEMES)
    ):
        warnings.append(
            f"index.store must be empty or a postgresql:// URL, not {result.store!r};"
            f" using {base.store or 'the embedded index'!r}"
        )
        result = dataclasses.replace(result, store=base.store)
    if isinstance(result, ChunkSettings) and result.overlap_cost >= result.max_cost:
        warnings.append("chunking.overlap_cost must be smaller than max_cost; using defaults")
        return base
    return result


def read_settings_file(docs_root: Path, warnings: list[str]) -> Mapping[str, Any]:
    path = docs_root / SETTINGS_FILE
    if not path.is_file():
        return {}
    try:
        values = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{path}: {exc}; using defaults")
        return {}
    index = values.get("index")
    confine_index_path(docs_root, index, warnings)
    store = index.get("store") if isinstance(index, dict) else None
    if isinstance(index, dict) and isinstance(store, str) and store_password(store):
        # A file in the documents folder is shared (checked in): never a secret there.
        warnings.append(
            f"{path}: index.store holds a password; it is ignored (use PGPASSWORD,"
            " ~/.pgpass or a pg_service.conf service)"
        )
        index["store"] = _store_url(store, lambda key: key != "password")
    return values


def confine_index_path(docs_root: Path, index: object, warnings: list[str]) -> None:
    """Drop an ``[index] path`` of the folder's own ``citeline.toml`` that leads out of
    the folder (``~``, an absolute path, ``..``, a symlink out) or is the folder itself,
    saying why.  A file in the folder may be anyone's (a cloned repository): it never
    makes Citeline write, move or rename anything outside it.  The user's own settings
    (the editor's, the command line's) may put the index anywhere."""
    if not isinstance(index, dict) or not isinstance(index.get("path"), str):
        return
    raw: str = index["path"]
    if not raw or index_path_inside(docs_root, raw):
        return
    del index["path"]
    warnings.append(
        f"{SETTINGS_FILE}: [index] path = {raw!r} is outside the documents folder; refused"
        " (a file in the folder may not place the index elsewhere: set index.path in your"
        " own editor settings for that); using .citeline"
    )


def index_path_inside(docs_root: Path, raw: str) -> bool:
    """Whether ``raw`` (as a folder's settings file gives it) names a place strictly
    inside ``docs_root`` once ``~``, ``..`` and symlinks are resolved."""
    if raw.startswith("~"):
        return False
    path = Path(raw)
    if path.is_absolute():
        return False
    try:
        real_root = Path(os.path.realpath(docs_root))
        real = Path(os.path.realpath(docs_root / path))
    except (OSError, ValueError):
        return False
    return real_root in real.parents


def load_settings(docs_root: Path, *overrides: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """Defaults < citeline.toml < each override in turn.  Returns (settings, warnings).

    The defaults themselves depend on the embedding model the layers choose, so
    the layers are applied twice: once to learn the model, once over its defaults.
    """
    warnings: list[str] = []
    layers = [read_settings_file(docs_root, warnings), *overrides]
    settings = Settings()
    for layer in layers:
        settings = merge(settings, layer, "", [])
    own_model = bool(settings.embedding.model)
    settings = Settings(retrieval=OWN_MODEL_RETRIEVAL if own_model else BUNDLED_MODEL_RETRIEVAL)
    for layer in layers:
        settings = merge(settings, layer, "", warnings)
    for warning in warnings:
        log.warning("%s", warning)
    return settings, warnings
