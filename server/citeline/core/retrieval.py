"""From a query to ranked hits: dense, keyword (BM25) and their fusion.

- Dense: the query embedding's nearest chunks in the index (cosine).
- Keyword: the index's BM25, with the same term analysis as the documents
  (stemmed English, exact identifiers, CJK bigrams).
- Hybrid: weighted reciprocal rank fusion of the two lists,
  ``score = w_dense / (k + rank_dense) + w_keyword / (k + rank_keyword)``.

With a reranker (optional), the best ``rerank_candidates`` hits of any mode are
scored by it and reordered; the rest follow in their original order.

An embedding model trained on English maps Chinese, Japanese and Korean text to
near-identical vectors; with ``dense_for_cjk`` off, questions in those languages
use keyword search alone (and their dense scores are not evidence).

Every hit carries both component scores when known (a chunk found by only one
method gets the other's score computed for it), so the answer stage can decide
whether the documents hold an answer from absolute evidence, not from ranks.
Chunks with identical text are collapsed to the best-ranked one.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeVar

import numpy as np

from citeline.core import keywords
from citeline.core.chunking import embedding_text
from citeline.core.documents import Hit
from citeline.core.embedding import Embedder
from citeline.core.index import IndexReader
from citeline.core.reranking import Reranker
from citeline.core.scripts import is_cjk, is_cjk_question

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "dense", "keyword"]

#: Query vectors kept by query text, newest first out last: a hover over the same
#: sentence, a search typed again, an ask that has just searched its question, and an
#: editor polling one query while a save is indexed embed it once (one query's vector
#: is a function of its text: the same model, one sequence, one decode).
QUERY_VECTORS_KEPT = 64


@dataclass(frozen=True)
class RetrievalSettings:
    """How hits are found and fused.  The fusion's values depend on the embedding
    model, so they have no defaults here: ``citeline.settings`` defines them once,
    for the bundled model and for a model the user brings."""

    rrf_k: float
    dense_weight: float
    keyword_weight: float
    dense_for_cjk: bool  # the embedder understands Chinese/Japanese/Korean
    mode: str = "hybrid"  # "hybrid", "dense" or "keyword"
    candidates: int = 50  # taken from each method before fusion
    #: Hits report a cosine ``c`` as ``(c - dense_floor) / (1 - dense_floor)``: a model
    #: whose unrelated texts already reach a high cosine (multilingual-e5-small:
    #: about 0.8) is put on the scale the evidence thresholds were fitted on.
    dense_floor: float = 0.0
    #: Rank dense hits with the query's component along the folder's language
    #: direction (the mean CJK chunk minus the mean other chunk) removed: a
    #: multilingual model ranks passages in the question's own language above the
    #: other language's answer; without that component, across languages ranks by
    #: meaning (a folder with one kind of text has no direction: nothing changes).
    #: Hits keep the cosine of the query as embedded.
    language_neutral: bool = False

    def calibrated(self, cosine: float) -> float:
        """A cosine on the scale hits report (the identity when ``dense_floor`` is 0)."""
        floor = self.dense_floor
        return cosine if floor == 0.0 else (cosine - floor) / (1.0 - floor)


T = TypeVar("T")


class Beside(Protocol):
    """Runs a function on another thread while the caller goes on: a hybrid search's
    keyword half beside its query's embedding.  The thread is the service's
    (``service/workers.py``'s ``Worker``, one per workspace); the core starts none."""

    def submit(self, fn: Callable[[], T]) -> Future[T]: ...


def rrf(
    ranked: Sequence[Sequence[int]], weights: Sequence[float], k: float
) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of ranked id lists, best first."""
    scores: dict[int, float] = {}
    for ids, weight in zip(ranked, weights, strict=True):
        for rank, chunk_id in enumerate(ids, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


class Retriever:
    """Searches one index.  Use from the thread that owns the embedder."""

    def __init__(
        self,
        index: IndexReader,
        embedder: Embedder,
        settings: RetrievalSettings,
        reranker: Callable[[], Reranker | None] | None = None,
        rerank_candidates: int = 10,
        beside: Beside | None = None,
    ) -> None:
        """``reranker`` gives the reranker (or None) when a search first needs it, so a
        reranker that cannot load fails searches, not the index.  With ``beside``, a
        hybrid search's keyword half runs there while the query is embedded (the
        embedding releases the GIL); without, one after the other."""
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.reranker = reranker
        self.rerank_candidates = rerank_candidates
        self.beside = beside
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    # -- the two methods ---------------------------------------------------------

    def dense(self, query: str, k: int) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """The query vector and (chunk id, cosine) for the k nearest chunks (with
        ``language_neutral``, nearest once the language direction is removed)."""
        vector = self.query_vector(query)
        direction = self.language_direction() if self.settings.language_neutral else None
        if direction is None:
            return vector, self.index.dense_search(vector, k)
        neutral = vector - np.float32(vector @ direction) * direction
        ranked = [cid for cid, _ in self.index.dense_search(neutral, k)]
        cosines = self.index.similarity(vector, ranked)
        return vector, [(cid, cosines[cid]) for cid in ranked if cid in cosines]

    def language_direction(self) -> np.ndarray | None:
        """The unit vector from the index's mean other chunk to its mean CJK chunk, or
        None when it does not hold both kinds."""
        means = self.index.script_means()
        if True not in means or False not in means:
            return None
        direction = (means[True] - means[False]).astype(np.float32)
        norm = float(np.linalg.norm(direction))
        return direction / np.float32(norm) if norm > 1e-6 else None

    def query_vector(self, query: str) -> np.ndarray:
        """The query's embedding, embedded once while it is among the last
        :data:`QUERY_VECTORS_KEPT` queries (an ask scores its units against the question
        it has just searched)."""
        kept = self._query_vectors
        vector = kept.get(query)
        if vector is None:
            vector = self.embedder.embed_query(query)
            vector.setflags(write=False)  # shared by every search of this text
            kept[query] = vector
            if len(kept) > QUERY_VECTORS_KEPT:
                kept.popitem(last=False)
        else:
            kept.move_to_end(query)
        return vector

    def keyword(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, normalised BM25) for the k best keyword matches."""
        terms = keywords.query_terms(query)
        if not terms:
            return []
        norm = sum(self.term_weights(terms).values())
        return [(cid, score / norm) for cid, score in self.index.keyword_search(terms, k)]

    def term_weights(self, terms: Sequence[str]) -> dict[str, float]:
        """Each keyword term's IDF in this index: rare terms weigh more."""
        total, frequencies = self.index.document_frequencies(terms)
        return {t: keywords.bm25_idf(total, frequencies.get(t, 0)) for t in terms}

    def unknown_terms(self, terms: Sequence[str]) -> set[str]:
        """The terms no chunk of this index contains."""
        _, frequencies = self.index.document_frequencies(terms)
        return {t for t in terms if not frequencies.get(t)}

    # -- search ------------------------------------------------------------------

    def search(
        self, query: str, k: int = 5, mode: str | None = None, rerank: bool = True
    ) -> list[Hit]:
        """The ``k`` best hits; ``rerank=False`` skips a configured reranker."""
        if not query.strip() or k <= 0:
            return []
        self.index.refresh()  # what another process committed
        load = self.reranker if rerank and self.rerank_candidates > 0 else None
        reranker = load() if load is not None else None
        depth = max(k, self.rerank_candidates) if reranker else k
        settings = self.settings
        mode = mode or settings.mode
        if mode == "hybrid" and not settings.dense_for_cjk and is_cjk_question(query):
            mode = "keyword"
        pool = max(settings.candidates, 2 * depth)
        dense_scores: dict[int, float] = {}
        keyword_scores: dict[int, float] = {}
        ranked: list[list[int]] = []
        weights: list[float] = []
        vector = None
        # The keyword search runs beside the query's embedding (a model call that
        # releases the GIL): a hybrid search costs the longer of the two, not the sum.
        beside: Future[list[tuple[int, float]]] | None = None
        if mode == "hybrid" and self.beside is not None:
            beside = self.beside.submit(lambda: self.keyword(query, pool))
        if mode in ("hybrid", "dense"):
            try:  # (the keyword search beside it, when there is a thread for it)
                vector, dense_list = self.dense(query, pool)
            finally:
                if beside is not None:
                    beside.exception()  # waits: nothing runs past this search
            dense_scores = dict(dense_list)
            ranked.append([cid for cid, _ in dense_list])
            weights.append(settings.dense_weight)
        if mode in ("hybrid", "keyword"):
            keyword_list = beside.result() if beside is not None else self.keyword(query, pool)
            keyword_scores = dict(keyword_list)
            ranked.append([cid for cid, _ in keyword_list])
            weights.append(settings.keyword_weight)
        if mode == "hybrid":
            fused = rrf(ranked, weights, settings.rrf_k)
        elif mode == "dense":
            fused = [(cid, settings.calibrated(score)) for cid, score in dense_scores.items()]
        elif mode == "keyword":
            fused = list(keyword_scores.items())
        else:
            raise ValueError(f"unknown retrieval mode {mode!r}")
        hits = self._hits(fused, depth, vector, dense_scores, keyword_scores)
        if reranker is not None:
            hits = self._rerank(reranker, query, hits)
        return hits[:k]

    def _rerank(self, reranker: Reranker, query: str, hits: list[Hit]) -> list[Hit]:
        """The first ``rerank_candidates`` hits in the reranker's order, then the rest."""
        head, tail = hits[: self.rerank_candidates], hits[self.rerank_candidates :]
        chunking = self.index.identity.chunking
        scores = reranker.score(query, [embedding_text(hit.chunk, chunking) for hit in head])
        order = sorted(range(len(head)), key=lambda i: (-float(scores[i]), i))
        reordered = [replace(head[i], rerank=float(scores[i])) for i in order] + tail
        return [replace(hit, rank=rank) for rank, hit in enumerate(reordered, start=1)]

    def _hits(
        self,
        fused: list[tuple[int, float]],
        k: int,
        vector: np.ndarray | None,
        dense_scores: dict[int, float],
        keyword_scores: dict[int, float],
    ) -> list[Hit]:
        head = fused[: 2 * k]
        chunks = self.index.chunks_by_id([cid for cid, _ in head])
        if vector is not None:  # cosine for chunks found by keywords only
            missing = [cid for cid, _ in head if cid not in dense_scores and cid in chunks]
            dense_scores.update(self.index.similarity(vector, missing))
            if not self.settings.dense_for_cjk:  # an English model's cosine means nothing there
                for cid, found in chunks.items():
                    if is_cjk(found.text):
                        dense_scores.pop(cid, None)
        calibrated = self.settings.calibrated
        hits: list[Hit] = []
        seen: set[str] = set()
        for chunk_id, score in head:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.text in seen:
                continue
            seen.add(chunk.text)
            hits.append(
                Hit(
                    chunk_id=chunk_id,
                    rank=len(hits) + 1,
                    score=score,
                    chunk=chunk,
                    dense=calibrated(dense_scores[chunk_id]) if chunk_id in dense_scores else None,
                    keyword=keyword_scores.get(chunk_id, 0.0 if keyword_scores else None),
                )
            )
            if len(hits) == k:
                break
        return hits
