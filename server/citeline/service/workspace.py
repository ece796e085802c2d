"""One documents folder, ready to update, search, answer and report its status.

A :class:`Workspace` is what both front ends use for a folder: the command line
directly, on its one thread; the language server only on its index worker (see
``citeline.service.workers``).  It is built by the composition root
(``citeline.app.open_workspace``), which picks the concrete models and index.

:func:`answer` is the ask flow with Citeline's bookkeeping (the ask log), given
how to reach the workspace: :meth:`Workspace.ask` calls it directly, the
language server through its index worker; :func:`answer_mode` resolves ``auto``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from citeline.core.answering.settings import EXTRACTIVE, GENERATIVE
from citeline.core.documents import Hit, LoadError
from citeline.core.embedding import Embedder, FloatMatrix
from citeline.core.errors import BackendError
from citeline.core.generation import Generator
from citeline.core.index import DocumentIndex, IndexCounts
from citeline.core.ingest import (
    Between,
    Ingestor,
    IngestReport,
    Planned,
    ProgressCallback,
    content_hash,
)
from citeline.core.records import record_ask
from citeline.core.reranking import Reranker
from citeline.core.retrieval import Retriever
from citeline.service.status import FolderStatus, ModelNames
from citeline.service.workers import OnIndex, Worker
from citeline.settings import GenerationSettings, RerankingSettings, Settings

if TYPE_CHECKING:  # the answer stage is imported by the first ask, not by a search
    from citeline.core.answering.results import Answer
    from citeline.core.answering.unit_vectors import UnitVectors

log = logging.getLogger(__name__)

T = TypeVar("T")

LocalCopy = Literal["same", "differs", "missing"]
"""How the file a citation names in this folder compares with the indexed one."""


class Models(Protocol):
    """The loaded models a workspace shares with others (``citeline.app.ModelPool``)."""

    def generator(self, settings: GenerationSettings) -> Generator: ...

    def reranker(self, settings: RerankingSettings) -> Reranker | None: ...

    def generation_name(self, settings: GenerationSettings) -> str: ...


class Backends(Models, Protocol):
    """What the service needs from the composition root: workspaces and models."""

    def open_workspace(self, docs_root: Path, settings: Settings) -> Workspace: ...

    def release_unused(self) -> list[str]:
        """Drop the loaded models no open workspace uses any more; their names."""
        ...


def reranker_name(settings: RerankingSettings) -> str | None:
    """The reranker's file name, or None when reranking is off."""
    return Path(settings.model).expanduser().name if settings.model else None


