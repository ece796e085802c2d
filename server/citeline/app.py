"""The composition root: the one place that picks concrete classes and wires them.

Everything else receives its collaborators through the core's protocols; only
this module knows that models run on llama.cpp, that a folder's index is the
embedded SQLite + FAISS backend (or, when ``[index] store`` names a PostgreSQL
database, a team collection there), which GGUF files are the defaults, and where a
folder's index lives.  Only ``citeline index`` and ``citeline eval`` open a team
collection for writing; everything else (the language server above all) reads it.
Models are loaded once and shared by every folder that
uses them (:class:`ModelPool`).

Each backend is imported where it is made, so a command imports what it uses: a
search never imports the generator, the reranker or a document parser.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from citeline.core.embedding import Embedder
from citeline.core.errors import BackendError
from citeline.core.generation import Generator
from citeline.core.index import DocumentIndex, IndexIdentity
from citeline.core.ingest import Ingestor
from citeline.core.reranking import Reranker
from citeline.core.retrieval import Retriever
from citeline.core.walking import DocumentFilter
from citeline.models import choice, e5, minilm, smollm
from citeline.service.errors import ServiceError
from citeline.service.workers import Worker
from citeline.service.workspace import Workspace
from citeline.settings import (
    E5,
    MINILM,
    EmbeddingSettings,
    GenerationSettings,
    IndexSettings,
    RerankingSettings,
    Settings,
)

if TYPE_CHECKING:
    from citeline.backends.postgres.index import PostgresIndex

log = logging.getLogger(__name__)


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    from citeline.backends.llama.embedder import LlamaEmbedder

    query_prefix, document_prefix = settings.prefixes()
    bundled = settings.bundled
    max_tokens: int | None
    if bundled == E5:
        path, max_tokens = e5.e5_model_path(), settings.max_tokens or e5.MAX_TOKENS
    elif bundled == MINILM:
        path = minilm.default_embedding_model_path()
        max_tokens = settings.max_tokens or minilm.MAX_TOKENS
    else:
        path, max_tokens = Path(settings.model).expanduser(), settings.max_tokens or None
    return LlamaEmbedder(
        path,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        max_tokens=max_tokens,
        n_threads=settings.threads or None,
    )


def make_generator(settings: GenerationSettings) -> Generator:
    from citeline.backends.llama.generator import LlamaGenerator

    if settings.model:
        path = Path(settings.model).expanduser()
    else:
        path = smollm.default_generator_model_path()
    return LlamaGenerator(
        path, context_size=settings.context_size, n_threads=settings.threads or None
    )


def make_reranker(settings: RerankingSettings) -> Reranker | None:
    """The configured reranker, or None: there is no default reranker."""
    if not settings.model:
        return None
    from citeline.backends.llama.reranker import LlamaReranker

    return LlamaReranker(
        Path(settings.model).expanduser(),
        max_tokens=settings.max_tokens or None,
        n_threads=settings.threads or None,
    )


def open_index(
    index_dir: Path,
    identity: IndexIdentity,
    settings: IndexSettings | None = None,
    *,
    write_collection: bool = False,
) -> DocumentIndex:
    """A folder's index: the embedded backend (SQLite + FAISS) in ``index_dir``, its
    vector index of the kind ``[index] vectors`` says (by size unless forced); or the
    team collection ``settings`` name (read-only unless ``write_collection``)."""
    if settings is not None and settings.team:
        team_index = _postgres_index_class()  # psycopg: only for teams
        return team_index(
            settings.store,
            settings.collection_name,
            identity,
            read_only=not write_collection,
            exact=settings.exact_search,
            location=settings.location(),
        )
    from citeline.backends.embedded import EmbeddedIndex
    from citeline.backends.faiss import FaissVectorIndexType

    choice = settings.vectors if settings is not None else "auto"
    return EmbeddedIndex(index_dir, identity, FaissVectorIndexType(choice))


#: What to run when the team index's driver is missing.
TEAM_EXTRA_HINT = (
    "the team index needs the PostgreSQL driver: pip install 'citeline[team]'"
    " (pipx: pipx inject citeline 'psycopg[binary]')"
)


def _postgres_index_class() -> type[PostgresIndex]:
    """The team index's class; a one-line ``ServiceError`` naming the extra to install
    when psycopg (an optional dependency) is not."""
    try:
        from citeline.backends.postgres.index import PostgresIndex
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "psycopg":
            raise
        raise ServiceError(TEAM_EXTRA_HINT) from None
    return PostgresIndex


def seed_vectors(workspace: Workspace, source: Path) -> int:
    """Copy the vectors of an embedded index (a documents folder or its index folder)
    built with the workspace's model into its team collection: the same text gives the
    same vector, so the collection's writer embeds only what the source did not have."""
    from citeline.backends.embedded import STORE_FILE
    from citeline.backends.sqlite.store import read_vectors

    team_index = _postgres_index_class()

    index = workspace.index
    if not isinstance(index, team_index) or index.read_only:
        raise ServiceError("--seed-from needs a team collection opened for writing (--store)")
    source = source.expanduser()
    database = source / STORE_FILE
    if not database.is_file():
        database = source / ".citeline" / STORE_FILE
    if not database.is_file():
        raise ServiceError(f"no Citeline index at {source} (looked for {STORE_FILE})")
    identity = index.identity
    return index.import_vectors(read_vectors(database, identity.embedder_key, identity.dimension))


