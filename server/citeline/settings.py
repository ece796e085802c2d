"""Typed settings with safe fallbacks.

One frozen dataclass tree with defaults.  Layers apply in order, each over the
previous: defaults < ``citeline.toml`` in the documents folder < editor or
command-line overrides.  Keys may be snake_case (TOML) or camelCase (editors).
A value of the wrong type, or an unknown key, is reported as a warning and the
previous layer's value stays: bad settings never stop Citeline.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import math
import os
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_type_hints

from citeline.core.answering.settings import ANSWER_MODES, AnswerSettings
from citeline.core.chunking import ChunkSettings
from citeline.core.files import FileRefused, read_regular_file
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
#   In a folder of both kinds of text it ranks passages in the question's language
#   first; with the language direction taken out of the query, questions across
#   languages find their passage (docs/quality.md, "Across languages: the language
#   direction").
E5_MODEL_RETRIEVAL = RetrievalSettings(
    rrf_k=10.0,
    dense_weight=1.0,
    keyword_weight=0.75,
    dense_for_cjk=True,
    dense_floor=0.78,
    language_neutral=True,
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


VECTOR_INDEXES = ("auto", "flat", "flat-fp16", "ivf-sq8", "hnsw")
STORE_SCHEMES = ("postgresql://", "postgres://")


@dataclass(frozen=True)
class IndexSettings:
    """Where a folder's index lives: its own folder (the default), or a shared team
    collection in PostgreSQL (``store`` = a ``postgresql://`` URL, ``collection`` = its
    name), which ``citeline index`` writes and every other use only reads."""

    path: str = ""  # empty = <docs>/.citeline (for a team index: the ask log only)
    max_file_mb: float = 20.0
    # The vector index: "auto" is exact (flat) below 20,000 chunks, a scan of 16-bit codes
    # with exact rescoring (flat-fp16) up to 150,000 and an inverted file over 8-bit codes
    # (ivf-sq8) above; "flat", "flat-fp16", "ivf-sq8" or "hnsw" forces one.
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


# -- validation: one rule per field ----------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """What one setting accepts.  A value outside it is one warning, and the previous
    layer's value (the default, when no other layer set it) stays.

    ``low``/``high``: the inclusive range of a number (NaN and infinities never pass);
    ``choices``: the strings a setting knows; ``check``: a last test of a value that
    passed the others, giving why it is refused and what is used instead (a model
    file that does not exist, a store URL without its driver), or None.
    """

    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    max_chars: int = 4096
    check: Callable[[Any], str | None] | None = None


def _model_file(what: str, instead: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not value:
            return None
        path = Path(value).expanduser()
        try:
            found = path.is_file()
        except (OSError, ValueError):
            found = False
        return None if found else f"{what} {value} does not exist; using {instead}"

    return check


def _store(value: Any) -> str | None:
    if not value:
        return None
    if not str(value).startswith(STORE_SCHEMES):
        return f"must be empty or a postgresql:// URL, not {_show(value)}; using the embedded index"
    if importlib.util.find_spec("psycopg") is None:
        return (
            "a team index needs the team extra (pip install 'citeline[team]');"
            " using the embedded index"
        )
    return None


THREADS = Rule(0, 256)
TOKENS = Rule(0, 32768)
SHARE = Rule(0.0, 1.0)

#: The rule of every setting that needs more than its type and "not negative"; a field
#: without a row here (a new one) gets exactly that: its type, finite, >= 0.
RULES: dict[str, Rule] = {
    "embedding.model": Rule(),  # a missing embedding model is the folder's error (below)
    "embedding.preset": Rule(choices=("", *EMBEDDING_PRESETS)),
    "embedding.query_prefix": Rule(max_chars=500),
    "embedding.document_prefix": Rule(max_chars=500),
    "embedding.max_tokens": TOKENS,
    "embedding.threads": THREADS,
    "chunking.max_cost": Rule(50, 100_000),
    "chunking.overlap_cost": Rule(0, 50_000),
    "search.top_k": Rule(1, 100),
    "retrieval.rrf_k": Rule(0.0, 10_000.0),
    "retrieval.dense_weight": Rule(0.0, 100.0),
    "retrieval.keyword_weight": Rule(0.0, 100.0),
    "retrieval.mode": Rule(choices=("hybrid", "dense", "keyword")),
    "retrieval.candidates": Rule(1, 1000),
    "reranking.model": Rule(check=_model_file("reranker", "no reranker")),
    "reranking.candidates": Rule(0, 200),
    "reranking.max_tokens": TOKENS,
    "reranking.threads": THREADS,
    "index.max_file_mb": Rule(0.001, 2048.0),
    "index.vectors": Rule(choices=VECTOR_INDEXES),
    "index.store": Rule(check=_store),
    "index.collection": Rule(max_chars=63),
    "generation.model": Rule(check=_model_file("generation model", "the bundled model")),
    "generation.context_size": Rule(256, 8192),
    "generation.threads": THREADS,
    "answer.mode": Rule(choices=ANSWER_MODES),
    "answer.candidates": Rule(1, 100),
    "answer.min_score": SHARE,
    "answer.min_keyword_score": SHARE,
    "answer.min_keyword_score_cjk": SHARE,
    "answer.max_evidence": Rule(1, 50),
    "answer.max_answer_tokens": Rule(1, 8192),
    "answer.temperature": Rule(0.0, 5.0),
    "answer.timeout_seconds": Rule(0.1, 3600.0),
    "answer.overlap": SHARE,
}

MAX_DEPTH = 16  # tables and arrays inside each other, in citeline.toml or the editor's layer
MAX_SETTINGS_BYTES = 1024 * 1024  # citeline.toml
MAX_MESSAGES_PER_SOURCE = 10  # then one line counting the rest


def rule_for(where: str, kind: Any) -> Rule:
    """The rule of the setting ``where`` (``section.field``) of type ``kind``."""
    found = RULES.get(where)
    if found is not None:
        return found
    return Rule(low=0) if kind in (int, float) else Rule()


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: Any) -> str:
    """A value for a message: short, and never the repr of a deep structure."""
    if isinstance(value, Mapping):
        return f"a table of {len(value)} keys"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} items"
    return _short(repr(value))


def validate(where: str, kind: Any, value: Any, current: Any) -> tuple[Any, str | None]:
    """``value`` for the setting ``where`` of type ``kind`` once checked against its rule:
    (the value to use, None) or (``current``, why ``value`` is refused)."""
    rule = rule_for(where, kind)
    using = f"using {_show(current)}"
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind in (int, float):
        ok = isinstance(value, kind) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind) if isinstance(kind, type) else True
    if not ok:
        name = _TYPE_NAMES.get(kind, getattr(kind, "__name__", str(kind)))
        return current, f"setting {where!r} must be {name}, got {_show(value)}; {using}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            return current, f"setting {where!r} must be a finite number, got {value}; {using}"
        if (rule.low is not None and value < rule.low) or (
            rule.high is not None and value > rule.high
        ):
            if rule.high is None:
                bounds = f"at least {rule.low:g}"
            elif rule.low is None:
                bounds = f"at most {rule.high:g}"
            else:
                bounds = f"between {rule.low:g} and {rule.high:g}"
            return current, f"setting {where!r} must be {bounds}, got {value:g}; {using}"
    if isinstance(value, str):
        if rule.choices is not None and value not in rule.choices:
            known = ", ".join(c or repr(c) for c in rule.choices)
            return current, (
                f"setting {where!r} must be one of {known}, got {_show(value)}; {using}"
            )
        if len(value) > rule.max_chars:
            return current, (
                f"setting {where!r} is {len(value)} characters, over {rule.max_chars}; {using}"
            )
    if rule.check is not None and (why := rule.check(value)) is not None:
        return current, f"setting {where!r}: {why}"
    return value, None


def merge(base: T, values: Mapping[str, Any], where: str, warnings: list[str]) -> T:
    """Return ``base`` with ``values`` applied, each checked by its :data:`RULES` row;
    problems go to ``warnings`` (one each) and leave ``base``'s value."""
    assert dataclasses.is_dataclass(base) and not isinstance(base, type)
    hints = get_type_hints(type(base))
    fields = {f.name for f in dataclasses.fields(base) if not f.metadata.get("internal")}
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = snake_case(str(raw_key))
        label = f"{where}.{key}" if where else key
        if key not in fields:
            shown = f"{where}.{raw_key}" if where else str(raw_key)
            warnings.append(f"unknown setting {_short(shown)!r} ignored")
            continue
        current = getattr(base, key)
        if dataclasses.is_dataclass(current):
            if isinstance(value, Mapping):
                changes[key] = merge(current, value, label, warnings)
            else:
                warnings.append(f"setting {label!r} must be a table, got {_show(value)}; ignored")
            continue
        checked, why = validate(label, hints[key], value, current)
        if why is not None:
            warnings.append(why)
        elif checked != current:
            changes[key] = checked
    result = dataclasses.replace(base, **changes)
    if isinstance(result, ChunkSettings) and result.overlap_cost >= result.max_cost:
        warnings.append(
            f"setting {where + '.overlap_cost'!r} must be smaller than max_cost;"
            f" using {base.overlap_cost if isinstance(base, ChunkSettings) else 0} and"
            f" {base.max_cost if isinstance(base, ChunkSettings) else 0}"
        )
        return base
    return result


