"""The composition root: the one place that picks concrete classes and wires them.

Everything else receives its collaborators; only this module knows that models
run on llama.cpp, which GGUF files are the defaults, and where a folder's index
lives.  Models are loaded once and shared by every folder that uses them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.faiss import FaissVectorIndex
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.backends.llama.generator import LlamaGenerator
from citeline.backends.llama.reranker import LlamaReranker
from citeline.core.answering.flow import EXTRACTIVE, GENERATIVE, AskContext, ask
from citeline.core.answering.results import Answer
from citeline.core.answering.scoring import UnitScorer
from citeline.core.documents import Hit
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator
from citeline.core.index import DocumentIndex, IndexIdentity
from citeline.core.ingest import Ingestor, IngestReport, ProgressCallback
from citeline.core.records import record_ask
from citeline.core.reranking import Reranker
from citeline.core.retrieval import Retriever
from citeline.core.walking import DocumentFilter
from citeline.settings import EmbeddingSettings, GenerationSettings, RerankingSettings, Settings

log = logging.getLogger(__name__)

# sentence-transformers runs all-MiniLM-L6-v2 with a 256-token window; so do we.
DEFAULT_EMBEDDING_MAX_TOKENS = 256


class WorkspaceError(Exception):
    """A documents folder cannot be served; one line for the user."""


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    query_prefix, document_prefix = settings.prefixes()
    if settings.model:
        path, max_tokens = Path(settings.model).expanduser(), settings.max_tokens or None
    else:
        from citeline.models.minilm import default_embedding_model_path

        path = default_embedding_model_path()
        max_tokens = settings.max_tokens or DEFAULT_EMBEDDING_MAX_TOKENS
    return LlamaEmbedder(
        path,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        max_tokens=max_tokens,
        n_threads=settings.threads or None,
    )


def make_generator(settings: GenerationSettings) -> Generator:
    if settings.model:
        path = Path(settings.model).expanduser()
    else:
        from citeline.models.smollm import default_generator_model_path

        path = default_generator_model_path()
    return LlamaGenerator(
        path, context_size=settings.context_size, n_threads=settings.threads or None
    )


def make_reranker(settings: RerankingSettings) -> Reranker | None:
    """The configured reranker, or None: there is no default reranker."""
    if not settings.model:
        return None
    return LlamaReranker(
        Path(settings.model).expanduser(),
        max_tokens=settings.max_tokens or None,
        n_threads=settings.threads or None,
    )


def answer_mode(settings: Settings) -> str:
    """The answer mode to use: ``auto`` resolves by the configured generator.

    The bundled SmolLM2-135M does not follow citation instructions (measured in
    docs/quality.md), so it answers extractively; a model the user configures
    writes the answer, and every sentence of it is checked against its evidence.
    """
    mode = settings.answer.mode
    if mode in (EXTRACTIVE, GENERATIVE):
        return mode
    return GENERATIVE if settings.generation.model else EXTRACTIVE


def generation_model_name(settings: GenerationSettings) -> str:
    """The generation model's file name, known without loading it."""
    if settings.model:
        return Path(settings.model).expanduser().name
    from citeline.models.smollm import GENERATOR_FILE_NAME

    return GENERATOR_FILE_NAME


def reranker_name(settings: RerankingSettings) -> str | None:
    """The reranker's file name, or None when reranking is off."""
    return Path(settings.model).expanduser().name if settings.model else None


@dataclass
class ModelPool:
    """Models loaded on first use and kept, keyed by their settings."""

    embedders: dict[EmbeddingSettings, Embedder] = field(default_factory=dict)
    generators: dict[GenerationSettings, Generator] = field(default_factory=dict)
    rerankers: dict[RerankingSettings, Reranker | None] = field(default_factory=dict)

    def embedder(self, settings: EmbeddingSettings) -> Embedder:
        if settings not in self.embedders:
            self.embedders[settings] = make_embedder(settings)
        return self.embedders[settings]

    def generator(self, settings: GenerationSettings) -> Generator:
        if settings not in self.generators:
            self.generators[settings] = make_generator(settings)
        return self.generators[settings]

    def reranker(self, settings: RerankingSettings) -> Reranker | None:
        # Only the model decides which reranker is loaded; candidates is retrieval's.
        key = replace(settings, candidates=0)
        if key not in self.rerankers:
            self.rerankers[key] = make_reranker(key)
        return self.rerankers[key]


