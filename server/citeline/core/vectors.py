"""The dense vector index: FAISS, keyed by chunk id, rebuildable from the store.

An ``IndexIDMap2`` over an exact inner-product index: vector ids are chunk ids,
so a file's chunks can be removed when it changes (a plain flat index cannot
delete, HNSW cannot remove ids at all).  Vectors are L2-normalised, so inner
product is cosine similarity.

The index is saved beside the store together with the store generation it
reflects.  On open, a missing, unreadable or stale file (another generation,
e.g. after a crash between the store commit and the save) is rebuilt from the
store, which always holds every vector.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from citeline.core.store import Store

log = logging.getLogger(__name__)


class VectorIndex:
    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        if len(ids):
            self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)

    def remove(self, ids: list[int]) -> None:
        if ids:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))  # type: ignore[arg-type]

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        if len(self) == 0 or k <= 0:
            return []
        scores, ids = self._index.search(query.reshape(1, -1).astype(np.float32), min(k, len(self)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]

    def similarity(self, query: npt.NDArray[np.float32], ids: list[int]) -> dict[int, float]:
        """Cosine of the query with each given chunk's stored vector."""
        out: dict[int, float] = {}
        for chunk_id in ids:
            try:
                vector = self._index.reconstruct(chunk_id)
            except RuntimeError:
                continue
            out[chunk_id] = float(np.dot(vector, query.reshape(-1)))
        return out

    def ids(self) -> set[int]:
        if len(self) == 0:
            return set()
        return {int(i) for i in faiss.vector_to_array(self._index.id_map)}

    # -- persistence ----------------------------------------------------------

    def save(self, path: Path, generation: int) -> None:
        tmp = path.with_name(path.name + ".tmp")
        faiss.write_index(self._index, str(tmp))
        os.replace(tmp, path)
        _generation_file(path).write_text(json.dumps({"generation": generation}))

    @classmethod
    def rebuild(cls, store: Store, dimension: int) -> VectorIndex:
        index = cls(dimension)
        for ids, vectors in store.iter_chunk_vectors(dimension):
            index.add(ids, vectors)
        return index

    @classmethod
    def open(cls, path: Path, store: Store, dimension: int) -> VectorIndex:
        """Load the saved index if it matches the store, else rebuild and save it."""
        try:
            saved = json.loads(_generation_file(path).read_text())["generation"]
            if saved == store.generation and path.exists():
                index = cls(dimension)
                loaded: Any = faiss.read_index(str(path))
                if loaded.d == dimension:
                    index._index = loaded
                    return index
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log.debug("vector index at %s not usable (%s); rebuilding", path, exc)
        log.info("rebuilding vector index from the store")
        index = cls.rebuild(store, dimension)
        index.save(path, store.generation)
        return index


def _generation_file(path: Path) -> Path:
    return path.with_name(path.name + ".json")
