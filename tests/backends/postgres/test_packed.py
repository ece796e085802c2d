"""The packed lists in the reader: shares with the exhaustive SQL's bits, the cache's
bound, and a reader's kept lists on a real server while another connection writes
(new chunks, removals, a repack, an older writer's own changes to the lists, a
writer's uncommitted lists): every search ranks as the exhaustive sum."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from citeline.backends.postgres import packed
from citeline.backends.postgres.keywords import PostgresKeywordIndex, create_tables
from citeline.core.keywords import K1, B
from keyword_reference import corpus_terms, questions, random_queries, ranked_alike
from postgres import TestServer


def test_shares_have_the_exhaustive_sums_bits() -> None:
    """Each share as ``idf·tf·(k1+1) / (tf + k1·((1−b) + b·len/avg))`` computed one
    posting at a time, and again after the average moves."""
    rng = np.random.default_rng(1)
    tfs = rng.choice([1, 1, 1, 2, 3, 700], 5000).astype(np.int32)
    lengths = rng.integers(1, 90_000, 5000).astype(np.int32)
    ids = np.sort(rng.choice(10**9, 5000, replace=False)).astype(np.int64)
    one = packed.PackedList.decode(
        ids.astype(">i8").tobytes(), tfs.astype(">i4").tobytes(), lengths.astype(">i4").tobytes()
    )
    assert np.array_equal(one.ids, ids)
    for idf, average in ((0.37, 101.5), (2.9, 99.0), (0.37, 101.5)):
        want = [
            idf * t * (K1 + 1) / (t + K1 * ((1 - B) + B * n / average))
            for t, n in zip(tfs.tolist(), lengths.tolist(), strict=True)
        ]
        assert one.shares(idf, average).tolist() == want


def test_the_cache_keeps_the_most_recently_used_within_its_bound() -> None:
    cache = packed.PackedCache(limit=10)
    sized = {
        t: packed.PackedList(np.arange(n), np.ones(n, np.int32), np.ones(n, np.int32))
        for t, n in (("a", 4), ("b", 4), ("c", 4))
    }
    cache.put("a", sized["a"])  # no version: nothing is kept
    assert "a" not in cache
    cache.clear(7)
    for t in "abc":
        cache.put(t, sized[t])
        assert cache.get("a") is sized["a"]  # used: the most recent
    cache.trim()
    assert ("a" in cache, "b" in cache, "c" in cache) == (True, False, True)
    assert cache.postings == 8 and cache.missing(["a", "b", "c"]) == ["b"]
    cache.clear(8)
    assert len(cache) == 0 and cache.version == 8


def test_best_leaves_out_the_removed_and_ranks_ties_by_id() -> None:
    lists = [
        packed.PackedList(np.array([2, 5, 9]), np.array([1, 1, 1]), np.array([4, 4, 4])),
        packed.PackedList(np.array([5, 10**9]), np.array([2, 1]), np.array([4, 4])),
    ]
    got = packed.best([(1.0, [lists[0]]), (0.5, [lists[1]])], np.array([9]), 4.0, 10)
    assert [i for i, _ in got] == [5, 2, 10**9]
    assert packed.best([(1.0, [])], np.zeros(0, np.int64), 4.0, 10) == []


# -- a reader's kept lists against another connection's writes -------------------------


@pytest.fixture()
def pair(postgres: TestServer) -> Iterator[tuple[PostgresKeywordIndex, PostgresKeywordIndex]]:
    """(the writer's keyword index, a reader's on a connection of its own)."""
    schema = f"kw_{postgres.fresh_collection()}"
    writer = psycopg.connect(postgres.url, autocommit=True)
    writer.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    create_tables(writer, schema)
    reader = psycopg.connect(postgres.url, autocommit=True)
    reader.execute("SET default_transaction_read_only = on")
    yield PostgresKeywordIndex(writer, schema), PostgresKeywordIndex(reader, schema)
    reader.close()
    writer.close()


def decoded_postings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The postings of every packed list a search decodes from now on, one count each."""
    counts: list[int] = []
    real = packed.PackedList.decode.__func__  # type: ignore[attr-defined]

    def counting(cls: type[packed.PackedList], ids: bytes, *rest: Any) -> packed.PackedList:
        counts.append(len(ids) // 8)
        return real(cls, ids, *rest)  # type: ignore[no-any-return]

    monkeypatch.setattr(packed.PackedList, "decode", classmethod(counting))
    return counts


def test_a_readers_kept_lists_follow_another_writers_changes(
    pair: tuple[PostgresKeywordIndex, PostgresKeywordIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, reader = pair
    corpus = corpus_terms()
    writer.add_many(list(enumerate(corpus[:1500], start=1)))
    queries = questions()[:60] + random_queries(corpus, 60, seed=11)

    def check(k: int = 20) -> None:
        for query in queries:
            found, every = reader.search(query, k), writer.search_exhaustive(query, k)
            assert ranked_alike(found, every), (query, found, every)

    check()  # no packed lists yet: the SQL paths
    writer.pack()
    decoded = decoded_postings(monkeypatch)
    check()
    first = sum(decoded)
    assert first > 0 and reader._lists.version is not None
    decoded.clear()
    check()  # again: every list kept, none read or decoded
    assert sum(decoded) == 0
    kept, lists = reader._lists.version, dict(reader._lists._lists)

    writer.add_many(list(enumerate(corpus[1500:1800], start=1501)))  # above the mark
    writer.remove(random.Random(2).sample(range(1, 1501), 200))  # below it
    check()  # the same lists kept, with the added postings and the removals read
    assert reader._lists.version == kept
    assert all(reader._lists.get(t) is v for t, v in lists.items())

    writer.pack()  # new lists: a new version, every list read again
    check()
    assert reader._lists.version != kept
    assert not any(reader._lists.get(t) is v for t, v in lists.items())

    # An older writer changes a list itself (here: one term's list emptied, another's
    # replaced): the trigger on keyword_packed moves the version all the same.
    term = max(
        dict.fromkeys(t for q in queries for t in q),
        key=lambda t: len(writer.search_exhaustive([t], 10_000)),
    )
    kept = reader._lists.version
    writer._conn.execute(
        sql.SQL(
            "UPDATE {}.keyword_packed SET chunk_ids = '', tfs = '', lengths = '' WHERE term = %s"
        ).format(writer._s),
        (term,),
    )
    fresh = PostgresKeywordIndex(writer._conn, writer._s.as_string().strip('"'))
    for query in [[term], *queries[:20]]:
        assert reader.search(query, 20) == fresh.search(query, 20)
    assert reader._lists.version != kept
    assert reader.search([term], 20) == []  # its list (wrongly, by hand) empty: as read


def test_a_writers_own_uncommitted_lists_are_not_kept(
    pair: tuple[PostgresKeywordIndex, PostgresKeywordIndex],
) -> None:
    """Inside the writer's transaction its searches see its own new lists, none of
    them kept (the version is the transaction's id until it commits); after a rollback
    the committed lists answer."""
    writer, _ = pair
    corpus = corpus_terms()
    writer.add_many(list(enumerate(corpus[:800], start=1)))
    writer.pack()
    query = questions()[3]
    committed = writer.search(query, 10)
    with pytest.raises(RuntimeError), writer._conn.transaction():
        writer.remove([i for i, _ in committed[:3]])
        writer.pack()
        inside = writer.search(query, 10)
        assert ranked_alike(inside, writer.search_exhaustive(query, 10))
        assert not {i for i, _ in committed[:3]} & {i for i, _ in inside}
        assert writer._lists.version is None and len(writer._lists) == 0
        writer.pack()  # the same transaction changes its lists again
        assert writer.search(query, 10) == inside
        raise RuntimeError("roll back")
    assert writer.search(query, 10) == committed
    assert writer._lists.version is not None


def test_a_collection_made_again_under_its_name_is_read_again(
    pair: tuple[PostgresKeywordIndex, PostgresKeywordIndex], postgres: TestServer
) -> None:
    """The lists' version is a transaction id, unique on the server: a collection
    dropped and made again (the same schema name, other chunks) is never answered
    from the lists a reader kept of the first."""
    writer, reader = pair
    corpus = corpus_terms()
    writer.add_many(list(enumerate(corpus[:500], start=1)))
    writer.pack()
    query = questions()[5]
    reader.search(query, 10)
    schema = writer._s.as_string().strip('"')
    postgres.execute(f'DROP SCHEMA "{schema}" CASCADE')
    postgres.execute(f'CREATE SCHEMA "{schema}"')
    create_tables(writer._conn, schema)
    writer.add_many(list(enumerate(corpus[500:1000], start=1)))
    writer.pack()
    assert ranked_alike(reader.search(query, 10), writer.search_exhaustive(query, 10))