@dataclass
class Workspace:
    """One documents folder with its index, ready to update, search and answer."""

    docs_root: Path
    index_dir: Path
    settings: Settings
    models: ModelPool
    embedder: Embedder
    index: DocumentIndex
    ingestor: Ingestor
    retriever: Retriever

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker (loaded now if need be), or None."""
        return self.models.reranker(self.settings.reranking)

    def apply_settings(self, settings: Settings) -> None:
        """Take new settings that keep the index (same embedding, chunking, location)."""
        self.settings = settings
        self.retriever.settings = settings.retrieval
        self.retriever.reranker = functools.partial(self.models.reranker, settings.reranking)
        self.retriever.rerank_candidates = settings.reranking.candidates

    def update(
        self,
        paths: list[str] | None = None,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> IngestReport:
        return self.ingestor.update(paths, progress=progress, cancelled=cancelled)

    def generator(self) -> Generator:
        return self.models.generator(self.settings.generation)

    def ask(
        self,
        question: str,
        on_token: Callable[[str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        generator: Callable[[], Generator] | None = None,
        retrieve: Callable[[str, int], list[Hit]] | None = None,
    ) -> Answer:
        """Answer ``question``; ``retrieve`` replaces this folder's own search (the
        language server runs retrieval on the thread that owns the embedder)."""
        context = AskContext(
            retrieve=retrieve or self.retriever.search,
            scorer=UnitScorer(
                self.retriever.term_weights,
                self.retriever.unknown_terms,
                self.embedder.count_tokens,
                self.embedder.embed_documents,
                self.embedder.embed_query,
            ),
            generator=generator or self.generator,
            settings=self.settings.answer,
            mode=answer_mode(self.settings),
            dense_for_cjk=self.settings.retrieval.dense_for_cjk,
            on_token=on_token,
            cancelled=cancelled,
        )
        answer = ask(question, context)
        if self.settings.records.asks:
            models = {"embedding": self.embedder.name}
            reranker = reranker_name(self.settings.reranking)
            if reranker is not None:
                models["reranking"] = reranker
            if answer.generator_called:
                models["generation"] = (generator or self.generator)().name
            record_ask(self.index_dir, answer, models)
        return answer

    def close(self) -> None:
        self.index.close()


def open_index(index_dir: Path, identity: IndexIdentity) -> DocumentIndex:
    """A folder's index: the embedded backend (SQLite + FAISS) in ``index_dir``."""
    return EmbeddedIndex(index_dir, identity, FaissVectorIndex)


def open_workspace(
    docs_root: Path, settings: Settings, models: ModelPool | None = None
) -> Workspace:
    if not docs_root.is_dir():
        raise WorkspaceError(f"documents folder {docs_root} does not exist")
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
    try:
        index = open_index(index_dir, identity)
    except OSError as exc:
        raise WorkspaceError(f"cannot open index at {index_dir}: {exc.strerror or exc}") from exc
    ingestor = Ingestor(
        index,
        embedder,
        settings.chunking,
        DocumentFilter(docs_root, index_dir),
        max_file_bytes=int(settings.index.max_file_mb * 1024 * 1024),
    )
    reranker = functools.partial(models.reranker, settings.reranking)  # loaded on first use
    retriever = Retriever(
        index, embedder, settings.retrieval, reranker, settings.reranking.candidates
    )
    return Workspace(docs_root, index_dir, settings, models, embedder, index, ingestor, retriever)
