"""From a query to ranked hits.

Dense retrieval embeds the query and asks the vector index for the nearest
chunks (cosine similarity).  Chunks with identical text (the same passage
copied into two files, say) are collapsed to the best-ranked one.
"""

from __future__ import annotations

import logging

from citeline.core.documents import Hit
from citeline.core.embedding import Embedder
from citeline.core.index import DocumentIndex

log = logging.getLogger(__name__)


class Retriever:
    """Searches one index.  Use from the thread that owns the embedder."""

    def __init__(self, index: DocumentIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder

    def dense(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) for the k nearest chunks."""
        self.index.refresh()
        return self.index.vectors.search(self.embedder.embed_query(query), k)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        if not query.strip() or k <= 0:
            return []
        scored = self.dense(query, k * 2)
        chunks = self.index.store.chunks_by_id([cid for cid, _ in scored])
        hits: list[Hit] = []
        seen: set[str] = set()
        for chunk_id, score in scored:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.text in seen:
                continue
            seen.add(chunk.text)
            hits.append(Hit(chunk_id=chunk_id, rank=len(hits) + 1, score=score, chunk=chunk))
            if len(hits) == k:
                break
        return hits
