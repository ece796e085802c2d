"""The postings index's top-k search (MaxScore over per-term bounds) against scoring
every posting, on real corpora (``keyword_reference``): their real questions and random
subsets of their vocabulary (rare, common, repeated terms), through removals, adds,
saves, loads and a new base.  Same ids, same order, the same scores to the last bit."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from citeline.backends.postings import index as backend
from citeline.backends.postings.index import PostingsKeywordIndex
from citeline.core.keywords import query_terms
from keyword_reference import corpus_terms, exhaustive, questions, random_queries


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return corpus_terms()


def assert_ranks_alike(index: PostingsKeywordIndex, queries: list[list[str]]) -> None:
    for i, query in enumerate(queries):
        k = (1, 3, 10, 50, 200)[i % 5]
        assert index.search(query, k) == exhaustive(index, query, k), (query, k)


def test_top_k_equals_scoring_every_posting_on_real_corpora(corpus: list[str]) -> None:
    index = PostingsKeywordIndex.build(enumerate(corpus, start=1))
    assert len(index) > 2000
    real = [query_terms(q) for q in questions()]
    assert_ranks_alike(index, real + random_queries(corpus, 400, seed=1))


def test_top_k_equals_scoring_every_posting_through_edits(
    corpus: list[str], tmp_path: Path
) -> None:
    rng = random.Random(3)
    index = PostingsKeywordIndex.build(enumerate(corpus, start=1))
    index.remove(rng.sample(range(1, len(corpus) + 1), len(corpus) // 10))  # tombstones
    for chunk_id in rng.sample(range(1, len(corpus) + 1), 300):  # reused ids, in the delta
        index.add(chunk_id, corpus[rng.randrange(len(corpus))])
    for chunk_id in range(len(corpus) + 1, len(corpus) + 200):  # new ids
        index.add(chunk_id, corpus[rng.randrange(len(corpus))])
    queries = random_queries(corpus, 150, seed=2)
    assert_ranks_alike(index, queries)
    path = tmp_path / "keywords.postings"
    index.save(path)
    assert_ranks_alike(PostingsKeywordIndex.load(path), queries)
    index._compact(path)  # a new base of the live rows: new bounds
    assert_ranks_alike(PostingsKeywordIndex.load(path), queries)


def test_a_rare_term_beside_common_ones_skips_most_postings(
    corpus: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    index = PostingsKeywordIndex.build(enumerate(corpus, start=1))
    frequency = Counter(t for row in corpus for t in set(row.split()))
    common = [t for t, _ in frequency.most_common(6)]
    rare = next(t for t, n in frequency.items() if n == 3)
    query = [rare, *common]
    scored = []
    real = backend.bm25_weights

    def counting(*args: object) -> object:
        out = real(*args)  # type: ignore[arg-type]
        scored.append(len(out))
        return out

    monkeypatch.setattr(backend, "bm25_weights", counting)
    found = index.search(query, 3)
    monkeypatch.undo()
    assert found == exhaustive(index, query, 3)
    assert sum(scored) < sum(frequency[t] for t in query) / 10
