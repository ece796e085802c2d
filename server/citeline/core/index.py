"""A documents folder's index: what it records, what identifies it, and the
:class:`DocumentIndex` protocol that ingest and retrieval use.

An index holds every document's file record, its chunks (text and place), each
chunk's vector (content-addressed: the key is a hash of the text embedded) and
keyword terms, and answers dense (cosine), keyword (BM25) and by-id lookups.  A
file's chunks, terms and new vectors change in one transaction with its file
row.  The embedded backend (SQLite + FAISS in ``<docs>/.citeline``,
``citeline.backends.embedded``) is the default; a database server implements the
protocol whole (``citeline.backends.postgres``: a team collection that one writer
keeps up to date and many readers search, read-only).

The index records the identity that built it (:class:`IndexIdentity`).
:func:`reconcile_identity` is the one rule for a mismatch: another embedding model
clears every vector (never mix vectors from two models); other chunk settings
re-chunk but keep vectors, since equal text under the same model gives equal
vectors.  A read-only handle (a reader of a shared collection) never changes
what it finds: :func:`check_identity` refuses another embedding model instead,
naming both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from citeline.core import keywords
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.embedding import FloatMatrix
from citeline.core.errors import IndexMismatch

log = logging.getLogger(__name__)

Vector = FloatMatrix


@dataclass(frozen=True)
class IndexIdentity:
    """What must match for stored vectors and chunks to be reused."""

    embedder_fingerprint: str
    embedder_name: str
    dimension: int
    chunking: ChunkSettings

    @property
    def embedder_key(self) -> str:
        return f"{self.embedder_fingerprint}:{self.dimension}"

    @property
    def chunking_key(self) -> str:
        """Chunk settings and keyword-term version: what decides the chunks and terms."""
        return f"{self.chunking.fingerprint()}:{keywords.VERSION}"


class FileRecord(NamedTuple):
    """A document as last indexed (a named tuple: an index reads thousands at once)."""

    id: int
    path: str
    kind: str
    title: str
    content_hash: str
    size: int
    mtime_ns: int
    indexed_at: float
    error: str | None
    note: str | None = None  # what loading left out of the text (e.g. running headers)


@dataclass(frozen=True)
class NewChunk:
    chunk: Chunk
    vector_key: str
    terms: str = ""  # space-separated keyword terms


@dataclass(frozen=True, eq=False)
class FileUpdate:
    """One file's new state, as :meth:`DocumentIndex.replace_file` commits it whole:
    its record, its chunks with one vector row each (``chunk_vectors``), and the
    vectors not stored before (``new_vectors``; already stored ones may be passed
    again).  ``path`` may hold surrogate escapes (a name that is not valid UTF-8):
    it is kept as is.  ``error``: the one-line load error of a file kept without
    chunks; ``note``: what loading left out of its text."""

    path: str
    kind: str
    title: str
    content_hash: str
    size: int
    mtime_ns: int
    chunks: Sequence[NewChunk]
    chunk_vectors: FloatMatrix
    new_vectors: Mapping[str, Vector]
    error: str | None = None
    note: str | None = None

    def file_row(
        self, indexed_at: float
    ) -> tuple[str, str, str, int, int, float, str | None, str | None]:
        """The file's record after its path, as both stores' ``files`` tables hold it:
        kind, title, content_hash, size, mtime_ns, indexed_at, error, note."""
        return (
            self.kind,
            self.title,
            self.content_hash,
            self.size,
            self.mtime_ns,
            indexed_at,
            self.error,
            self.note,
        )


@dataclass(frozen=True)
class IndexCounts:
    files: int  # documents indexed without error
    chunks: int


class IndexMeta(Protocol):
    """The part of an index's store that records what built it."""

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def clear(self) -> None:
        """Forget every file, chunk and vector."""
        ...

    def forget_chunks(self) -> None:
        """Forget files and chunks but keep vectors."""
        ...


def reconcile_identity(meta: IndexMeta, identity: IndexIdentity) -> None:
    """Make the stored index fit ``identity``, then record it."""
    if meta.get_meta("embedder") not in (None, identity.embedder_key):
        log.info("embedding model changed: every chunk will be embedded again")
        meta.clear()
    if meta.get_meta("chunking") not in (None, identity.chunking_key):
        log.info("chunk settings changed: every document will be chunked again")
        meta.forget_chunks()
    meta.set_meta("embedder", identity.embedder_key)
    meta.set_meta("embedder_name", identity.embedder_name)
    meta.set_meta("dimension", str(identity.dimension))
    meta.set_meta("chunking", identity.chunking_key)


def check_identity(meta: IndexMeta, identity: IndexIdentity, where: str) -> None:
    """For a handle that may not rebuild the index: raise :class:`IndexMismatch`,
    naming both models, when the index was built by another embedding model."""
    stored = meta.get_meta("embedder")
    if stored in (None, identity.embedder_key):
        return
    name = meta.get_meta("embedder_name") or "an unknown model"
    dimension = meta.get_meta("dimension") or "?"
    raise IndexMismatch(
        f"{where} was indexed with embedding model {name} ({dimension} dimensions), but"
        f" this Citeline is configured with {identity.embedder_name}"
        f" ({identity.dimension} dimensions); configure the collection's model"
        " (embedding.model) to search it"
    )


