"""The vector index protocol: nearest chunks by cosine, keyed by chunk id.

A :class:`VectorIndex` holds one L2-normalised vector per chunk, so inner product
is cosine similarity.  Vector ids are chunk ids, and a chunk's vector can be
removed when its file changes.  The embedded index keeps one in memory as a
mirror of its store (rebuildable from it at any time) and saves it beside the
store; :class:`VectorIndexType` is how that index is made empty or loaded from
its file.

The FAISS implementation is ``citeline.backends.faiss``; another in-memory
vector library plugs in by implementing both protocols there and being named
in ``citeline.app``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from citeline.core.embedding import FloatMatrix

IdArray = npt.NDArray[np.int64]


class VectorIndex(Protocol):
    @property
    def dimension(self) -> int: ...

    def __len__(self) -> int:
        """How many vectors the index holds."""
        ...

    def add(self, ids: IdArray, vectors: FloatMatrix) -> None:
        """Add one vector per id (rows of ``vectors``); the ids are not in the index."""
        ...

    def remove(self, ids: Sequence[int]) -> None:
        """Remove the vectors of ``ids``; ids not in the index are ignored."""
        ...

    def search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        """``(id, cosine)`` of the ``k`` nearest vectors, nearest first; [] when empty."""
        ...

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of ``query`` with each given id's vector; ids not held are left out."""
        ...

    def save(self, path: Path) -> None:
        """Write the index to ``path``, atomically (a reader sees the old or the new
        index).  An implementation may keep companion files named ``<path>.*`` beside
        it (and remove those it no longer uses), and may write only what changed
        since it was loaded or last saved."""
        ...


class VectorIndexType(Protocol):
    """How vector indexes of one kind are made: empty, or from a saved file."""

    def empty(self, dimension: int) -> VectorIndex: ...

    def load(self, path: Path, dimension: int) -> VectorIndex:
        """The index saved at ``path``; OSError or ValueError if it is missing,
        unreadable or of another dimension."""
        ...
