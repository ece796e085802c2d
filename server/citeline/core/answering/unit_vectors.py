"""The embeddings of answer units, computed once per text and kept.

A unit's embedding input (``features.embedding_input``) is a deterministic
function of its passage, so its vector is addressed as a chunk's is: by the
content key of the exact text embedded (``chunking.embedding_key``).  The
scorer's ``embed_texts`` asks :class:`UnitVectors`, which answers from, in order:

1. its own memory: the newest ``capacity`` vectors it handed out (an LRU);
2. the index's kept vectors (``lookup``: ``DocumentIndex.vectors_for_keys``),
   which the index clears when the embedding model changes;
3. the embedder, once, in one batch, for the texts neither holds.

What the embedder computed, and what the index held and was used again, waits in
:meth:`UnitVectors.take_unkept` until the folder's next write keeps it in the
index (``Workspace.keep_unit_vectors``): a vector used is marked used, so pruning
(``DocumentIndex.prune_vectors``) drops only those no ask needed for a while.

One instance serves one folder's workspace, whose index and embedding model are
fixed (another model opens another workspace): its memory is never read for
another folder or model, and the index's kept vectors are cleared with a model
change (``core.index.reconcile_identity``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from citeline.core.chunking import embedding_key

Vectors = npt.NDArray[np.float32]
EmbedTexts = Callable[[Sequence[str]], Vectors]
Lookup = Callable[[list[str]], Mapping[str, Vectors]]

#: Vectors kept in memory: about 6 MB at 384 dimensions, the units of ~340 asks.
CAPACITY = 4096


class UnitVectors:
    """``embed_texts`` for the unit scorer, with the vectors of texts seen before."""

    def __init__(
        self,
        embed: EmbedTexts,
        dimension: int,
        lookup: Lookup | None = None,
        capacity: int = CAPACITY,
    ) -> None:
        self.embed = embed
        self.dimension = dimension
        self.lookup = lookup
        self.capacity = capacity
        self.embedded = 0  # texts the embedder was given, for figures and tests
        self._memory: OrderedDict[str, Vectors] = OrderedDict()
        self._unkept: OrderedDict[str, Vectors] = OrderedDict()

    def __call__(self, texts: Sequence[str]) -> Vectors:
        keys = [embedding_key(text) for text in texts]
        found: dict[str, Vectors] = {}
        for key in keys:
            vector = self._memory.get(key)
            if vector is not None:
                found[key] = vector
        wanted = [key for key in dict.fromkeys(keys) if key not in found]
        if wanted and self.lookup is not None:
            for key, vector in self.lookup(wanted).items():
                found[key] = vector
                self._push(self._unkept, key, vector)  # used again: marked used when kept
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            vectors = self.embed(list(missing.values()))
            self.embedded += len(missing)
            for key, vector in zip(missing, vectors, strict=True):
                found[key] = vector
                self._push(self._unkept, key, vector)
        for key in keys:
            self._push(self._memory, key, found[key])
        if not keys:
            return np.empty((0, self.dimension), dtype=np.float32)
        return np.stack([np.asarray(found[key], dtype=np.float32) for key in keys])

    def take_unkept(self) -> dict[str, Vectors]:
        """The vectors to keep in the index (new, or stored and used again), by content
        key; taken once."""
        out = dict(self._unkept)
        self._unkept.clear()
        return out

    def _push(self, store: OrderedDict[str, Vectors], key: str, vector: Vectors) -> None:
        store[key] = vector
        store.move_to_end(key)
        while len(store) > self.capacity:
            store.popitem(last=False)
