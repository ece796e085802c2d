"""A reference for the postings index's top-k search: scoring every posting of a
query's terms, and real corpora and questions to compare on (the
manuals of ``eval/manuals-en`` and the SciFact slice, chunked and turned into terms
as ingest does)."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citeline.backends.postings.base import term_hash
from citeline.backends.postings.index import PostingsKeywordIndex
from citeline.core.chunking import ChunkSettings, chunk_document, embedding_text
from citeline.core.keywords import bm25_idf, bm25_weights, fold, terms
from citeline.core.loaders import load_document

REPO = Path(__file__).resolve().parents[1]
MANUALS = REPO / "eval" / "manuals-en"
SCIFACT = REPO / "tests" / "fixtures" / "eval" / "scifact-slice"


def exhaustive(
    index: PostingsKeywordIndex, query: Sequence[str], k: int
) -> list[tuple[int, float]]:
    """The reference: every posting of every query term scored, summed per row in the
    query's term order (``bincount``), the best ``k`` by score, then id."""
    if not query or not len(index):
        return []
    average = index._length / len(index)
    base, delta = index._base, index._delta_arrays()
    base_rows, base_weights = [], []
    delta_scores = np.zeros(len(delta.ids))
    for term in (fold(t) for t in query):
        rows, tfs, fresh = index._postings(term_hash(term), delta)
        if not len(rows) + len(fresh):
            continue
        idf = bm25_idf(len(index), len(rows) + len(fresh))
        base_rows.append(rows)
        base_weights.append(bm25_weights(idf, tfs, base.lengths[rows], average))
        weights = bm25_weights(idf, delta.tfs[fresh], delta.lengths[delta.rows[fresh]], average)
        np.add.at(delta_scores, delta.rows[fresh], weights)
    scored = np.bincount(
        np.concatenate([np.zeros(0, np.int32), *base_rows]),
        np.concatenate([np.zeros(0), *base_weights]),
        minlength=len(base),
    )
    found = [*_best(scored, base.ids, k), *_best(delta_scores, delta.ids, k)]
    return sorted(found, key=lambda item: (-item[1], item[0]))[:k]


def _best(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The rows scoring at least the ``k``-th best (ties kept), as (id, score)."""
    matched = np.flatnonzero(scores > 0)
    if len(matched) > k:
        kth = np.partition(scores[matched], len(matched) - k)[len(matched) - k]
        matched = matched[scores[matched] >= kth]
    return [(int(i), float(s)) for i, s in zip(ids[matched], scores[matched], strict=True)]


def manual_chunks() -> list[str]:
    settings = ChunkSettings()
    out = []
    for path in sorted((MANUALS / "docs").rglob("*")):
        if path.suffix in (".html", ".txt", ".md"):
            document = load_document(path, str(path.relative_to(MANUALS)))
            out.extend(embedding_text(c, settings) for c in chunk_document(document, settings))
    return out


def corpus_terms() -> list[str]:
    """The keyword terms of every chunk of both corpora, as ingest makes them."""
    return [" ".join(terms(text)) for text in manual_chunks() + scifact_chunks()]


def scifact_chunks() -> list[str]:
    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    return [f"{r['title']}\n\n{r['text']}" for r in rows]


def questions() -> list[str]:
    out = []
    for name in ("questions-report.jsonl", "questions-tune.jsonl"):
        out += [json.loads(x)["question"] for x in (MANUALS / name).read_text().splitlines()]
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    return out + [json.loads(x)["text"] for x in lines]


def random_queries(corpus: list[str], n: int, seed: int) -> list[list[str]]:
    """Subsets of the vocabulary: common, middling and rare terms mixed, some repeated."""
    frequency = Counter(t for row in corpus for t in set(row.split()))
    ranked = [t for t, _ in frequency.most_common()]
    bands = [ranked[:50], ranked[50:2000], ranked[2000:]]
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        query = [rng.choice(rng.choice(bands)) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.2:
            query.append(rng.choice(query))
        out.append(query)
    return out
