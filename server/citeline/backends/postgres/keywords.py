"""The :class:`~citeline.core.keywords.KeywordIndex` on PostgreSQL: BM25 exactly as
SQLite FTS5's ``bm25()`` computes it, over the terms ``citeline.core.keywords``
makes (stemmed English, joined identifiers, CJK bigrams).

Tables (in the collection's schema):

- ``chunk_terms``: one row per chunk: its distinct terms (``text[]``, GIN-indexed:
  which chunks hold any query term), each term's frequency (``jsonb``) and the
  chunk's length in terms;
- ``term_df``: how many chunks hold each term (BM25's document frequency);
- ``keyword_stats``: the number of rows and of terms (BM25's average length).

The writer keeps the last two exact in the same transaction as the rows, so a
search reads two small lookups and the matching rows: the score of a chunk is
``Σ idf(t)·tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`` with k1 = 1.2, b = 0.75
and ``idf = max(1e-6, ln((N − n + 0.5)/(n + 0.5)))``, FTS5's constants.  Terms are
folded as FTS5's ``unicode61`` tokenizer folds them (diacritics of Latin letters
removed), so ``café`` and ``cafe`` are one term in both backends.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

K1 = 1.2
B = 0.75

TABLES = ("chunk_terms", "term_df", "keyword_stats")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.chunk_terms (
    chunk_id bigint PRIMARY KEY,
    terms text[] NOT NULL,
    tf jsonb NOT NULL,
    length integer NOT NULL
);
CREATE INDEX IF NOT EXISTS chunk_terms_terms ON {s}.chunk_terms USING gin (terms);
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


def _is_latin(char: str) -> bool:
    code = ord(char)
    return code < 0x250 or 0x1E00 <= code < 0x1F00


def fold(term: str) -> str:
    """A term as FTS5's ``unicode61`` tokenizer stores it: Latin letters without
    their diacritics (``café`` → ``cafe``); everything else as it is."""
    if term.isascii():
        return term
    out: list[str] = []
    for char in unicodedata.normalize("NFD", term):
        if unicodedata.combining(char) and out and _is_latin(out[-1]):
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def idf(total: int, frequency: int) -> float:
    return max(1e-6, math.log((total - frequency + 0.5) / (frequency + 0.5)))


class PostgresKeywordIndex:
    """BM25 over one collection's ``chunk_terms``.  Writes join the caller's transaction."""

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
        frequencies: list[str] = []
        lengths: list[int] = []
        df: Counter[str] = Counter()
        for chunk_id, text in rows:
            counts = Counter(fold(t) for t in text.split())
            ids.append(chunk_id)
            distinct.append(sorted(counts))
            frequencies.append(json.dumps(counts, ensure_ascii=False))
            lengths.append(sum(counts.values()))
            df.update(counts.keys())
        with self._conn.cursor() as cur:
            cur.executemany(
                self._q("INSERT INTO {s}.chunk_terms VALUES (%s, %s, %s::jsonb, %s)"),
                list(zip(ids, distinct, frequencies, lengths, strict=True)),
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
                    "DELETE FROM {s}.chunk_terms WHERE chunk_id = ANY(%s) RETURNING terms, length"
                ),
                ([int(i) for i in ids],),
            )
            removed = cur.fetchall()
            if not removed:
                return
            df: Counter[str] = Counter()
            for terms, _ in removed:
                df.update(terms)
            self._bump_df(cur, df, -1)
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = rows - %s, terms = terms - %s"),
                (len(removed), sum(int(length) for _, length in removed)),
            )

    def clear(self) -> None:
        with self._conn.cursor() as cur:
            cur.execute(self._q("TRUNCATE {s}.chunk_terms, {s}.term_df"))
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
        with self._conn.transaction(), self._conn.cursor() as cur:
            # The GIN index finds the matching rows; a sequential scan would test every
            # row's terms (the planner cannot tell how many a query's terms match).
            cur.execute("SET LOCAL enable_seqscan = off")
            total, length = self._stats(cur)
            frequencies = self._df(cur, folded)
            present = [t for t in folded if t in frequencies]
            if not total or not present:
                return []
            average = length / total
            # One term of the sum per query term (a repeated term counts again, as in FTS5).
            parts = []
            params: list[Any] = []
            for term in present:
                parts.append(
                    sql.SQL(
                        "%s * coalesce((tf->>%s)::float8, 0) * {k1p}"
                        " / (coalesce((tf->>%s)::float8, 0) + {k1} * ({one_b} + {b} * length / %s))"
                    ).format(
                        k1p=sql.Literal(K1 + 1),
                        k1=sql.Literal(K1),
                        one_b=sql.Literal(1 - B),
                        b=sql.Literal(B),
                    )
                )
                params += [idf(total, frequencies[term]), term, term, average]
            score = sql.SQL(" + ").join(parts)
            query = sql.SQL(
                "SELECT chunk_id, {score} AS score FROM {s}.chunk_terms"
                " WHERE terms && %s::text[] ORDER BY score DESC, chunk_id LIMIT %s"
            ).format(score=score, s=self._s)
            rows = cur.execute(query, [*params, sorted(set(present)), k]).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        with self._conn.cursor() as cur:
            total, _ = self._stats(cur)
            if not terms:
                return total, {}
            frequencies = self._df(cur, [fold(t) for t in terms])
        return total, {t: frequencies[fold(t)] for t in terms if fold(t) in frequencies}
