"""A documents folder's index on disk: the store, the vector index and their identity.

``<docs>/.citeline/`` (configurable) holds ``index.sqlite3`` (the source of
truth), ``vectors.faiss`` (+ ``.json`` with the generation it reflects) and a
``.gitignore`` so the folder never pollutes a repository.

The store records the embedding model fingerprint, the vector dimension and the
chunk settings that built it.  Opening with another model clears every vector
(never mix vectors from two models); opening with other chunk settings re-chunks
but keeps vectors, since equal text under the same model gives equal vectors.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citeline.core import keywords
from citeline.core.chunking import ChunkSettings
from citeline.core.store import Store
from citeline.core.vectors import VectorIndex

log = logging.getLogger(__name__)

INDEX_DIRNAME = ".citeline"


@dataclass(frozen=True)
class IndexIdentity:
    """What must match for stored vectors and chunks to be reused."""

    embedder_fingerprint: str
    embedder_name: str
    dimension: int
    chunking: ChunkSettings


class DocumentIndex:
    """Store + vector index for one documents folder.  Use from one thread."""

    def __init__(self, docs_root: Path, index_dir: Path, identity: IndexIdentity) -> None:
        self.docs_root = docs_root.resolve()
        self.index_dir = index_dir
        self.identity = identity
        index_dir.mkdir(parents=True, exist_ok=True)
        gitignore = index_dir / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# Citeline's index: rebuilt from the documents at any time.\n*\n")
        self.store = Store(index_dir / "index.sqlite3")
        self._check_identity()
        self.vectors = VectorIndex.open(self.vectors_path, self.store, identity.dimension)
        self._loaded_generation = self.store.generation

    @property
    def vectors_path(self) -> Path:
        return self.index_dir / "vectors.faiss"

    def _check_identity(self) -> None:
        store, ident = self.store, self.identity
        model = f"{ident.embedder_fingerprint}:{ident.dimension}"
        if store.get_meta("embedder") not in (None, model):
            log.info("embedding model changed: every chunk will be embedded again")
            store.clear()
        chunking = f"{ident.chunking.fingerprint()}:{keywords.VERSION}"
        if store.get_meta("chunking") not in (None, chunking):
            log.info("chunk settings changed: every document will be chunked again")
            store.forget_chunks()
        store.set_meta("embedder", model)
        store.set_meta("embedder_name", ident.embedder_name)
        store.set_meta("dimension", str(ident.dimension))
        store.set_meta("chunking", chunking)

    def refresh(self) -> None:
        """Pick up changes another process committed to the store."""
        if self.store.generation != self._loaded_generation:
            self.vectors = VectorIndex.open(self.vectors_path, self.store, self.identity.dimension)
            self._loaded_generation = self.store.generation

    def apply(self, removed: list[int], added: list[int], vectors: npt.NDArray[np.float32]) -> None:
        """Mirror a committed store change in the in-memory vector index."""
        self.vectors.remove(removed)
        self.vectors.add(np.asarray(added, dtype=np.int64), vectors)
        self._loaded_generation = self.store.generation

    def save_vectors(self) -> None:
        self.vectors.save(self.vectors_path, self.store.generation)
        self._loaded_generation = self.store.generation

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Exclusive write access across processes (a CLI run and a daemon, say)."""
        with open(self.index_dir / "lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self.refresh()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self) -> None:
        self.store.close()
