"""The :class:`~citeline.core.keywords.KeywordIndex` on PostgreSQL: BM25 exactly as
SQLite FTS5's ``bm25()`` computes it, over the terms ``citeline.core.keywords``
makes (stemmed English, joined identifiers, CJK bigrams).

Tables (in the collection's schema):

- ``postings``: the inverted index, one row per (term, chunk) with the term's
  frequency in the chunk, the chunk's length in terms and the posting's *impact*;
  its primary key (term, chunk) includes frequency and length, so a chunk's share of
  a term is one index probe; a second index, (term, impact, chunk), reads a term's
  postings best first;
- ``chunk_terms``: one row per chunk, its distinct terms and length (what removing
  it takes away);
- ``term_df``: how many chunks hold each term (BM25's document frequency);
- ``keyword_stats``: the number of rows and of terms (BM25's average length), the
  average the impacts were computed with, the packed lists' mark and their version
  (the id of the transaction that last changed them: a trigger on
  ``keyword_packed``);
- ``keyword_packed``: each term's postings as three packed arrays (chunk ids,
  frequencies, lengths: big-endian int8 / int4 / int4, stored uncompressed), made by
  :meth:`PostgresKeywordIndex.pack` from ``postings``; they hold every chunk up to
  the mark ``keyword_stats.packed_upto`` that existed when they were made;
- ``packed_removed``: the chunks at or below the mark removed since.

Triggers on ``chunk_terms`` keep the last two exact in the same transaction as the
rows, whichever version writes (an older writer knows nothing of packed lists): a
chunk deleted at or below the mark is recorded in ``packed_removed``, one inserted at
or below it or a ``TRUNCATE`` drops the lists.  The score
of a chunk is ``Σ idf(t)·tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))`` with k1 = 1.2,
b = 0.75 and ``idf = max(1e-6, ln((N − n + 0.5)/(n + 0.5)))``, FTS5's constants.
Terms are folded as FTS5's ``unicode61`` tokenizer folds them (diacritics of Latin
letters removed), so ``café`` and ``cafe`` are one term in both backends.

**Search over the packed lists** (when the collection has them: the writer packs at
the end of a run when none exist or :data:`REPACK_SHARE` of the chunks changed).  One
statement (:data:`_ONE`) reads the statistics, the query terms' document frequencies,
their packed lists (those the reader does not keep from an earlier search of the same
version of the lists: ``packed.PackedCache``), the postings of the chunks added
since (ids above the mark, packed the same way) and the chunks removed since; numpy
then sums every posting's share, computed as the exhaustive SQL computes it and
added in the query's order, and zeroes the removed chunks (``packed.best``).  A few rows of a few
megabytes instead of a row per posting: exact, and the cost is the copy and the
arithmetic.  An added chunk whose id is at or below the mark drops the lists (they
would miss its postings), until the next pack.

**Top-k search without packed lists** (the threshold algorithm over impact-ordered
postings).  A
posting's impact is its share before the IDF, computed with a *reference* average
length ``A₀`` (the average of the collection's first write, kept in
``keyword_stats.impact_average``): ``tf·(k1+1) / (tf + k1·(1 − b + b·len/A₀))``.  Its
share at today's average ``A`` is at most ``impact · max(1, A/A₀)`` (a longer average
only shrinks the length's part of the denominator, by at most ``A₀/A``), so impacts
never have to be rewritten when the collection changes: the bound stays exact, only
looser as the average drifts.  A search plans, reads, then scores (three statements):

1. *plan*: each term's impact at a few depths (:data:`DEPTHS`) and a *floor*, the
   k-th best exact score of the k chunks with the best partial sums over each term's
   first postings (all of the rarest terms'); :func:`_plan` then picks how deep to
   read each term (a rare one: all of it) so that the bounds of what stays unread,
   ``idf · impact at that depth · max(1, A/A₀)``, sum below :data:`TARGET` of the
   floor;
2. *read*: those postings, summed per chunk; a chunk never met is bounded by the
   unread bounds' sum, below the floor, so it cannot be among the best k; a chunk
   met is kept only if its partial sum plus the bounds of the terms it was not met in
   can reach the floor (raised to the k-th best partial sum);
3. *score*: the chunks kept, exactly, by primary-key probes, their shares added
   in the query's order as the exhaustive sum adds them, so the ids, order and
   scores are those of scoring every posting.

A query whose terms hold fewer than :data:`TOP_K_FROM` postings, a plan that would
read more than :data:`READ_SHARE` of them, or too many chunks kept to probe
(:data:`PROBE_SHARE`) sums every posting instead (the same answer).  All of it
reads one snapshot (a repeatable read transaction), so a commit in between
changes nothing.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from citeline.backends.postgres import packed
from citeline.core.keywords import K1, B, bm25_idf, bm25_weight, fold

TABLES = ("chunk_terms", "postings", "term_df", "keyword_stats", "keyword_packed", "packed_removed")

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
    impact real NOT NULL DEFAULT 'Infinity',
    PRIMARY KEY (term, chunk_id) INCLUDE (tf, length)
);
CREATE TABLE IF NOT EXISTS {s}.term_df (term text PRIMARY KEY, df integer NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.keyword_stats (
    id integer PRIMARY KEY CHECK (id = 1),
    rows bigint NOT NULL,
    terms bigint NOT NULL
);
INSERT INTO {s}.keyword_stats VALUES (1, 0, 0) ON CONFLICT DO NOTHING;
ALTER TABLE {s}.postings ADD COLUMN IF NOT EXISTS impact real NOT NULL DEFAULT 'Infinity';
ALTER TABLE {s}.keyword_stats ADD COLUMN IF NOT EXISTS impact_average double precision;
CREATE INDEX IF NOT EXISTS postings_impact
    ON {s}.postings (term, impact DESC, chunk_id DESC) INCLUDE (tf, length);
CREATE TABLE IF NOT EXISTS {s}.keyword_packed (
    term text PRIMARY KEY,
    chunk_ids bytea NOT NULL,
    tfs bytea NOT NULL,
    lengths bytea NOT NULL
);
ALTER TABLE {s}.keyword_packed ALTER COLUMN chunk_ids SET STORAGE EXTERNAL,
    ALTER COLUMN tfs SET STORAGE EXTERNAL, ALTER COLUMN lengths SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS {s}.packed_removed (chunk_id bigint PRIMARY KEY);
ALTER TABLE {s}.keyword_stats ADD COLUMN IF NOT EXISTS packed_upto bigint;
CREATE OR REPLACE FUNCTION {s}.packed_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.packed_removed SELECT g.chunk_id FROM gone g, {s}.keyword_stats k
        WHERE g.chunk_id <= k.packed_upto ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {s}.unpack() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {s}.keyword_packed;
    DELETE FROM {s}.packed_removed;
    UPDATE {s}.keyword_stats SET packed_upto = NULL;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION {s}.packed_reuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM came c, {s}.keyword_stats k WHERE c.chunk_id <= k.packed_upto) THEN
        DELETE FROM {s}.keyword_packed;
        DELETE FROM {s}.packed_removed;
        UPDATE {s}.keyword_stats SET packed_upto = NULL;
    END IF;
    RETURN NULL;
END $$;
ALTER TABLE {s}.keyword_stats ADD COLUMN IF NOT EXISTS packed_version bigint;
UPDATE {s}.keyword_stats SET packed_version = txid_current() WHERE packed_version IS NULL;
CREATE OR REPLACE FUNCTION {s}.packed_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {s}.keyword_stats SET packed_version = txid_current();
    RETURN NULL;
END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'packed_changed'
            AND tgrelid = '{s}.keyword_packed'::regclass) THEN
        CREATE TRIGGER packed_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
            ON {s}.keyword_packed FOR EACH STATEMENT EXECUTE FUNCTION {s}.packed_changed();
    END IF;
END $$;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'packed_removal'
            AND tgrelid = '{s}.chunk_terms'::regclass) THEN
        CREATE TRIGGER packed_removal AFTER DELETE ON {s}.chunk_terms
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
            EXECUTE FUNCTION {s}.packed_removal();
        CREATE TRIGGER packed_reuse AFTER INSERT ON {s}.chunk_terms
            REFERENCING NEW TABLE AS came FOR EACH STATEMENT
            EXECUTE FUNCTION {s}.packed_reuse();
        CREATE TRIGGER packed_truncate AFTER TRUNCATE ON {s}.chunk_terms
            FOR EACH STATEMENT EXECUTE FUNCTION {s}.unpack();
    END IF;
END $$;
"""

