"""The KeywordIndex contract, run against every implementation: BM25 with FTS5's
constants and formula, so a backend's keyword scores (and the evidence thresholds
calibrated on them) mean the same thing."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import psycopg.sql
import pytest

from citeline.backends.postgres import keywords as pg_keywords
from citeline.backends.postgres import packed as pg_packed
from citeline.backends.postings import PostingsKeywordIndex
from citeline.backends.sqlite import fts5
from citeline.core.keywords import KeywordIndex, terms
from keyword_reference import corpus_terms, questions, random_queries, ranked_alike
from memory import MemoryKeywordIndex


def fts5_index(request: pytest.FixtureRequest) -> KeywordIndex:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(fts5.SCHEMA)
    return fts5.Fts5KeywordIndex(db)


def postgres_index(request: pytest.FixtureRequest) -> KeywordIndex:
    """The team index's keyword tables in a fresh schema of the test server."""
    server = request.getfixturevalue("postgres")
    schema = f"kw_{server.fresh_collection()}"
    conn = psycopg.connect(server.url, autocommit=True)
    request.addfinalizer(conn.close)
    conn.execute(psycopg.sql.SQL("CREATE SCHEMA {}").format(psycopg.sql.Identifier(schema)))
    pg_keywords.create_tables(conn, schema)
    return pg_keywords.PostgresKeywordIndex(conn, schema)


# Each makes an empty index (with whatever the test session provides).
FACTORIES: dict[str, Callable[[pytest.FixtureRequest], KeywordIndex]] = {
    "fts5": fts5_index,
    "postings": lambda request: PostingsKeywordIndex(),
    "memory": lambda request: MemoryKeywordIndex(),
    "postgresql": postgres_index,
}

CHUNKS = {
    1: "Edit pg_hba.conf to allow password authentication, then reload the server.",
    2: "The server keeps its index in the documents folder.",
    3: "Reload the page to see the new index. Reload it again if the index is stale.",
    4: "索引保存在文档文件夹里。",
    5: "Tomatoes need six hours of sun.",
    6: "Bake the loaf at 230 degrees for thirty-five minutes.",
    7: "Jupiter has at least ninety-five moons.",
}


@pytest.fixture(params=list(FACTORIES))
def index(request: pytest.FixtureRequest) -> Iterator[KeywordIndex]:
    made = FACTORIES[request.param](request)
    for chunk_id, text in CHUNKS.items():
        made.add(chunk_id, " ".join(terms(text)))
    yield made


def bm25(query: list[str], chunk_id: int) -> float:
    """FTS5's bm25() for one chunk of CHUNKS, written out."""
    docs = {i: terms(t) for i, t in CHUNKS.items()}
    average = sum(len(d) for d in docs.values()) / len(docs)
    score = 0.0
    for term in query:
        n = sum(1 for d in docs.values() if term in d)
        idf = math.log((len(docs) - n + 0.5) / (n + 0.5))
        idf = idf if idf > 0 else 1e-6
        tf = docs[chunk_id].count(term)
        score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(docs[chunk_id]) / average))
    return score


def test_any_term_matches_and_the_best_come_first(index: KeywordIndex) -> None:
    query = terms("reload index")
    found = index.search(query, 10)
    expected = sorted((1, 2, 3), key=lambda i: -bm25(query, i))
    assert expected[0] == 3  # both terms, twice each
    assert [i for i, _ in found] == expected
    assert [s for _, s in found] == pytest.approx([bm25(query, i) for i in expected], rel=1e-4)
    assert all(s > 0 for _, s in found)
    assert index.search(query, 1) == found[:1]


def test_an_exact_identifier_and_cjk_bigrams_are_terms(index: KeywordIndex) -> None:
    assert [i for i, _ in index.search(terms("pg_hba.conf"), 5)] == [1]
    assert [i for i, _ in index.search(terms("索引保存在哪里"), 5)] == [4]


def test_nothing_to_match_finds_nothing(index: KeywordIndex) -> None:
    assert index.search([], 5) == []
    assert index.search(["absent"], 5) == []
    assert index.search(terms("reload"), 0) == []


def test_document_frequencies_count_chunks(index: KeywordIndex) -> None:
    total, frequencies = index.document_frequencies(terms("reload index absent"))
    assert total == len(CHUNKS)
    assert frequencies == {"reload": 2, "index": 2}


def test_removed_chunks_are_not_found_or_counted(index: KeywordIndex) -> None:
    index.remove([3, 99])
    assert [i for i, _ in index.search(terms("reload"), 5)] == [1]
    assert index.document_frequencies(["reload"]) == (len(CHUNKS) - 1, {"reload": 1})


# -- the top-k search against scoring every posting -----------------------------------