K = TypeVar("K")
M = TypeVar("M")


def _embedder_key(settings: EmbeddingSettings) -> EmbeddingSettings:
    # Why a bundled model serves a folder does not change which model is loaded.
    bundled = settings.bundled
    model = "" if bundled == MINILM else bundled or settings.model
    return replace(settings, model=model, chosen_by="")


def _reranker_key(settings: RerankingSettings) -> RerankingSettings:
    # Only the model decides which reranker is loaded; candidates is retrieval's.
    return replace(settings, candidates=0)


@dataclass
class ModelPool:
    """Models loaded on first use and kept, keyed by their settings, while a workspace
    the pool opened uses them: :meth:`release_unused` drops the others (a folder's
    settings chose another model, or the folder is no longer served)."""

    embedders: dict[EmbeddingSettings, Embedder] = field(default_factory=dict)
    generators: dict[GenerationSettings, Generator] = field(default_factory=dict)
    rerankers: dict[RerankingSettings, Reranker | None] = field(default_factory=dict)
    # the workspaces it opened, not kept alive by it (each a weak reference)
    _opened: list[weakref.ref[Workspace]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def embedder(self, settings: EmbeddingSettings) -> Embedder:
        return self._loaded(self.embedders, _embedder_key(settings), make_embedder)

    def generator(self, settings: GenerationSettings) -> Generator:
        return self._loaded(self.generators, settings, make_generator)

    def reranker(self, settings: RerankingSettings) -> Reranker | None:
        def make(key: RerankingSettings) -> Reranker | None:
            try:
                return make_reranker(key)
            except BackendError as exc:  # a file that is not a reranker: search without
                log.warning("%s; searching without a reranker", exc)
                return None

        return self._loaded(self.rerankers, _reranker_key(settings), make)

    def _loaded(self, pool: dict[K, M], key: K, make: Callable[[K], M]) -> M:
        """``pool``'s model for ``key``, made (outside the lock) on first use."""
        with self._lock:
            if key in pool:
                return pool[key]
        made = make(key)
        with self._lock:
            return pool.setdefault(key, made)

    def generation_name(self, settings: GenerationSettings) -> str:
        """The generation model's file name, known without loading it."""
        if settings.model:
            return Path(settings.model).expanduser().name
        return smollm.GENERATOR_FILE_NAME

    def open_workspace(self, docs_root: Path, settings: Settings) -> Workspace:
        """A served folder's workspace: a team collection only ever read."""
        return open_workspace(docs_root, settings, self)

    def opened(self, workspace: Workspace) -> None:
        """Count ``workspace``'s models as used until it is closed (or gone)."""
        with self._lock:
            self._opened.append(weakref.ref(workspace))

    def release_unused(self) -> list[str]:
        """Drop every model no open workspace's settings use; the names dropped.

        A model is freed when the last holder lets go of it (a closed workspace, an
        ask still running on it), never while in use."""
        with self._lock:
            live = [ws for ref in self._opened if (ws := ref()) is not None and not ws.closed]
            self._opened = [weakref.ref(ws) for ws in live]
            embedders = {_embedder_key(ws.settings.embedding) for ws in live}
            generators = {ws.settings.generation for ws in live}
            rerankers = {_reranker_key(ws.settings.reranking) for ws in live}
            dropped = [
                *_drop(self.embedders, embedders),
                *_drop(self.generators, generators),
                *_drop(self.rerankers, rerankers),
            ]
        if dropped:
            log.info("released models no folder uses: %s", ", ".join(dropped))
        return dropped


def _drop(pool: dict[K, M], keep: set[K]) -> list[str]:
    """Remove from ``pool`` the models whose key is not in ``keep``; their names."""
    gone = [pool.pop(key) for key in [k for k in pool if k not in keep]]
    return [getattr(m, "name", None) or type(m).__name__ for m in gone if m is not None]


def open_workspace(
    docs_root: Path,
    settings: Settings,
    models: ModelPool | None = None,
    *,
    write_collection: bool = False,
) -> Workspace:
    """A documents folder with its index open (created if need be) and its models;
    a team collection is opened for writing only with ``write_collection``."""
    if not docs_root.is_dir():
        raise ServiceError(f"documents folder {docs_root} does not exist")
    docs_root = docs_root.resolve()
    models = models if models is not None else ModelPool()
    embedder = models.embedder(settings.embedding)
    identity = IndexIdentity(
        embedder_fingerprint=embedder.fingerprint,
        embedder_name=embedder.name,
        dimension=embedder.dimension,
        chunking=settings.chunking,
    )
    index_dir = settings.index_dir(docs_root)
    if settings.index.path:  # a place the settings chose: used only if it is an index's
        from citeline.backends.embedded import check_configured_folder

        check_configured_folder(index_dir)
    try:
        if settings.index.team:  # the folder keeps only the ask log
            index_dir.mkdir(parents=True, exist_ok=True)
            ignore = index_dir / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Citeline's ask log (the index is a team collection).\n*\n")
        index = open_index(index_dir, identity, settings.index, write_collection=write_collection)
        if not settings.index.team:
            choice.record_choice(index_dir)  # the folder's documents chose its model
    except OSError as exc:
        raise ServiceError(f"cannot open index at {index_dir}: {exc.strerror or exc}") from exc
    from citeline.backends.parsing import isolated_parse  # PDFs: a crash costs the file

    ingestor = Ingestor(
        index,
        embedder,
        settings.chunking,
        DocumentFilter(docs_root, index_dir),
        max_file_bytes=int(settings.index.max_file_mb * 1024 * 1024),
        parse=isolated_parse,
    )
    reranker = functools.partial(models.reranker, settings.reranking)  # loaded on first use
    beside = Worker("keyword")  # the keyword half of hybrid searches; stopped on close
    retriever = Retriever(
        index, embedder, settings.retrieval, reranker, settings.reranking.candidates, beside
    )
    workspace = Workspace(
        docs_root, index_dir, settings, models, embedder, index, ingestor, retriever, beside
    )
    models.opened(workspace)
    return workspace


def llama_report(embedding: EmbeddingSettings | None = None) -> dict[str, object]:
    """What ``citeline doctor`` learns of llama.cpp, run in a child process (an
    instruction this CPU lacks kills the process that meets it): the package's
    version and file, the CPU features its build uses, and one sentence embedded
    with the embedding model (its name, dimension and the seconds it took)."""
    import time

    from citeline.backends.llama.runtime import import_llama_cpp

    llama_cpp = import_llama_cpp(ServiceError, "llama.cpp")
    info = llama_cpp.llama_print_system_info()
    report: dict[str, object] = {
        "version": _distribution_version(),
        "file": str(Path(llama_cpp.llama_cpp.__file__).parent),
        "system_info": info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info),
    }
    started = time.perf_counter()
    embedder = make_embedder(embedding or EmbeddingSettings())
    vectors = embedder.embed_documents(["Citeline checks that llama.cpp runs here."])
    report["embedding"] = {
        "name": embedder.name,
        "dimension": len(vectors[0]),
        "seconds": round(time.perf_counter() - started, 2),
    }
    return report


def _distribution_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return "unknown"
