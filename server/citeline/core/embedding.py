"""Turning text into vectors: the :class:`Embedder` protocol the core depends on.

The implementation on llama.cpp is ``citeline.backends.llama.embedder``; the
composition root (``citeline.app``) picks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]
"""float32 vectors: one per row, or a single one."""


class Embedder(Protocol):
    """Something that maps text to L2-normalised float32 vectors.

    Implementations need not be thread-safe; use each from one thread at a time.
    """

    @property
    def name(self) -> str:
        """Human-readable name of the model, e.g. its file name."""
        ...

    @property
    def fingerprint(self) -> str:
        """Changes whenever the vectors for the same text would change."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        """float32 array (len(texts), dimension) with L2-normalised rows.

        The document prefix is applied to every text.
        """
        ...

    def embed_query(self, text: str) -> FloatMatrix:
        """float32 array (dimension,), L2-normalised, with the query prefix applied."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` occupies, excluding special tokens and any prefix."""
        ...
