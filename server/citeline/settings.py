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
# - the bundled multilingual-e5-small understands Chinese, Japanese and Korean (and
#   matches questions across languages): its dense scores count for CJK text too.
#   Its cosines between unrelated texts reach about 0.8, so they are reported from a
#   floor of 0.78 (0.87 becomes 0.4, the evidence threshold); RRF k=10 with keywords
#   at 0.75 was the best fusion on CMRC 2018 trial (docs/quality.md).
E5_MODEL_RETRIEVAL = RetrievalSettings(
    rrf_k=10.0, dense_weight=1.0, keyword_weight=0.75, dense_for_cjk=True, dense_floor=0.78
)

# The bundled embedding models, by the names ``[embedding] model`` accepts.
MINILM = "all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"
BUNDLED_EMBEDDING_MODELS: dict[str, str] = {
    MINILM: MINILM,
    "minilm": MINILM,
    E5: E5,
    "e5": E5,
}


@dataclass(frozen=True)
class EmbeddingSettings:
    # "" chooses a bundled model by the folder's documents (citeline.models.choice);
    # "all-MiniLM-L6-v2" or "multilingual-e5-small" forces one; else a GGUF path
    model: str = ""
    preset: str = ""  # "e5", "nomic", "bge": sets both prefixes (e5 is implied for e5)
    query_prefix: str = ""
    document_prefix: str = ""
    max_tokens: int = 0  # 0 = the model's own context (256 for the default model)
    threads: int = 0  # 0 = all cores
    #: why a bundled model serves the folder when the folder's documents chose it
    #: (set by load_settings, never read from a file)
    chosen_by: str = field(default="", metadata={"internal": True})

    @property
    def bundled(self) -> str | None:
        """The bundled model this names (empty: MiniLM until a folder chose), or None
        for a model file of the user's."""
        if not self.model:
            return MINILM
        return BUNDLED_EMBEDDING_MODELS.get(self.model.strip())

    @property
    def reason(self) -> str:
        """Why this model serves the folder, for people."""
        if self.chosen_by:
            return self.chosen_by
        if not self.model:
            return "the default model (the documents are not in good part CJK text)"
        if self.bundled:
            return "embedding.model names it"
        return "embedding.model names this model file"

    def prefixes(self) -> tuple[str, str]:
        preset = self.preset or ("e5" if self.bundled == E5 else "")
        query, document = EMBEDDING_PRESETS.get(preset, ("", ""))
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
    fields = {f.name for f in dataclasses.fields(base) if not f.metadata.get("internal")}
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
    store = index.get("store") if isinstance(index, dict) else None
    if isinstance(index, dict) and isinstance(store, str) and store_password(store):
        # A file in the documents folder is shared (checked in): never a secret there.
        warnings.append(
            f"{path}: index.store holds a password; it is ignored (use PGPASSWORD,"
            " ~/.pgpass or a pg_service.conf service)"
        )
        index["store"] = _store_url(store, lambda key: key != "password")
    return values


def retrieval_defaults(model: str) -> RetrievalSettings:
    """The retrieval settings that suit an embedding model (``[embedding] model``)."""
    bundled = EmbeddingSettings(model=model).bundled
    if bundled == E5:
        return E5_MODEL_RETRIEVAL
    return BUNDLED_MODEL_RETRIEVAL if bundled == MINILM else OWN_MODEL_RETRIEVAL


def load_settings(docs_root: Path, *overrides: Mapping[str, Any]) -> tuple[Settings, list[str]]:
    """Defaults < citeline.toml < each override in turn.  Returns (settings, warnings).

    The defaults themselves depend on the embedding model the layers choose, so
    the layers are applied twice: once to learn the model, once over its defaults.
    When no layer names a model, the folder's documents choose a bundled one
    (:func:`citeline.models.choice.choose_embedding_model`, recorded in the index
    folder) and ``embedding.model`` names it.
    """
    warnings: list[str] = []
    layers = [read_settings_file(docs_root, warnings), *overrides]
    settings = Settings()
    for layer in layers:
        settings = merge(settings, layer, "", [])
    chosen, chosen_by = settings.embedding.model, ""
    if not chosen and not settings.index.team:
        from citeline.models.choice import choose_embedding_model

        choice = choose_embedding_model(docs_root, settings.index_dir(docs_root))
        chosen, chosen_by = choice.model, choice.reason if choice.notable else ""
    settings = Settings(retrieval=retrieval_defaults(chosen))
    for layer in layers:
        settings = merge(settings, layer, "", warnings)
    if not settings.embedding.model and chosen_by:
        # An English folder's settings stay as they were (MiniLM, the default) unless
        # the multilingual model was wanted but is unavailable: status says why.
        embedding = dataclasses.replace(
            settings.embedding, model=chosen if chosen == E5 else "", chosen_by=chosen_by
        )
        settings = dataclasses.replace(settings, embedding=embedding)
    for warning in warnings:
        log.warning("%s", warning)
    return settings, warnings
