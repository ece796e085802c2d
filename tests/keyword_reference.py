"""Real corpora and queries for the keyword indexes' top-k searches: the manuals of
``eval/manuals-en`` and the SciFact slice, chunked and turned into terms as ingest
does; their questions, and random subsets of their vocabulary."""

from __future__ import annotations

import json
import random
from collections import Counter
from functools import lru_cache
from pathlib import Path

from citeline.core.chunking import ChunkSettings, chunk_document, embedding_text
from citeline.core.keywords import query_terms, terms
from citeline.core.loaders import load_document

REPO = Path(__file__).resolve().parents[1]
MANUALS = REPO / "eval" / "manuals-en"
SCIFACT = REPO / "tests" / "fixtures" / "eval" / "scifact-slice"


def _manual_chunks() -> list[str]:
    settings = ChunkSettings()
    out = []
    for path in sorted((MANUALS / "docs").rglob("*")):
        if path.suffix in (".html", ".txt", ".md"):
            document = load_document(path, str(path.relative_to(MANUALS)))
            out.extend(embedding_text(c, settings) for c in chunk_document(document, settings))
    return out


def _scifact_chunks() -> list[str]:
    rows = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text().splitlines()]
    return [f"{r['title']}\n\n{r['text']}" for r in rows]


@lru_cache(maxsize=1)
def corpus_terms() -> tuple[str, ...]:
    """The keyword terms of every chunk of both corpora, as ingest makes them."""
    return tuple(" ".join(terms(text)) for text in _manual_chunks() + _scifact_chunks())


def questions() -> list[list[str]]:
    """The corpora's real questions, as query terms."""
    out = []
    for name in ("questions-report.jsonl", "questions-tune.jsonl"):
        out += [json.loads(x)["question"] for x in (MANUALS / name).read_text().splitlines()]
    lines = (SCIFACT / "queries.jsonl").read_text().splitlines()
    return [query_terms(q) for q in out + [json.loads(x)["text"] for x in lines]]


def random_queries(corpus: tuple[str, ...], n: int, seed: int) -> list[list[str]]:
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


def ranked_alike(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """Two searches' (id, score) lists rank alike: as many hits, the same scores to 12
    digits, the same ids in the same order (score, then id).  A database sums a
    chunk's shares in the order its plan reads them, so two chunks of one score can
    differ in the last bit; scores are compared rounded, and the group tied with the
    last hit (which of its members made the cut depends on those bits) is left out."""
    if len(a) != len(b):
        return False

    def canonical(found: list[tuple[int, float]]) -> list[tuple[float, int]]:
        rounded = sorted((-float(f"{s:.12g}"), i) for i, s in found)
        return [r for r in rounded if r[0] != rounded[-1][0]] if rounded else []

    return canonical(a) == canonical(b)
