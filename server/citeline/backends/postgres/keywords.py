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

The writer keeps the last two exact in the same transaction as the rows; ``term_df``
also keeps each term's largest frequency and smallest length / frequency, which bound
its share of any chunk's score (:func:`citeline.core.keywords.bm25_bound`; a removal
leaves them as they are, still bounds).  The score of a chunk is
``Σ idf(t)·tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`` with k1 = 1.2, b = 0.75
and ``idf = max(1e-6, ln((N − n + 0.5)/(n + 0.5)))``, FTS5's constants.  Terms are
folded as FTS5's ``unicode61`` tokenizer folds them (diacritics of Latin letters
removed), so ``café`` and ``cafe`` are one term in both backends.

A search is top-k (MaxScore) in three statements instead of summing every posting of
every query term: (1) the best ``k`` chunks of the rarest terms (at most
:data:`SEED_POSTINGS` postings) are scored exactly, and their ``k``-th score is a
threshold the final ``k``-th reaches; (2) the terms with the smallest bounds whose
bounds sum below it cannot place a chunk alone, so only the chunks of the other terms
are summed, those that cannot reach the threshold dropped before the rest are looked
up by key; (3) the chunks left are scored exactly here, each chunk's shares added in
the query's term order as the embedded index adds them, so both backends give the
same scores to the last bit and break ties alike (by chunk id).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from citeline.core.keywords import K1, B, bm25_bound, bm25_idf, bm25_weights, fold

TABLES = ("chunk_terms", "postings", "term_df", "keyword_stats")

SEED_POSTINGS = 20_000  # postings of the rarest terms whose best chunks give a threshold
_SLACK = 1e-9  # thresholds lowered by this share: sums in another order never fall below

# A chunk's share of one query term, in SQL (what filters; exact scores are summed here).
_SHARE = "q.idf * p.tf * %(k1p)s / (p.tf + %(k1)s * (%(omb)s + %(b)s * p.length / %(avg)s))"
_QUERY = "q AS (SELECT * FROM unnest(%(terms)s::text[], %(idfs)s::float8[],"
_QUERY += " %(essential)s::bool[]) AS q(term, idf, essential))"

# The best k chunks by the seed terms' shares alone, and their postings of every term.
_SEED = (
    f"WITH {_QUERY}, seed AS (SELECT p.chunk_id FROM q JOIN {{s}}.postings p"
    f" ON p.term = q.term WHERE q.term = ANY(%(seed)s) GROUP BY p.chunk_id"
    f" ORDER BY sum({_SHARE}) DESC LIMIT %(k)s)"
    " SELECT p.chunk_id, p.term, p.tf, p.length FROM seed JOIN {s}.postings p"
    " ON p.chunk_id = seed.chunk_id AND p.term = ANY(%(terms)s)"
)

