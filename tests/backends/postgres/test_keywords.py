"""The team index's keyword tables beyond the KeywordIndex contract: exact document
frequencies through removals, and scores equal to FTS5's own on the same rows, folded
diacritics included (a real server)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from citeline.backends.postgres.keywords import PostgresKeywordIndex, create_tables
from citeline.backends.sqlite import fts5
from citeline.core.keywords import terms
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


def test_postings_without_impacts_are_read_first_and_given_impacts_once(
    pair: tuple[PostgresKeywordIndex, fts5.Fts5KeywordIndex], postgres: TestServer
) -> None:
    """A collection written before impacts were kept (every impact the 'Infinity'
    default, no reference average) is searched exactly, and its writer's next open
    computes the impacts once."""
    team, _ = pair
    texts = ["coffee and tea", "coffee coffee coffee", "tea, then more tea", "coffee beans"]
    team.add_many([(i, " ".join(terms(t))) for i, t in enumerate(texts * 20, start=1)])
    schema = team._s.as_string()
    query = list(dict.fromkeys(terms("coffee tea beans")))
    want = team.search_exhaustive(query, 5)
    postgres.execute(f"UPDATE {schema}.postings SET impact = 'Infinity'")
    assert team.search(query, 5) == want  # unread postings bound by infinity: still exact
    postgres.execute(f"UPDATE {schema}.keyword_stats SET impact_average = NULL")
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        create_tables(conn, schema.strip('"'))
    assert postgres.execute(
        f"SELECT count(*) FROM {schema}.postings WHERE impact = 'Infinity'"
    ) == [(0,)]
    assert postgres.execute(f"SELECT impact_average IS NOT NULL FROM {schema}.keyword_stats") == [
        (True,)
    ]
    assert team.search(query, 5) == want


def test_packed_lists_with_sparse_ids_rank_as_the_sum(
    pair: tuple[PostgresKeywordIndex, fts5.Fts5KeywordIndex],
) -> None:
    """Chunk ids far apart (a collection long rewritten): the packed search scores
    per id met, not per id up to the largest, and ranks as the exhaustive sum, with
    removed chunks left out."""
    team, _ = pair
    texts = ["coffee and tea", "coffee coffee coffee", "tea, then more tea", "coffee beans"]
    rows = [(10**9 + 7919 * i, " ".join(terms(t))) for i, t in enumerate(texts * 30)]
    team.add_many(rows)
    team.pack()
    team.remove([rows[1][0], rows[5][0]])
    team.add_many([(2 * 10**9, " ".join(terms("coffee tea beans, beans")))])
    for query in (["coffe"], ["coffe", "tea"], ["bean", "tea", "coffe"], ["bean", "bean"]):
        for k in (1, 5, 200):
            found = team.search(query, k)
            assert found == team.search_exhaustive(query, k), (query, k)
            assert not {i for i, _ in found} & {rows[1][0], rows[5][0]}
    assert team.search(["coffe", "bean"], 1)[0][0] == 2 * 10**9
