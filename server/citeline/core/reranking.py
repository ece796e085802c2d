"""Reordering the best hits: the :class:`Reranker` protocol retrieval depends on.

A reranker reads the question and one passage together and returns a relevance score;
it is slower than the embedding search but sees both texts at once, so it can reorder
the few best fused candidates.  It is optional (off unless a model is configured).
The implementation on llama.cpp is ``citeline.backends.llama.reranker``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Scores = npt.NDArray[np.float32]


class Reranker(Protocol):
    @property
    def name(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        """float32 (len(passages),): higher means more relevant to ``query``."""
        ...