# A posting's impact from its frequency and length, and the reference average ``a``.
IMPACT = "p.tf * {k1p} / (p.tf + {k1} * ({omb} + {b} * p.length / {a}))"

# Impacts for the postings written before impacts were kept (the 'Infinity' default:
# read first, and bounding nothing until read).
_MIGRATE = """
UPDATE {s}.keyword_stats SET impact_average = terms::float8 / rows WHERE rows > 0;
UPDATE {s}.postings p SET impact = ({impact})::real FROM {s}.keyword_stats s
    WHERE p.impact = 'Infinity';
"""


def create_tables(conn: psycopg.Connection[Any], schema: str) -> None:
    """The keyword tables (a writer's); a collection written before impacts were kept
    gets them, once (an UPDATE of every posting)."""
    s = sql.Identifier(schema)
    conn.execute(sql.SQL(_SCHEMA).format(s=s))
    row = conn.execute(
        sql.SQL("SELECT rows, impact_average FROM {s}.keyword_stats").format(s=s)
    ).fetchone()
    if row is not None and int(row[0]) > 0 and row[1] is None:
        impact = IMPACT.format(k1p=K1 + 1, k1=K1, omb=1 - B, b=B, a="s.impact_average")
        conn.execute(sql.SQL(_MIGRATE.replace("{impact}", impact)).format(s=s))