@dataclass
class Workspace:
    """A documents folder with its index.  Use from one thread at a time."""

    docs_root: Path
    index_dir: Path  # the folder's own index folder (the ask log lives there)
    settings: Settings
    models: Models
    embedder: Embedder
    index: DocumentIndex
    ingestor: Ingestor
    retriever: Retriever
    beside: Worker | None = None  # the thread hybrid searches' keyword half runs on
    # path -> (size, mtime_ns, sha256) of local files already hashed
    _local_hashes: dict[str, tuple[int, int, str]] = field(default_factory=dict, repr=False)
    _unit_vectors: UnitVectors | None = field(default=None, repr=False)
    closed: bool = field(default=False, repr=False)  # its models no longer count as used

    @property
    def read_only(self) -> bool:
        """A reader of a team collection: it never indexes its folder, only refreshes."""
        return self.index.read_only

    @property
    def unit_vectors(self) -> UnitVectors:
        """The answer units' embeddings for this folder's index (made on first use)."""
        if self._unit_vectors is None:
            from citeline.core.answering.unit_vectors import UnitVectors

            self._unit_vectors = UnitVectors(
                self.embedder.embed_documents,
                self.embedder.dimension,
                lookup=self.index.vectors_for_keys,
            )
        return self._unit_vectors

    def keep_unit_vectors(self, between: Between | None = None) -> None:
        """Keep the unit vectors computed or used since the last time in the index
        (content-addressed, so always safe); a reader of a team collection keeps none.
        Derived data: when they cannot be written, they are computed again later."""
        if self._unit_vectors is None or self.read_only:
            return
        vectors = self._unit_vectors.take_unkept()
        if not vectors:
            return
        try:
            with self.index.writing(between):
                self.index.add_vectors(vectors)
        except _Busy:
            log.info("answer unit vectors not kept: another process is writing the index")
        except (BackendError, OSError) as exc:
            log.warning("answer unit vectors not kept in the index: %s", exc)

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
        between: Between | None = None,
        planned: Planned | None = None,
    ) -> IngestReport:
        """Bring ``paths`` (None: the whole folder) up to date with the disk; ``between``
        is called between steps (files read, model calls), ``planned`` with the number
        of files to index or remove once that is known.  A reader of a team
        collection only picks up what its writer committed."""
        if self.read_only:
            started = time.perf_counter()
            self.index.refresh()
            report = self.ingestor.report()
            report.seconds = time.perf_counter() - started
            return report
        report = self.ingestor.update(
            paths, progress=progress, cancelled=cancelled, between=between, planned=planned
        )
        self.keep_unit_vectors(between)
        return report

    def local_copies(self, paths: Iterable[str]) -> dict[str, LocalCopy]:
        """For each path (relative to the folder): is the file here the one the index
        holds (same content hash)?  A citation jumps to its lines only when it is."""
        wanted = list(dict.fromkeys(paths))
        indexed = self.index.content_hashes(wanted)
        limit = self.ingestor.max_file_bytes
        out: dict[str, LocalCopy] = {}
        for rel in wanted:
            path = self.docs_root / rel
            try:
                st = path.stat()
                known = self._local_hashes.get(rel)
                if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
                    digest = known[2]
                else:
                    digest = content_hash(path, limit, root=self.docs_root)
                    self._local_hashes[rel] = (st.st_size, st.st_mtime_ns, digest)
            except (OSError, LoadError):  # gone, or not a file Citeline reads
                out[rel] = "missing"
                continue
            out[rel] = "same" if indexed.get(rel) == digest else "differs"
        return out

    def search(
        self, query: str, k: int | None = None, *, mode: str | None = None, rerank: bool = True
    ) -> list[Hit]:
        """The best ``k`` hits (default: the ``search.top_k`` setting)."""
        k = k if k is not None else self.settings.search.top_k
        return self.retriever.search(query, k, mode=mode, rerank=rerank)

    def ask(
        self,
        question: str,
        on_token: Callable[[str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        generator: Callable[[], Generator] | None = None,
    ) -> Answer:
        """Answer ``question`` from this folder, all on the calling thread; ``generator``
        replaces the configured generation model."""
        return answer(
            question,
            self.settings,
            workspace=lambda: self,
            on_index=_now,
            generator=generator or self.generator,
            index_dir=self.index_dir,
            on_token=on_token,
            cancelled=cancelled,
        )

    def generator(self) -> Generator:
        return self.models.generator(self.settings.generation)

    def counts(self) -> IndexCounts:
        return self.index.counts()

    def status(self) -> FolderStatus:
        """What the index holds now, and what built it."""
        counts = self.index.counts()
        return FolderStatus(
            docs=self.docs_root,
            index=self.index.location,
            files=counts.files,
            chunks=counts.chunks,
            errors=tuple(self.index.file_errors()),
            notes=tuple(self.index.file_notes()),
            models=ModelNames(
                embedding=self.embedder.name,
                generation=self.models.generation_name(self.settings.generation),
                reranking=reranker_name(self.settings.reranking),
                embedding_reason=self.settings.embedding.reason,
            ),
            dimension=self.embedder.dimension,
            chunking=self.settings.chunking.fingerprint(),
            last_update=self.index.last_update(),
            collection=self.index.collection,
            generation=self.index.generation(),
            read_only=self.read_only,
        )

    def close(self) -> None:
        self.closed = True
        self.keep_unit_vectors(_give_up)  # a closing command never waits for the lock
        if self.beside is not None:
            self.beside.stop(5)
        self.index.close()


class _Busy(Exception):
    """Another process holds the index's write lock."""


def _give_up() -> None:
    """A ``between`` that stops waiting for another process's write lock."""
    raise _Busy


def cited_passages(result: Answer) -> dict[int, str]:
    """The text of each piece of evidence, by its ``[n]``: what a citation shows when
    the reader's own copy of its file differs from the indexed one."""
    return {e.n: e.hit.chunk.text for e in result.evidence}


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


def answer(
    question: str,
    settings: Settings,
    *,
    workspace: Callable[[], Workspace],
    on_index: OnIndex,
    generator: Callable[[], Generator],
    index_dir: Path,
    on_token: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Answer:
    """The ask flow for a folder, recorded in its ask log.

    Everything that touches the folder's workspace (retrieval, the unit scorer's
    term weights and embeddings) goes through ``on_index``: the language server's
    index worker (``Workers.generate``), or a direct call on the command line.
    ``generator`` is called only when an answer is written: a refusal or an
    extractive answer never loads the generation model.
    """

    from citeline.core.answering.fitted import cjk_models
    from citeline.core.answering.flow import AskContext, ask
    from citeline.core.answering.scoring import UnitScorer

    side = IndexSide(workspace, on_index)
    context = AskContext(
        retrieve=side.search,
        scorer=UnitScorer(
            side.term_weights,
            side.unknown_terms,
            side.count_tokens,
            side.embed_units,
            side.embed_query,
            cjk=cjk_models(settings.embedding.bundled),
        ),
        generator=generator,
        settings=settings.answer,
        mode=answer_mode(settings),
        dense_for_cjk=settings.retrieval.dense_for_cjk,
        on_token=on_token,
        cancelled=cancelled,
    )
    result = ask(question, context)
    if settings.records.asks:
        models = {"embedding": side.embedder_name()}
        reranker = reranker_name(settings.reranking)
        if reranker is not None:
            models["reranking"] = reranker
        if result.generator_called:
            models["generation"] = generator().name
        paths = sorted({c.path for c in result.citations} | {h.chunk.path for h in result.hits})
        hashes = side.content_hashes(paths)
        record_ask(index_dir, result, models, hashes)
    return result


class IndexSide:
    """A folder's workspace as an ask reaches it: the one adapter between the answer
    stage and the index.  Each method runs on the index worker through ``on_index``
    (the language server's ``Workers.generate``; a direct call on the command line)
    and returns its result typed; the ask flow and the answer scorer reach the
    workspace through nothing else."""

    def __init__(self, workspace: Callable[[], Workspace], on_index: OnIndex) -> None:
        self._workspace = workspace
        self._on_index = on_index

    def _run(self, fn: Callable[[Workspace], T]) -> T:
        return self._on_index(lambda: fn(self._workspace()))

    def search(self, query: str, k: int) -> list[Hit]:
        return self._run(lambda ws: ws.search(query, k))

    def term_weights(self, terms: Sequence[str]) -> dict[str, float]:
        return self._run(lambda ws: ws.retriever.term_weights(terms))

    def unknown_terms(self, terms: Sequence[str]) -> set[str]:
        return self._run(lambda ws: ws.retriever.unknown_terms(terms))

    def count_tokens(self, text: str) -> int:
        return self._run(lambda ws: ws.embedder.count_tokens(text))

    def embed_units(self, texts: Sequence[str]) -> FloatMatrix:
        """The answer units' vectors (the workspace's memory, the index, or embedded)."""
        return self._run(lambda ws: ws.unit_vectors(texts))

    def embed_query(self, query: str) -> FloatMatrix:
        return self._run(lambda ws: ws.retriever.query_vector(query))

    def embedder_name(self) -> str:
        return self._run(lambda ws: ws.embedder.name)

    def content_hashes(self, paths: Sequence[str]) -> dict[str, str]:
        return self._run(lambda ws: ws.index.content_hashes(paths))


def _now(fn: Callable[[], T]) -> T:
    """Call ``fn`` here: a workspace used from the calling thread."""
    return fn()