def test_top_k_ranks_as_scoring_every_posting_on_real_corpora(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The team index's threshold algorithm against its exhaustive sum: the same ids,
    order and scores (``ranked_alike``), for real questions and random vocabulary
    subsets at k = 1–200, before and after removals and new chunks move the average
    length away from the one the impacts were computed with; and the threshold path
    really answers."""
    index = postgres_index(request)
    assert isinstance(index, pg_keywords.PostgresKeywordIndex)
    corpus = corpus_terms()
    rows = list(enumerate(corpus, start=1))
    for start in range(0, len(rows), 500):
        index.add_many(rows[start : start + 500])
    answered = []
    real = pg_keywords.PostgresKeywordIndex._threshold

    def counting(self: pg_keywords.PostgresKeywordIndex, *args: Any) -> Any:
        found = real(self, *args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(pg_keywords.PostgresKeywordIndex, "_threshold", counting)
    monkeypatch.setattr(pg_keywords, "TOP_K_FROM", 0)  # a small corpus: top-k even so

    def check(queries: list[list[str]]) -> None:
        for i, query in enumerate(queries):
            k = (1, 3, 10, 50, 200)[i % 5]
            found, every = index.search(query, k), index.search_exhaustive(query, k)
            assert ranked_alike(found, every), (query, k, found, every)

    check(questions()[:150] + random_queries(corpus, 250, seed=1))
    rng = random.Random(3)
    index.remove(rng.sample(range(1, len(corpus) + 1), len(corpus) // 5))
    long_rows = [(len(corpus) + 1 + i, " ".join([corpus[i]] * 3)) for i in range(300)]
    index.add_many(long_rows)  # three times as long: the average moves up by a third
    check(random_queries(corpus, 150, seed=2))
    assert sum(answered) >= 50  # the top-k path answers many of them, not the fallback


def test_packed_lists_rank_as_scoring_every_posting_through_changes(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The team index's packed lists (each term's postings as arrays, summed in numpy)
    against the exhaustive SQL sum on real corpora: right after packing; after
    removals and new, longer chunks (the packed lists then miss the new postings and
    still hold the removed ones); after an id at or below the mark comes back (the
    lists are dropped); and packed again."""
    index = postgres_index(request)
    assert isinstance(index, pg_keywords.PostgresKeywordIndex)
    corpus = corpus_terms()
    rows = list(enumerate(corpus, start=1))
    for start in range(0, len(rows), 500):
        index.add_many(rows[start : start + 500])
    assert index.pack_due()
    index.pack()
    assert not index.pack_due()
    answered: list[int] = []
    real = pg_packed.best

    def counting(*args: Any) -> Any:
        answered.append(1)
        return real(*args)

    monkeypatch.setattr(pg_packed, "best", counting)

    def check(queries: list[list[str]]) -> int:
        """How many of the queries that find anything the packed search did not answer."""
        before, finding = len(answered), 0
        for i, query in enumerate(queries):
            k = (1, 3, 10, 50, 200)[i % 5]
            found, every = index.search(query, k), index.search_exhaustive(query, k)
            assert ranked_alike(found, every), (query, k, found, every)
            assert len(found) == len(every)
            finding += bool(every)  # a query none of whose terms is held returns early
        return finding - (len(answered) - before)

    assert check(questions()[:120] + random_queries(corpus, 150, seed=4)) == 0
    rng = random.Random(5)
    removed = rng.sample(range(1, len(corpus) + 1), len(corpus) // 5)
    index.remove(removed)
    long_rows = [(len(corpus) + 1 + i, " ".join([corpus[i]] * 3)) for i in range(300)]
    index.add_many(long_rows)
    assert check(questions()[120:200] + random_queries(corpus, 100, seed=6)) == 0
    for query in questions()[:40]:  # a removed chunk is never found
        assert not {i for i, _ in index.search(query, 200)} & set(removed)
    index.add_many([(removed[0], corpus[0])])  # an id the packed lists may hold: dropped
    assert index.pack_due()
    before = len(answered)
    check(random_queries(corpus, 50, seed=7))
    assert len(answered) == before  # the SQL paths answer
    index.pack()
    assert check(questions()[-40:] + random_queries(corpus, 60, seed=8)) == 0


def test_an_older_writers_removals_and_reused_ids_reach_the_packed_lists(
    request: pytest.FixtureRequest,
) -> None:
    """A writer that knows nothing of packed lists (an older version: it deletes and
    inserts the rows, and nothing else) still has its removals left out of packed
    searches, and an id it reuses at or below the mark drops the lists (triggers on
    ``chunk_terms``)."""
    index = postgres_index(request)
    assert isinstance(index, pg_keywords.PostgresKeywordIndex)
    corpus = corpus_terms()[:400]
    index.add_many(list(enumerate(corpus, start=1)))
    index.pack()
    query = questions()[0]
    best = index.search(query, 5)[0][0]
    conn = index._conn
    s = index._s
    with conn.transaction():  # the older writer's removal: its rows only
        conn.execute(
            psycopg.sql.SQL("DELETE FROM {}.chunk_terms WHERE chunk_id = %s").format(s), (best,)
        )
        conn.execute(
            psycopg.sql.SQL("DELETE FROM {}.postings WHERE chunk_id = %s").format(s), (best,)
        )
    state = psycopg.sql.SQL(
        "SELECT packed_upto IS NOT NULL, (SELECT array_agg(chunk_id) FROM {0}.packed_removed)"
        " FROM {0}.keyword_stats"
    ).format(s)
    assert conn.execute(state).fetchone() == (True, [best])  # still packed, the removal kept
    assert best not in {i for i, _ in index.search(query, 50)}
    assert ranked_alike(index.search(query, 50), index.search_exhaustive(query, 50))
    conn.execute(  # the older writer reuses an id below the mark
        psycopg.sql.SQL("INSERT INTO {}.chunk_terms VALUES (%s, %s, %s)").format(s),
        (best, ["x"], 1),
    )
    upto = conn.execute(psycopg.sql.SQL("SELECT packed_upto FROM {}.keyword_stats").format(s))
    assert upto.fetchone() == (None,)
    index.pack()
    conn.execute(psycopg.sql.SQL("TRUNCATE {}.chunk_terms").format(s))  # its clear
    upto = conn.execute(psycopg.sql.SQL("SELECT packed_upto FROM {}.keyword_stats").format(s))
    assert upto.fetchone() == (None,)