# The chunks of the essential terms that can reach the threshold (``floor``: it less
# the bounds of the other terms), the other terms' shares looked up by key for them,
# and of those every chunk scored within the slack of the k-th best.
_CANDIDATES = (
    f"WITH {_QUERY}, part AS (SELECT p.chunk_id, sum({_SHARE}) AS s"
    " FROM q JOIN {s}.postings p ON p.term = q.term WHERE q.essential"
    f" GROUP BY p.chunk_id HAVING sum({_SHARE}) >= %(floor)s),"
    " scored AS (SELECT part.chunk_id, part.s + coalesce((SELECT"
    f" sum({_SHARE}) FROM q JOIN {{s}}.postings p ON p.term = q.term"
    " AND p.chunk_id = part.chunk_id WHERE NOT q.essential), 0) AS score FROM part),"
    " kth AS (SELECT score FROM scored ORDER BY score DESC OFFSET %(k)s - 1 LIMIT 1)"
    " SELECT chunk_id FROM scored WHERE score >= coalesce((SELECT score FROM kth), 0)"
    " * %(slack)s"
)

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
ALTER TABLE {s}.term_df ADD COLUMN IF NOT EXISTS max_tf integer,
    ADD COLUMN IF NOT EXISTS min_length_per_tf float8;
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
        bounds: dict[str, tuple[int, float]] = {}
        for chunk_id, text in rows:
            counts = Counter(fold(t) for t in text.split())
            length = sum(counts.values())
            ids.append(chunk_id)
            distinct.append(sorted(counts))
            lengths.append(length)
            df.update(counts.keys())
            for term, tf in counts.items():
                peak, ratio = bounds.get(term, (0, math.inf))
                bounds[term] = max(peak, tf), min(ratio, length / tf)
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
            self._bump_df(cur, df, 1, bounds)
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = rows + %s, terms = terms + %s"),
                (len(ids), sum(lengths)),
            )

    def _bump_df(
        self,
        cur: psycopg.Cursor[Any],
        df: Counter[str],
        sign: int,
        bounds: dict[str, tuple[int, float]] | None = None,
    ) -> None:
        """Add ``sign``·``df`` to the terms' frequencies; ``bounds`` (added rows' largest
        frequency and smallest length / frequency per term) widen the bounds kept.  A
        bound unknown (NULL: a row from before bounds were kept) stays unknown."""
        if not df:
            return
        terms = sorted(df)  # one order for every writer: no deadlocks
        counts = [sign * df[t] for t in terms]
        peaks = [bounds[t][0] if bounds else None for t in terms]
        ratios = [bounds[t][1] if bounds else None for t in terms]
        cur.execute(
            self._q(
                "INSERT INTO {s}.term_df AS d (term, df, max_tf, min_length_per_tf)"
                " SELECT * FROM unnest(%s::text[], %s::int[], %s::int[], %s::float8[])"
                " ON CONFLICT (term) DO UPDATE SET df = d.df + excluded.df,"
                " max_tf = CASE WHEN d.max_tf IS NOT NULL"
                "  THEN greatest(d.max_tf, excluded.max_tf) END,"
                " min_length_per_tf = CASE WHEN d.min_length_per_tf IS NOT NULL"
                "  THEN least(d.min_length_per_tf, excluded.min_length_per_tf) END"
            ),
            (terms, counts, peaks, ratios),
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

    def _terms(
        self, cur: psycopg.Cursor[Any], folded: Sequence[str]
    ) -> tuple[int, int, dict[str, tuple[int, float, float]]]:
        """(rows, terms, each held term's (frequency, largest frequency, smallest length /
        frequency)), an unknown bound as the loosest (∞, 0): one statement."""
        rows = cur.execute(
            self._q(
                "SELECT s.rows, s.terms, t.term, t.df, t.max_tf, t.min_length_per_tf"
                " FROM {s}.keyword_stats s LEFT JOIN {s}.term_df t"
                " ON t.term = ANY(%s) AND t.df > 0"
            ),
            (list(folded),),
        ).fetchall()
        held = {
            str(t): (int(d), math.inf if m is None else float(m), 0.0 if r is None else float(r))
            for _, _, t, d, m, r in rows
            if t is not None
        }
        return (int(rows[0][0]), int(rows[0][1]), held) if rows else (0, 0, {})

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not terms or k <= 0:
            return []
        with self._conn.cursor() as cur:
            folded = [fold(t) for t in terms]
            total, length, held = self._terms(cur, folded)
            if not total or not held:
                return []
            average = length / total
            query: list[_Term] = []
            for term in folded:  # one term of the sum per query term: a repeat counts again
                if term in held:
                    df, peak, ratio = held[term]
                    idf = bm25_idf(total, df)
                    query.append(_Term(term, idf, bm25_bound(idf, peak, ratio, average), df))
            scores = self._exact(cur, query, self._candidates(cur, query, k, average), average)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]

    def _candidates(
        self, cur: psycopg.Cursor[Any], query: list[_Term], k: int, average: float
    ) -> list[int]:
        """The chunks that can be among the ``k`` best (every chunk tied with the
        ``k``-th included): MaxScore with a threshold from the rarest terms' best."""
        order = sorted(query, key=lambda t: -t.bound)
        threshold = 0.0
        seed: list[str] = []
        postings = 0
        for term in order:
            if seed and postings + term.df > SEED_POSTINGS:
                break
            seed.append(term.term)
            postings += term.df
        if len(seed) < len(order):
            args = self._args(query, average, seed=seed, k=k)
            rows = cur.execute(self._q(_SEED), args).fetchall()
            scores = sorted(_sums(query, rows, average).values(), reverse=True)
            if len(scores) >= k:
                threshold = scores[k - 1] * (1 - _SLACK)
        rest, left = len(order), 0.0  # the smallest bounds summing below the threshold
        while rest > 0 and left + order[rest - 1].bound < threshold:
            rest -= 1
            left += order[rest].bound
        essential = {t.term for t in order[:rest]}
        args = self._args(query, average, essential=essential, k=k)
        args["floor"] = threshold - left - _SLACK * threshold
        return [int(r[0]) for r in cur.execute(self._q(_CANDIDATES), args).fetchall()]

    @staticmethod
    def _args(
        query: list[_Term],
        average: float,
        *,
        k: int,
        seed: Sequence[str] = (),
        essential: set[str] | None = None,
    ) -> dict[str, Any]:
        return {
            "terms": [t.term for t in query],
            "idfs": [t.idf for t in query],
            "essential": [essential is None or t.term in essential for t in query],
            "seed": list(seed),
            "k": k,
            "k1p": K1 + 1,
            "k1": K1,
            "omb": 1 - B,
            "b": B,
            "avg": average,
            "slack": 1 - _SLACK,
        }

    def _exact(
        self, cur: psycopg.Cursor[Any], query: list[_Term], ids: list[int], average: float
    ) -> dict[int, float]:
        """The chunks' BM25 scores (:func:`_sums`)."""
        if not ids:
            return {}
        rows = cur.execute(
            self._q(
                "SELECT chunk_id, term, tf, length FROM {s}.postings"
                " WHERE term = ANY(%s) AND chunk_id = ANY(%s)"
            ),
            (sorted({t.term for t in query}), ids),
        ).fetchall()
        return _sums(query, rows, average)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        with self._conn.cursor() as cur:
            total, _, held = self._terms(cur, [fold(t) for t in terms])
        return total, {t: held[fold(t)][0] for t in terms if fold(t) in held}


def _sums(query: list[_Term], rows: Sequence[tuple[Any, ...]], average: float) -> dict[int, float]:
    """Each chunk's BM25 score from its (chunk id, term, tf, length) postings, its shares
    added in the query's term order."""
    where: dict[int, int] = {}
    held: dict[str, tuple[list[int], list[int], list[int]]] = {}
    for chunk_id, term, tf, length in rows:
        at, tfs, lengths = held.setdefault(str(term), ([], [], []))
        at.append(where.setdefault(int(chunk_id), len(where)))
        tfs.append(int(tf))
        lengths.append(int(length))
    scores = np.zeros(len(where), dtype=np.float64)
    for term in query:
        if term.term in held:
            at, tfs, lengths = held[term.term]
            scores[at] += bm25_weights(term.idf, np.asarray(tfs), np.asarray(lengths), average)
    return {chunk_id: float(scores[i]) for chunk_id, i in where.items()}


@dataclass(frozen=True)
class _Term:
    """One term of a query: its folded form, IDF, bound of its share, frequency."""

    term: str
    idf: float
    bound: float
    df: int