class PostgresKeywordIndex:
    """BM25 over one collection's ``postings``.  Writes join the caller's transaction."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str) -> None:
        self._conn = conn
        self._s = sql.Identifier(schema)
        self._versioned = False  # the collection has keyword_stats.packed_version
        self._lists = packed.PackedCache()  # the terms' packed lists, read by this reader

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
        counted: list[Counter[str]] = []
        df: Counter[str] = Counter()
        for chunk_id, text in rows:
            counts = Counter(fold(t) for t in text.split())
            ids.append(chunk_id)
            distinct.append(sorted(counts))
            lengths.append(sum(counts.values()))
            counted.append(counts)
            df.update(counts.keys())
        with self._conn.cursor() as cur:
            # (an id at or below the packed lists' mark drops them: the trigger packed_reuse)
            reference = self._impact_average(cur, sum(lengths) / len(ids))
            postings: tuple[list[str], list[int], list[int], list[int], list[float]] = (
                [],
                [],
                [],
                [],
                [],
            )
            for chunk_id, terms, length, counts in zip(
                ids, distinct, lengths, counted, strict=True
            ):
                for term in terms:
                    postings[0].append(term)
                    postings[1].append(chunk_id)
                    postings[2].append(counts[term])
                    postings[3].append(length)
                    postings[4].append(bm25_weight(counts[term], length, reference))
            cur.executemany(
                self._q("INSERT INTO {s}.chunk_terms VALUES (%s, %s, %s)"),
                list(zip(ids, distinct, lengths, strict=True)),
            )
            cur.execute(
                self._q(
                    "INSERT INTO {s}.postings (term, chunk_id, tf, length, impact)"
                    " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[],"
                    " %s::real[])"
                ),
                postings,
            )
            self._bump_df(cur, df, 1)
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = rows + %s, terms = terms + %s"),
                (len(ids), sum(lengths)),
            )

    def _impact_average(self, cur: psycopg.Cursor[Any], average: float) -> float:
        """The average length impacts are computed with (the first write's, kept)."""
        row = cur.execute(
            self._q(
                "UPDATE {s}.keyword_stats SET impact_average = coalesce(impact_average, %s)"
                " RETURNING impact_average"
            ),
            (max(1.0, average),),
        ).fetchone()
        return max(1.0, average) if not row else float(row[0])

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
            removed = cur.fetchall()  # (packed_removed gets them: the trigger packed_removal)
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
            cur.execute(
                self._q("UPDATE {s}.keyword_stats SET rows = 0, terms = 0, impact_average = NULL")
            )  # (no packed lists: the trigger packed_truncate)

    # -- packed lists -----------------------------------------------------------------

    def _unpack(self, cur: psycopg.Cursor[Any]) -> None:
        """No packed lists (DELETE, not TRUNCATE: a reader's snapshot keeps its own)."""
        cur.execute(self._q("DELETE FROM {s}.keyword_packed"))
        cur.execute(self._q("DELETE FROM {s}.packed_removed"))
        cur.execute(self._q("UPDATE {s}.keyword_stats SET packed_upto = NULL"))

    def pack(self) -> None:
        """Each term's postings as three packed arrays (chunk ids, frequencies, lengths),
        marked with the highest chunk id they hold.  Join the caller's transaction."""
        with self._conn.cursor() as cur:
            self._unpack(cur)
            cur.execute(
                self._q(
                    "INSERT INTO {s}.keyword_packed SELECT term,"
                    " string_agg(int8send(chunk_id), '' ORDER BY chunk_id),"
                    " string_agg(int4send(tf), '' ORDER BY chunk_id),"
                    " string_agg(int4send(length), '' ORDER BY chunk_id)"
                    " FROM {s}.postings GROUP BY term"
                )
            )
            cur.execute(
                self._q(
                    "UPDATE {s}.keyword_stats SET packed_upto = coalesce("
                    "(SELECT max(chunk_id) FROM {s}.chunk_terms),"
                    " (SELECT max(chunk_id) FROM {s}.postings), 0)"
                )
            )

    def pack_due(self) -> bool:
        """Whether the packed lists are missing, or more than :data:`REPACK_SHARE` of the
        chunks were added or removed since they were made."""
        with self._conn.cursor() as cur:
            row = cur.execute(
                self._q(
                    "SELECT rows, packed_upto,"
                    " (SELECT count(*) FROM {s}.chunk_terms WHERE chunk_id > packed_upto)"
                    " + (SELECT count(*) FROM {s}.packed_removed) FROM {s}.keyword_stats"
                )
            ).fetchone()
        if row is None or not int(row[0]):
            return False
        return row[1] is None or int(row[2]) > REPACK_SHARE * int(row[0])

    # -- reading ------------------------------------------------------------------

    def _stats(self, cur: psycopg.Cursor[Any]) -> tuple[int, int, float | None, int | None]:
        """(rows, terms, the impacts' average or None: a collection without impacts,
        the packed lists' mark or None: none)."""
        row = cur.execute(
            self._q(
                "SELECT rows, terms, (to_jsonb(k) ->> 'impact_average')::float8,"
                " (to_jsonb(k) ->> 'packed_upto')::bigint, to_jsonb(k) ? 'packed_version'"
                " FROM {s}.keyword_stats k"
            )
        ).fetchone()
        if not row:
            return 0, 0, None, None
        self._versioned = bool(row[4])  # a writer of this version made the lists' version
        average = None if row[2] is None else float(row[2])
        return int(row[0]), int(row[1]), average, None if row[3] is None else int(row[3])

    def _df(self, cur: psycopg.Cursor[Any], folded: Sequence[str]) -> dict[str, int]:
        rows = cur.execute(
            self._q("SELECT term, df FROM {s}.term_df WHERE term = ANY(%s) AND df > 0"),
            (list(folded),),
        ).fetchall()
        return {str(t): int(d) for t, d in rows}

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[psycopg.Cursor[Any]]:
        """A cursor whose statements all read one snapshot (a repeatable read
        transaction, unless the caller's transaction is already open)."""
        with self._conn.cursor() as cur:
            if self._conn.info.transaction_status != TransactionStatus.IDLE:
                yield cur
                return
            with self._conn.transaction():
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield cur

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The best ``k`` by the threshold algorithm (the module's docstring); the same
        answer as :meth:`search_exhaustive`."""
        return self._search(terms, k, top_k=True)

    def search_exhaustive(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """The best ``k`` by scoring every posting of every query term."""
        return self._search(terms, k, top_k=False)

    def _search(self, terms: Sequence[str], k: int, top_k: bool) -> list[tuple[int, float]]:
        if not terms or k <= 0:
            return []
        folded = [fold(t) for t in terms]
        if top_k and self._versioned:
            found = self._one_statement(folded, k)
            if found is not None:
                return found
        with self._snapshot() as cur:
            total, length, reference, upto = self._stats(cur)
            frequencies = self._df(cur, folded)
            # One term of the sum per query term (a repeated term counts again, as in FTS5).
            present = [t for t in folded if t in frequencies]
            if not total or not present:
                return []
            query = _Query(present, [bm25_idf(total, frequencies[t]) for t in present])
            average = length / total
            held = sum(frequencies[t] for t in set(present))
            if top_k and upto is not None:
                return self._packed(cur, query, upto, average, k)
            if top_k and reference is not None and held >= TOP_K_FROM:
                found = self._threshold(cur, query, frequencies, average, reference, k)
                if found is not None:
                    return found
            rows = cur.execute(self._q(_EXHAUSTIVE), query.args(average, k=k)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def _threshold(
        self,
        cur: psycopg.Cursor[Any],
        query: _Query,
        frequencies: dict[str, int],
        average: float,
        reference: float,
        k: int,
    ) -> list[tuple[int, float]] | None:
        """The best ``k`` from each term's best postings (the module's docstring), or
        None when that would cost more than summing every posting (:data:`READ_SHARE`,
        :data:`PROBE_SHARE`)."""
        weight: dict[str, float] = {}  # a term's IDF times its repeats in the query
        for term, idf in zip(query.terms, query.idfs, strict=True):
            weight[term] = weight.get(term, 0.0) + idf
        stretch = max(1.0, average / reference) * (1 + _SLACK)
        names = list(weight)
        probes = [(i, d) for i, t in enumerate(names) for d in DEPTHS if d < frequencies[t]]
        rows = cur.execute(
            self._q(_PLAN),
            query.args(
                average,
                names=names,
                weights=[weight[t] for t in names],
                at=[i + 1 for i, _ in probes],
                depths=[d for _, d in probes],
                seeds=_seeds(names, frequencies),
                k=k,
            ),
            prepare=False,
        ).fetchall()
        floor = 0.0  # a lower bound of the k-th best score
        bounds: dict[str, dict[int, float]] = {t: {} for t in names}
        for i, depth, value in rows:
            if i == 0:
                floor = float(value)
            else:
                term = names[int(i) - 1]
                bounds[term][int(depth)] = weight[term] * float(value) * stretch
        plan = _plan(names, frequencies, bounds, floor * TARGET)
        if plan is None or sum(plan.values()) > READ_SHARE * sum(frequencies[t] for t in names):
            return None
        bound = {t: bounds[t].get(d, 0.0) for t, d in plan.items()}
        if floor <= 0 or sum(bound.values()) >= floor:
            return None
        alive = cur.execute(
            self._q(_READ),
            query.args(
                average,
                names=names,
                weights=[weight[t] for t in names],
                bounds=[bound[t] for t in names],
                depths=[plan[t] for t in names],
                total=sum(bound.values()),
                floor=floor,
                k=k,
            ),
            prepare=False,
        ).fetchall()
        if len(alive) * len(query.terms) > PROBE_SHARE * sum(frequencies[t] for t in names):
            return None  # probing them one by one would cost more than summing everything
        found = cur.execute(
            self._q(_SCORE), query.args(average, ids=[r[0] for r in alive], k=k), prepare=False
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in found]

    def _packed(
        self, cur: psycopg.Cursor[Any], query: _Query, upto: int, average: float, k: int
    ) -> list[tuple[int, float]]:
        """Every posting of the query's terms summed in numpy (:func:`packed.best`): the
        packed lists, the postings of chunks added since (ids above ``upto``), less the
        chunks removed since; three statements (a collection without the lists'
        version, :meth:`_one_statement`'s otherwise)."""
        names = list(dict.fromkeys(query.terms))
        lists: dict[str, list[packed.PackedList]] = {t: [] for t in names}
        for statement, args in ((_PACKED, (names,)), (_ADDED, (names, upto))):
            for term, ids, tfs, lengths in cur.execute(self._q(statement), args, binary=True):
                lists[str(term)].append(packed.PackedList.decode(ids, tfs, lengths))
        removed_row = cur.execute(self._q(_REMOVED), binary=True).fetchone()
        removed = np.frombuffer(bytes(removed_row[0]) if removed_row else b"", ">i8")
        parts = [(idf, lists[t]) for t, idf in zip(query.terms, query.idfs, strict=True)]
        return packed.best(parts, removed.astype(np.int64), average, k)

    def _one_statement(self, folded: list[str], k: int) -> list[tuple[int, float]] | None:
        """The packed search in one statement (one snapshot, one round trip): the
        statistics, the terms' document frequencies, the packed lists of the terms not
        kept from an earlier search of the same version of the lists (all of them when
        the version moved), the postings added since and the chunks removed since.
        None when the collection has no packed lists."""
        names = list(dict.fromkeys(folded))
        cache = self._lists
        rows = self._conn.execute(
            self._q(_ONE),
            {"names": names, "missing": cache.missing(names), "version": cache.version},
            binary=True,
        ).fetchall()
        total, length, upto, version, own = (None if v is None else int(v) for v in rows[0][2:7])
        if upto is None or version is None or not total or length is None:
            return None
        if version != cache.version or version == own:
            # Other lists (or this transaction's own, not yet committed): none kept.
            cache.clear(None if version == own else version)
        frequencies: dict[str, int] = {}
        fetched: dict[str, packed.PackedList] = {}
        added: dict[str, packed.PackedList] = {}
        removed = np.zeros(0, np.int64)
        for kind, term, number, _, _, _, _, ids, tfs, lengths in rows[1:]:
            if kind == _DF:
                frequencies[str(term)] = int(number)
            elif kind == _LIST:
                fetched[str(term)] = packed.PackedList.decode(ids, tfs, lengths)
            elif kind == _ADDED_SINCE:
                added[str(term)] = packed.PackedList.decode(ids, tfs, lengths)
            else:
                removed = np.frombuffer(ids, ">i8").astype(np.int64)
        present = [t for t in folded if t in frequencies]
        if not present:
            return []
        lists: dict[str, list[packed.PackedList]] = {}
        for term in dict.fromkeys(present):
            got = fetched.get(term) or cache.get(term)
            if got is None:  # a term the lists do not hold (added since): kept as empty
                got = packed.PackedList.decode(b"", b"", b"")
            if term not in cache:
                cache.put(term, got)
            lists[term] = [got, *([added[term]] if term in added else [])]
        parts = [(bm25_idf(total, frequencies[t]), lists[t]) for t in present]
        found = packed.best(parts, removed, length / total, k)
        cache.trim()
        return found

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        with self._snapshot() as cur:
            total, _, _, _ = self._stats(cur)
            if not terms:
                return total, {}
            frequencies = self._df(cur, [fold(t) for t in terms])
        return total, {t: frequencies[fold(t)] for t in terms if fold(t) in frequencies}


DEPTHS = (16, 128, 1024, 8192)  # where a term's bound is read when planning
SEED = 128  # a term's postings the first floor is drawn from
SEED_ALL = 4096  # ... all of the rarest terms' while they hold this many
TARGET = 0.6  # the planned bound of the chunks left unread, as a share of the floor
TOP_K_FROM = 100_000  # postings a query's terms hold before the top-k search pays
READ_SHARE = 0.5  # beyond this share of the query's postings, every posting is summed
PROBE_SHARE = 0.1  # ... or when the chunks left hold more postings to probe than this share
REPACK_SHARE = 0.25  # chunks added or removed since the packed lists, before a repack
_SLACK = 1e-6  # a bound's margin for the float rounding of impacts and sums
_FLOOR_SLACK = 1e-9  # the floor's, for partial sums rounded in another order

# The packed lists of the query's terms, the postings of the chunks added since (as
# packed lists too), and the chunks removed since.
_PACKED = "SELECT term, chunk_ids, tfs, lengths FROM {s}.keyword_packed WHERE term = ANY(%s)"
_ADDED = (
    "SELECT term, string_agg(int8send(chunk_id), '' ORDER BY chunk_id),"
    " string_agg(int4send(tf), '' ORDER BY chunk_id),"
    " string_agg(int4send(length), '' ORDER BY chunk_id)"
    " FROM {s}.postings WHERE term = ANY(%s) AND chunk_id > %s GROUP BY term"
)
_REMOVED = (
    "SELECT coalesce(string_agg(int8send(chunk_id), '' ORDER BY chunk_id), '')"
    " FROM {s}.packed_removed"
)

# The same in one statement, rows by kind: the statistics (the lists' mark and version,
# and this transaction's id if it has one), each term's document frequency, the packed
# lists of ``missing`` (of every term when the version is not ``version``), the
# postings added since and the chunks removed since.
_STATS, _DF, _LIST, _ADDED_SINCE, _REMOVED_SINCE = range(5)
_ONE = (
    "WITH k AS (SELECT rows, terms, packed_upto, packed_version FROM {s}.keyword_stats)"
    " SELECT 0 AS kind, NULL::text AS term, k.rows, k.terms, k.packed_upto,"
    " k.packed_version, txid_current_if_assigned(), NULL::bytea AS ids, NULL::bytea AS tfs,"
    " NULL::bytea AS lengths FROM k"
    " UNION ALL SELECT 1, d.term, d.df, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
    " FROM {s}.term_df d WHERE d.term = ANY(%(names)s::text[]) AND d.df > 0"
    " UNION ALL SELECT 2, p.term, NULL, NULL, NULL, NULL, NULL, p.chunk_ids, p.tfs, p.lengths"
    " FROM {s}.keyword_packed p WHERE p.term = ANY((SELECT CASE"
    " WHEN k.packed_version = %(version)s::bigint THEN %(missing)s::text[]"
    " ELSE %(names)s::text[] END FROM k)::text[])"
    " UNION ALL SELECT 3, a.term, NULL, NULL, NULL, NULL, NULL,"
    " string_agg(int8send(a.chunk_id), '' ORDER BY a.chunk_id),"
    " string_agg(int4send(a.tf), '' ORDER BY a.chunk_id),"
    " string_agg(int4send(a.length), '' ORDER BY a.chunk_id)"
    " FROM {s}.postings a WHERE a.term = ANY(%(names)s::text[])"
    " AND a.chunk_id > (SELECT packed_upto FROM k) GROUP BY a.term"
    " UNION ALL SELECT 4, NULL, NULL, NULL, NULL, NULL, NULL,"
    " (SELECT coalesce(string_agg(int8send(r.chunk_id), '' ORDER BY r.chunk_id), '')"
    " FROM {s}.packed_removed r), NULL, NULL"
)

# A posting's BM25 share, as the exhaustive sum and the threshold algorithm compute it.
_SHARE = "q.idf * p.tf * %(k1p)s / (p.tf + %(k1)s * (%(omb)s + %(b)s * p.length / %(avg)s))"
_TERMS = "unnest(%(terms)s::text[], %(idfs)s::float8[]) AS q(term, idf)"
# The same, numbered: a chunk's shares added in the query's order, as the exhaustive
# sum adds them (its plan reads the terms one after another)
_ORDERED = "unnest(%(terms)s::text[], %(idfs)s::float8[]) WITH ORDINALITY AS q(term, idf, i)"
# The query's distinct terms (``i`` from 1), each with its IDF times its repeats.
_NAMES = "unnest(%(names)s::text[], %(weights)s::float8[]) WITH ORDINALITY AS r(term, w, i)"
# A term's postings best first: the order of ``postings_impact``.
_BEST = "ORDER BY p.impact DESC, p.chunk_id DESC"

# One chunk's exact score (``{0}``: the chunk's row), its postings probed by the primary
# key one by one (a lateral subquery: never a scan of a term's every posting).
_EXACT = (
    f"(SELECT sum({_SHARE} ORDER BY q.i) AS score FROM {_ORDERED}"
    " JOIN {{s}}.postings p ON p.term = q.term AND p.chunk_id = {0}.chunk_id)"
)

_EXHAUSTIVE = (
    f"SELECT p.chunk_id, sum({_SHARE}) AS score FROM {_TERMS}"
    " JOIN {s}.postings p ON p.term = q.term"
    " GROUP BY p.chunk_id ORDER BY score DESC, p.chunk_id LIMIT %(k)s"
)

# Planning: the impact at each (term i, depth) asked (rows (i, depth, impact)), and a
# first floor (row (0, 0, floor)): the k-th best exact score of the k chunks with the
# best partial sums over each term's best ``seeds[i]`` postings (:func:`_seeds`).
_PLAN = (
    "WITH r AS (SELECT * FROM " + _NAMES + "),"
    " seed AS (SELECT b.chunk_id FROM r CROSS JOIN LATERAL"
    " (SELECT p.chunk_id, r.w * p.tf * %(k1p)s / (p.tf + %(k1)s * (%(omb)s + %(b)s * p.length"
    f" / %(avg)s)) AS share FROM {{s}}.postings p WHERE p.term = r.term {_BEST}"
    " LIMIT %(seeds)s[r.i]) b GROUP BY b.chunk_id ORDER BY sum(b.share) DESC LIMIT %(k)s),"
    f" scored AS (SELECT e.score FROM seed CROSS JOIN LATERAL {_EXACT.format('seed')} e)"
    " SELECT 0::bigint, 0, CASE WHEN count(*) < %(k)s THEN 0 ELSE min(score) END::float8"
    " FROM scored"
    " UNION ALL SELECT x.i, x.depth, (SELECT p.impact::float8 FROM {s}.postings p"
    f" WHERE p.term = r.term {_BEST} OFFSET x.depth - 1 LIMIT 1)"
    " FROM unnest(%(at)s::bigint[], %(depths)s::int[]) AS x(i, depth) JOIN r ON r.i = x.i"
)

# Reading: each term's best ``depth`` postings; the chunks met, each with its partial
# sum and the bound of what it may still hold (the bounds of the terms it was not met
# in); the ids of those that can reach the floor (the best of the given one and the
# k-th best partial sum).
_READ = (
    "WITH r AS (SELECT * FROM unnest(%(names)s::text[], %(weights)s::float8[],"
    " %(bounds)s::float8[], %(depths)s::int[]) AS r(term, w, bound, depth)),"
    " met AS (SELECT b.chunk_id, sum(b.share) AS partial, sum(b.bound) AS bounded"
    " FROM r CROSS JOIN LATERAL (SELECT p.chunk_id, r.bound, r.w * p.tf * %(k1p)s"
    " / (p.tf + %(k1)s * (%(omb)s + %(b)s * p.length / %(avg)s)) AS share"
    f" FROM {{s}}.postings p WHERE p.term = r.term {_BEST} LIMIT r.depth) b"
    " GROUP BY b.chunk_id),"
    " floor AS (SELECT greatest(%(floor)s, coalesce((SELECT partial FROM met"
    f" ORDER BY partial DESC OFFSET %(k)s - 1 LIMIT 1), 0)) * (1 - {_FLOOR_SLACK}) AS v),"
    " alive AS (SELECT m.chunk_id FROM met m, floor"
    " WHERE m.partial + (%(total)s - m.bounded) >= floor.v)"
    " SELECT chunk_id FROM alive"
)

# The exact scores of the chunks left (``ids``), the best k.
_SCORE = (
    "SELECT a.chunk_id, e.score FROM unnest(%(ids)s::bigint[]) AS a(chunk_id)"
    f" CROSS JOIN LATERAL {_EXACT.format('a')} e ORDER BY e.score DESC, a.chunk_id LIMIT %(k)s"
)


def _seeds(names: list[str], frequencies: dict[str, int]) -> list[int]:
    """How many of each term's best postings the first floor is drawn from: all of
    the rarest terms' (the chunks holding them are the likeliest best), while they
    hold at most :data:`SEED_ALL` postings together; :data:`SEED` of the others."""
    out = [min(SEED, frequencies[t]) for t in names]
    held = 0
    for i in sorted(range(len(names)), key=lambda i: frequencies[names[i]]):
        held += frequencies[names[i]]
        if held > SEED_ALL:
            break
        out[i] = frequencies[names[i]]
    return out


def _plan(
    names: list[str],
    frequencies: dict[str, int],
    bounds: dict[str, dict[int, float]],
    target: float,
) -> dict[str, int] | None:
    """How deep to read each term (its frequency: all of it) so that the bounds of
    what is left unread sum below ``target``: greedily, each step the deeper read that
    lowers the sum most per posting read.  None if even reading everything does not
    (a floor of zero)."""
    options = {  # (depth, bound of what is left) from shallow to all of it
        t: [(d, b) for d, b in sorted(bounds[t].items())] + [(frequencies[t], 0.0)] for t in names
    }
    at = dict.fromkeys(names, 0)
    total = sum(options[t][0][1] for t in names)
    while total >= target:
        best, gain = None, 0.0
        for t in names:
            if at[t] + 1 < len(options[t]):
                (d0, b0), (d1, b1) = options[t][at[t]], options[t][at[t] + 1]
                if (b0 - b1) / (d1 - d0) > gain:
                    best, gain = t, (b0 - b1) / (d1 - d0)
        if best is None:
            return None
        total -= options[best][at[best]][1] - options[best][at[best] + 1][1]
        at[best] += 1
    return {t: options[t][at[t]][0] for t in names}


@dataclass(frozen=True)
class _Query:
    """A query's terms held by the collection (repeats kept) and their IDFs."""

    terms: list[str]
    idfs: list[float]

    def args(self, average: float, **more: Any) -> dict[str, Any]:
        return {
            "k1p": K1 + 1,
            "k1": K1,
            "omb": 1 - B,
            "b": B,
            "avg": average,
            "terms": self.terms,
            "idfs": self.idfs,
            **more,
        }