class IndexReader(Protocol):
    """What a search reads (``core/retrieval.py``'s ``Retriever``): chunks by id, the
    dense and keyword searches and their inputs."""

    @property
    def identity(self) -> IndexIdentity: ...

    def refresh(self) -> None:
        """Pick up changes another process committed."""
        ...

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Chunk]: ...

    def dense_search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the ``k`` chunks nearest to the query vector."""
        ...

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of the query vector with each given chunk's vector."""
        ...

    def keyword_search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """(chunk id, BM25 score, higher is better) of chunks holding any of ``terms``."""
        ...

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(number of chunks, {term: chunks holding it}): BM25's IDF inputs."""
        ...

    def script_means(self) -> dict[bool, FloatMatrix]:
        """The mean vector of the chunks whose text is Chinese, Japanese or Korean
        (key True, the rule of ``scripts.is_cjk``) and of the others (False), a key
        only for a kind the index holds enough of for a mean (a few chunks of a
        sample); ``{}`` when the backend does not say.  A
        backend may estimate them from a sample and keep them while the number of
        chunks stays near the one they were computed at (a folder's language mix
        moves slowly): retrieval removes the language direction they span from a
        query (``RetrievalSettings.language_neutral``)."""
        ...


class IndexRecords(Protocol):
    """What the index records of each file and of itself: what ingest plans from and
    status shows.  The members with a body are derived from :meth:`files`; a backend
    that subclasses :class:`DocumentIndex` may keep them (or answer faster)."""

    @property
    def location(self) -> str:
        """Where the index lives, for people: a folder, a database collection (never
        with a password)."""
        ...

    def generation(self) -> int:
        """A number that grows with every committed change to chunks."""
        ...

    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        """Every document's record by path, or only those of ``paths`` that it holds."""
        ...

    def counts(self) -> IndexCounts: ...

    def content_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        """The content hash (sha256 of the file's bytes) recorded for each of ``paths``
        that is indexed without error."""
        return {p: r.content_hash for p, r in self.files(paths).items() if r.error is None}

    def file_errors(self) -> list[tuple[str, str]]:
        """(path, one-line error) of the documents that could not be loaded, by path."""
        return sorted((p, r.error) for p, r in self.files().items() if r.error is not None)

    def file_notes(self) -> list[tuple[str, str]]:
        """(path, note) of the indexed documents whose loading left text out, by path."""
        return sorted(
            (p, r.note) for p, r in self.files().items() if r.note is not None and r.error is None
        )

    def last_update(self) -> float | None:
        """When a file was last indexed (seconds since the epoch), None if never."""
        return max((r.indexed_at for r in self.files().values()), default=None)


class IndexWriter(Protocol):
    """What ingest writes, inside ``writing()``: one transaction per file."""

    def writing(self, between: Callable[[], None] | None = None) -> AbstractContextManager[None]:
        """Exclusive write access across processes; refreshes first, commits at the
        end of the block (not when it raises: what was committed file by file stays).
        While another process writes, ``between`` runs every few milliseconds (the
        daemon's searches), so waiting for the lock never holds them; a backend may
        also run it inside a long write (between slices of a big file's commit, while
        a saved index is written), where readers still see each file whole."""
        ...

    def vectors_for_keys(self, keys: Iterable[str]) -> dict[str, Vector]:
        """The stored vectors among ``keys`` (content addresses of embedded text)."""
        ...

    def add_vectors(self, vectors: Mapping[str, Vector]) -> None:
        """Keep embedded vectors now, in their own transaction, before any file uses
        them: they are content-addressed, so keeping them is always safe, and a run
        interrupted before its next file commit loses none of its embedding work."""
        ...

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size and mtime for a file whose content did not change."""
        ...

    def replace_file(self, update: FileUpdate) -> tuple[list[int], list[int]]:
        """Atomically replace a file's record and chunks with ``update``.  Returns
        (removed chunk ids, added chunk ids)."""
        ...

    def remove_files(self, paths: Iterable[str]) -> list[int]:
        """Delete files and their chunks in one transaction; the removed chunk ids."""
        ...

    def prune_vectors(self) -> int:
        """Drop vectors no chunk has used for a while; how many were dropped."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A value recorded of what built the index (None: none)."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Record a value of what built the index."""
        ...


class SharedIndex(Protocol):
    """What a team collection adds: a name, read-only readers, and news of what its
    writer (or its server) did.  The bodies are a folder's own index's answers."""

    @property
    def collection(self) -> str | None:
        """The shared collection's name, None for a folder's own index."""
        return None

    @property
    def read_only(self) -> bool:
        """True for a reader of a shared collection: ``writing()`` raises."""
        return False

    def subscribe(self, callback: Callable[[], None]) -> bool:
        """Call ``callback`` (from another thread, possibly often) when another process
        may have committed a change or the index's server was lost or came back.
        False when this index cannot tell (callers refresh on their own)."""
        return False


class DocumentIndex(IndexReader, IndexRecords, IndexWriter, SharedIndex, Protocol):
    """One documents folder's index.  Use from one thread (``subscribe``'s callback
    excepted).

    Paths are relative to the documents folder, with forward slashes; chunk ids are
    the ids every search returns.  A new backend subclasses it and writes the 19
    members without a body (mypy names the missing ones); the 7 with a body (the
    records derived from :meth:`files`, a folder's own index's team answers) it may
    keep.
    """

    def close(self) -> None: ...