def depth(value: Any, limit: int) -> int:
    """How deeply tables and arrays nest in ``value``, counted up to ``limit + 1``
    (without recursion, so no structure is too deep to measure)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if level > limit:
            return level
        stack.extend((child, level) for child in children)
    return deepest


def bounded(source: str, warnings: list[str], limit: int = MAX_MESSAGES_PER_SOURCE) -> list[str]:
    """``warnings`` of one source, each prefixed with it; past ``limit``, one line
    counting the rest (20,000 unknown keys are a few lines, not 20,000 messages)."""
    shown = [w if source in w.partition(": ")[0] else f"{source}: {w}" for w in warnings[:limit]]
    if len(warnings) > limit:
        shown.append(f"{source}: {len(warnings) - limit:,} more settings problems not shown")
    return shown


def read_settings_file(docs_root: Path, warnings: list[str]) -> Mapping[str, Any]:
    path = docs_root / SETTINGS_FILE
    if not os.path.lexists(path):
        return {}
    try:  # the way documents are read: a regular file, bounded, never a link out
        data = read_regular_file(path, MAX_SETTINGS_BYTES, root=docs_root)
        values = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (FileRefused, OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{path}: {exc}; using defaults")
        return {}
    except RecursionError:
        warnings.append(f"{path}: nested too deeply to read; using defaults")
        return {}
    if depth(values, MAX_DEPTH) > MAX_DEPTH:
        warnings.append(f"{path}: nested more than {MAX_DEPTH} levels deep; using defaults")
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


def retrieval_defaults(model: str) -> RetrievalSettings:
    """The retrieval settings that suit an embedding model (``[embedding] model``)."""
    bundled = EmbeddingSettings(model=model).bundled
    if bundled == E5:
        return E5_MODEL_RETRIEVAL
    return BUNDLED_MODEL_RETRIEVAL if bundled == MINILM else OWN_MODEL_RETRIEVAL


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


def load_settings(
    docs_root: Path,
    *overrides: Mapping[str, Any],
    sources: Sequence[str] = (),
    recorded_choice: bool = False,
) -> tuple[Settings, list[str]]:
    """Defaults < citeline.toml < each override in turn.  Returns (settings, warnings).

    ``sources`` names the overrides in the warnings ("editor settings", "command
    line"); each source says at most :data:`MAX_MESSAGES_PER_SOURCE` problems, then
    one line counting the rest.  The defaults themselves depend on the embedding model
    the layers choose, so the layers are applied twice: once to learn the model, once
    over its defaults.  When no layer names a model, the folder's documents choose a bundled one
    (:func:`citeline.models.choice.choose_embedding_model`, recorded in the index
    folder) and ``embedding.model`` names it; ``recorded_choice`` takes the recorded
    decision without reading the documents when there is one (a server starting on an
    indexed folder, which decides again if its catch-up finds files changed).
    """
    file_warnings: list[str] = []
    named = [(SETTINGS_FILE, read_settings_file(docs_root, file_warnings))]
    for n, layer in enumerate(overrides):
        named.append((sources[n] if n < len(sources) else "settings", layer))
    layers: list[tuple[str, Mapping[str, Any]]] = []
    said: dict[str, list[str]] = {SETTINGS_FILE: file_warnings}
    for source, layer in named:
        if source != SETTINGS_FILE and depth(layer, MAX_DEPTH) > MAX_DEPTH:
            said.setdefault(source, []).append(f"nested more than {MAX_DEPTH} levels deep; ignored")
            continue
        layers.append((source, layer))
    settings = Settings()
    for _, layer in layers:
        settings = merge(settings, layer, "", [])
    chosen, chosen_by = settings.embedding.model, ""
    if not chosen and not settings.index.team:
        from citeline.models.choice import choose_embedding_model

        choice = choose_embedding_model(
            docs_root, settings.index_dir(docs_root), recorded=recorded_choice
        )
        chosen, chosen_by = choice.model, choice.reason if choice.notable else ""
    settings = Settings(retrieval=retrieval_defaults(chosen))
    for source, layer in layers:
        settings = merge(settings, layer, "", said.setdefault(source, []))
    warnings = [line for source, found in said.items() for line in bounded(source, found)]
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
