"""The :class:`~citeline.core.vectors.VectorIndex` on FAISS.

An ``IndexIDMap2`` over an exact inner-product index: vector ids are chunk ids,
so a file's chunks can be removed when it changes (a plain flat index cannot
delete, HNSW cannot remove ids at all).  Vectors are L2-normalised, so inner
product is cosine similarity.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from citeline.core.embedding import FloatMatrix
from citeline.core.vectors import IdArray


class FaissVectorIndex:
    def __init__(self, dimension: int, index: Any = None) -> None:
        self._dimension = dimension
        self._index = (
            index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        )

    @classmethod
    def empty(cls, dimension: int) -> FaissVectorIndex:
        return cls(dimension)

    @classmethod
    def load(cls, path: Path, dimension: int) -> FaissVectorIndex:
        if not path.is_file():
            raise FileNotFoundError(f"no vector index at {path}")
        try:
            loaded: Any = faiss.read_index(str(path))
        except RuntimeError as exc:  # FAISS reports a damaged file this way
            raise ValueError(f"unreadable vector index {path}: {exc}") from exc
        if loaded.d != dimension:
            raise ValueError(f"vector index {path} has dimension {loaded.d}, not {dimension}")
        return cls(dimension, loaded)

    @property
    def dimension(self) -> int:
        return self._dimension

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: IdArray, vectors: FloatMatrix) -> None:
        if len(ids):
            self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)

    def remove(self, ids: Sequence[int]) -> None:
        if ids:
            self._index.remove_ids(np.asarray(ids, dtype=np.int64))  # type: ignore[arg-type]

    def search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        if len(self) == 0 or k <= 0:
            return []
        scores, ids = self._index.search(query.reshape(1, -1).astype(np.float32), min(k, len(self)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        for chunk_id in ids:
            try:
                vector = self._index.reconstruct(chunk_id)
            except RuntimeError:  # not in the index
                continue
            out[chunk_id] = float(np.dot(vector, query.reshape(-1)))
        return out

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        faiss.write_index(self._index, str(tmp))
        os.replace(tmp, path)
