"""The :class:`~citeline.core.keywords.KeywordIndex` on PostgreSQL: BM25 exactly as
SQLite FTS5's ``bm25()`` computes it, over the terms ``citeline.core.keywords``
makes (stemmed English, joined identifiers, CJK bigrams).

Tables (in the collection's schema):

- ``postings``: the inverted index, one row per (term, chunk) with the term's
  frequency in the chunk and the chunk's length in terms; its primary key (term,
  chunk) includes both, so a search reads each query term's postings from the index
  alone;
- ``chunk_terms``: one row per chunk, its distinct terms and length (what removing
  it takes away);
- ``term_df``: how many chunks hold each term (BM25's document frequency);
- ``keyword_stats``: the number of rows and of terms (BM25's average length).

The writer keeps the last two exact in the same transaction as the rows, so a
search reads two small lookups and the query terms' postings, summed per chunk in
the database: the score of a chunk is
``Σ idf(t)·tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`` with k1 = 1.2, b = 0.75
and ``idf = max(1e-6, ln((N − n + 0.5)/(n + 0.5)))``, FTS5's constants.  Terms are
folded as FTS5's ``unicode61`` tokenizer folds them (diacritics of Latin letters
removed), so ``café`` and ``cafe`` are one term in both backends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from citeline.core.keywords import K1, B, bm25_idf, fold

TABLES = ("chunk_terms", "postings", "term_df", "keyword_stats")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.chunk_terms (
    chunk_id bigint PRIMARY KEY,
    terms text[] NOT NULL,
    length integer NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.postings (
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (term, chunk_id) INCLUDE (tf, length)
);
CREATE TABLE IF NOT EXISTS {s}.term_df (term text PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.keyword_stats (
    id integer PRIMARY KEY CHECK (id = 1),
    rows bigint NOT NULL,
    terms bigint NOT NULL
);
INSERT INTO {s}.keyword_stats VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
"""


def create_tables(conn: psycopg.Connection[Any], schema: str) -> None:
    conn.execute(sql.SQL(_SCHEMA).format(s=sql.Identifier(schema)))


class PostgresKeywordIndex:
    """BM25 over one collection's ``postings``.  Writes join the caller's transaction."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str) -> None:
        self._conn = conn
        self._s = sql.Identifier(schema)

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s)

    # -- writing ------------------------------------------------------------------

    def add(self, chunk_id: int, terms: str) -> None:
        self.add_many([(chunk_id, terms)])

    def add_many(self, rows: Sequence[tuple[int, str]]) -> None:
        """Index several chunks' space-separated terms (one statement per table)."""
        if not rows:
            return
        ids: list[int] = []
        distinct: list[list[str]] = []
        lengths: list[int] = []
        postings: tuple[list[str], list[int], list[int], list[int]] = ([], [], [], [])
        df: Counter[str] = Counter()
        for chunk_id, text in rows:
            counts = Counter(fold(t) for t in text.split())
            length = sum(counts.values())
            ids.append(chunk_id)
            distinct.append(sorted(counts))
            lengths.append(length)
            df.update(counts.keys())
            for term in sorted(counts):
                postings[0].append(term)
                postings[1].append(chunk_id)
                postings[2].append(counts[term])
                postings[3].append(length)
        with self._conn.cursor() as cur:
            cur.executemany(
                self._q("INSERT INTO {s}.chunk_terms VALUES (%s, %s, %s)"),
                list(zip(ids, distinct, lengths, strict=True)),
            )
            cur.execute(
                self._q(
                    "INSERT INTO {s}.postings"
                    " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[])"
                ),
                postings,
            )
            self._bump_df(cur, df, 1)
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = rows + %s, terms = terms + %s"),
                (len(ids), sum(lengths)),
            )

    def _bump_df(self, cur: psycopg.Cursor[Any], df: Counter[str], sign: int) -> None:
        if not df:
            return
        terms = sorted(df)  # one order for every writer: no deadlocks
        counts = [sign * df[t] for t in terms]
        cur.execute(
            self._q(
                "INSERT INTO {s}.term_df AS d (term, df)"
                " SELECT * FROM unnest(%s::text[], %s::int[])"
                " ON CONFLICT (term) DO UPDATE SET df = d.df + excluded.df"
            ),
            (terms, counts),
        )
        if sign < 0:
            cur.execute(
                self._q("DELETE FROM {s}.term_df WHERE term = ANY(%s) AND df <= 0"), (terms,)
            )

    def remove(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._conn.cursor() as cur:
            cur.execute(
                self._q(
                    "DELETE FROM {s}.chunk_terms WHERE chunk_id = ANY(%s)"
                    " RETURNING chunk_id, terms, length"
                ),
                ([int(i) for i in ids],),
            )
            removed = cur.fetchall()
            if not removed:
                return
            pairs = sorted((str(t), int(c)) for c, terms, _ in removed for t in terms)
            cur.execute(  # each posting by its key: a common term's others are not read
                self._q(
                    "DELETE FROM {s}.postings p USING unnest(%s::text[], %s::bigint[])"
                    " AS r(term, chunk_id) WHERE p.term = r.term AND p.chunk_id = r.chunk_id"
                ),
                ([t for t, _ in pairs], [c for _, c in pairs]),
            )
            df: Counter[str] = Counter()
            for _, terms, _ in removed:
                df.update(terms)
            self._bump_df(cur, df, -1)
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = rows - %s, terms = terms - %s"),
                (len(removed), sum(int(length) for _, _, length in removed)),
            )

    def clear(self) -> None:
        with self._conn.cursor() as cur:
            cur.execute(self._q("TRUNCATE {s}.chunk_terms, {s}.postings, {s}.term_df"))
            cur.execute(self._q("UPDATE {s}.keyword_stats SET rows = 0, terms = 0"))

    # -- reading ------------------------------------------------------------------

    def _stats(self, cur: psycopg.Cursor[Any]) -> tuple[int, int]:
        row = cur.execute(self._q("SELECT rows, terms FROM {s}.keyword_stats")).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def _df(self, cur: psycopg.Cursor[Any], folded: Sequence[str]) -> dict[str, int]:
        rows = cur.execute(
            self._q("SELECT term, df FROM {s}.term_df WHERE term = ANY(%s) AND df > 0"),
            (list(folded),),
        ).fetchall()
        return {str(t): int(d) for t, d in rows}

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not terms or k <= 0:
            return []
        folded = [fold(t) for t in terms]
        with self._conn.cursor() as cur:
            total, length = self._stats(cur)
            frequencies = self._df(cur, folded)
            # One term of the sum per query term (a repeated term counts again, as in FTS5).
            present = [t for t in folded if t in frequencies]
            if not total or not present:
                return []
            rows = cur.execute(
                self._q(
                    "SELECT p.chunk_id, sum(q.idf * p.tf * %s / (p.tf + %s * (%s + %s * p.length"
                    " / %s))) AS score"
                    " FROM unnest(%s::text[], %s::float8[]) AS q(term, idf)"
                    " JOIN {s}.postings p ON p.term = q.term"
                    " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %s"
                ),
                (
                    K1 + 1,
                    K1,
                    1 - B,
                    B,
                    length / total,
                    present,
                    [bm25_idf(total, frequencies[t]) for t in present],
                    k,
                ),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        with self._conn.cursor() as cur:
            total, _ = self._stats(cur)
            if not terms:
                return total, {}
            frequencies = self._df(cur, [fold(t) for t in terms])
        return total, {t: frequencies[fold(t)] for t in terms if fold(t) in frequencies}
