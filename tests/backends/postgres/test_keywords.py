"""The team index's keyword tables beyond the KeywordIndex contract: exact document
frequencies through removals, scores equal to FTS5's own on the same rows, folded
diacritics included, and its top-k search equal to scoring every posting on real
corpora (a real server)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from citeline.backends.postgres.keywords import PostgresKeywordIndex, create_tables
from citeline.backends.postings.index import PostingsKeywordIndex
from citeline.backends.sqlite import fts5
from citeline.core.keywords import query_terms, terms
from keyword_reference import corpus_terms, exhaustive, questions, random_queries
from postgres import TestServer


@pytest.fixture()
def pair(postgres: TestServer) -> Iterator[tuple[PostgresKeywordIndex, fts5.Fts5KeywordIndex]]:
    schema = f"kw_{postgres.fresh_collection()}"
    conn = psycopg.connect(postgres.url, autocommit=True)
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    create_tables(conn, schema)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(fts5.SCHEMA)
    yield PostgresKeywordIndex(conn, schema), fts5.Fts5KeywordIndex(db)
    conn.close()


def test_scores_and_frequencies_equal_fts5_through_removals(
    pair: tuple[PostgresKeywordIndex, fts5.Fts5KeywordIndex],
) -> None:
    team, embedded = pair
    texts = [
        "The café on the corner serves coffee; the cafe next door serves tea.",
        "Coffee, coffee and more coffee: identifiers like pg_hba.conf and E-1024.",
        "Tea is brewed at 80 degrees; coffee at 93.",
        "索引保存在文档文件夹里，索引很小。",
        "",
    ]
    for i, text in enumerate(texts, start=1):
        for index in (team, embedded):
            index.add(i, " ".join(terms(text)))
    team.add_many([(10 + i, " ".join(terms(t))) for i, t in enumerate(texts)])
    for index in (team, embedded):
        for i, t in enumerate(texts):
            if index is embedded:
                index.add(10 + i, " ".join(terms(t)))
        index.remove([2, 12, 99])
    for query in ["coffee", "cafe tea", "café", "pg_hba.conf e1024", "索引", "absent coffee"]:
        q = list(dict.fromkeys(terms(query)))
        got, want = team.search(q, 10), embedded.search(q, 10)
        assert sorted(i for i, _ in got) == sorted(i for i, _ in want), query
        assert sorted(s for _, s in got) == pytest.approx(sorted(s for _, s in want), rel=1e-9)
    assert team.document_frequencies(["coffe", "tea", "absent"]) == embedded.document_frequencies(
        ["coffe", "tea", "absent"]
    )


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return corpus_terms()


def test_top_k_scores_as_the_embedded_index_to_the_last_bit_on_real_corpora(
    postgres: TestServer, corpus: list[str]
) -> None:
    """MaxScore here, every posting scored there: the same ids, order and scores,
    through removals (bounds left wide) and adds, and with bounds unknown (NULL, a
    collection from before they were kept)."""
    schema = f"kw_{postgres.fresh_collection()}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        create_tables(conn, schema)
        team = PostgresKeywordIndex(conn, schema)
        team.add_many(list(enumerate(corpus, start=1)))
        embedded = PostingsKeywordIndex.build(enumerate(corpus, start=1))
        queries = [query_terms(q) for q in questions()] + random_queries(corpus, 150, seed=4)

        def assert_alike() -> None:
            for i, query in enumerate(queries):
                k = (1, 3, 10, 50, 200)[i % 5]
                assert team.search(query, k) == exhaustive(embedded, query, k), (query, k)

        assert_alike()
        rng = random.Random(5)
        gone = rng.sample(range(1, len(corpus) + 1), len(corpus) // 10)
        added = [(len(corpus) + i, corpus[rng.randrange(len(corpus))]) for i in range(1, 100)]
        for index in (team, embedded):
            index.remove(gone)
        team.add_many(added)
        for chunk_id, row in added:
            embedded.add(chunk_id, row)
        assert_alike()
        conn.execute(
            sql.SQL("UPDATE {}.term_df SET max_tf = NULL, min_length_per_tf = NULL").format(
                sql.Identifier(schema)
            )
        )
        assert_alike()
