"""The team index: a :class:`~citeline.core.index.DocumentIndex` in PostgreSQL + pgvector.

A *collection* is one schema (``citeline_<name>``) in a database:

- ``meta``: what built the collection (``core.index.reconcile_identity``);
- ``state``: one row, the generation (bumped by every commit that changes chunks;
  each bump is also a ``NOTIFY citeline_<name>`` readers listen to);
- ``files``: one row per document, with its content hash (readers compare it with
  their own copy before jumping to a line);
- ``chunks``: text, place and vector of every chunk (``vector(d)``, HNSW-indexed for
  cosine; vector ids are chunk ids);
- ``vectors``: content-addressed vectors no chunk uses any more (a removed or changed
  file's), kept a week so a revert, a rename or other chunk settings embed nothing;
- the keyword tables of ``keywords.py`` (BM25 as FTS5 computes it).

One writer at a time (a session advisory lock, taken by ``writing()``; a second
writer fails at once, naming the first), committing file by file as the embedded
index does, so a writer killed at any moment leaves every file wholly old or wholly
new; a big file is written a slice at a time, and the writer's own searches
meanwhile run on a second connection, so they read the committed collection (the
file's old version until its commit, then the new one) and never wait for the write.
Readers open the collection read-only (the server refuses their writes), check
the embedding model, and learn of commits through LISTEN/NOTIFY (``subscribe``).
Dense search is pgvector's HNSW (or exact, for measuring it); keyword search and
the document frequencies are SQL over the keyword tables; fusion, reranking and
answering stay in the reader.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg import sql

from citeline.backends.postgres import keywords
from citeline.backends.postgres.connection import (
    CONNECT_TIMEOUT,
    CollectionMissing,
    DatabaseError,
    Embedding,
    Listener,
    WriterBusy,
    connect,
    display_url,
    register_vector,
    schema_for,
    translate,
)
from citeline.core.documents import Chunk
from citeline.core.embedding import FloatMatrix
from citeline.core.errors import BackendError
from citeline.core.index import (
    FileRecord,
    FileUpdate,
    IndexCounts,
    IndexIdentity,
    NewChunk,
    Vector,
    check_identity,
    reconcile_identity,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = "1"
EF_SEARCH = 100  # HNSW candidates per search (at least k): recall against cost
PRUNE_AFTER_SECONDS = 7 * 24 * 3600
WRITE_SLICE = 256  # a file's chunks written between two calls of the writer's ``between``

_SCHEMA = """
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.state (
    id integer PRIMARY KEY CHECK (id = 1),
    generation bigint NOT NULL,
    changed_at double precision NOT NULL
);
INSERT INTO {s}.state VALUES (1, 0, extract(epoch FROM now())) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS {s}.files (
    id bigserial PRIMARY KEY,
    path text NOT NULL UNIQUE,
    kind text NOT NULL,
    title text NOT NULL,
    content_hash text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    indexed_at double precision NOT NULL,
    error text
);
ALTER TABLE {s}.files ADD COLUMN IF NOT EXISTS note text;
CREATE TABLE IF NOT EXISTS {s}.chunks (
    id bigserial PRIMARY KEY,
    file_id bigint NOT NULL REFERENCES {s}.files(id) ON DELETE CASCADE,
    ordinal integer NOT NULL,
    title text NOT NULL,
    title_from_content boolean NOT NULL,
    heading_path jsonb NOT NULL,
    text text NOT NULL,
    start_line integer,
    end_line integer,
    page integer,
    vector_key text NOT NULL,
    embedding vector({d}) NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_file ON {s}.chunks(file_id);
CREATE INDEX IF NOT EXISTS chunks_vector_key ON {s}.chunks(vector_key);
CREATE INDEX IF NOT EXISTS chunks_embedding ON {s}.chunks
    USING hnsw (embedding vector_cosine_ops);
CREATE TABLE IF NOT EXISTS {s}.vectors (
    key text PRIMARY KEY,
    embedding vector({d}) NOT NULL,
    last_used double precision NOT NULL
);
"""


_ESCAPED = "\uffff"  # a stored path that follows is the hex of its bytes


def _to_db(path: str) -> str:
    """A relative path as stored: itself, or (a name that is not valid UTF-8, whose
    surrogate escapes PostgreSQL's text cannot hold) its bytes in hex after U+FFFF."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return _ESCAPED + path.encode("utf-8", "surrogateescape").hex()
    return _ESCAPED + path.encode("utf-8").hex() if path.startswith(_ESCAPED) else path


def _from_db(value: str) -> str:
    """The inverse of :func:`_to_db`."""
    if value.startswith(_ESCAPED):
        return bytes.fromhex(value[1:]).decode("utf-8", "surrogateescape")
    return value


def _lock_key(schema: str) -> int:
    """The advisory lock of a collection's writer: a stable 63-bit number per schema."""
    import hashlib

    return int.from_bytes(hashlib.sha256(schema.encode()).digest()[:8], "big") >> 1


class PostgresIndex:
    """One collection.  Use from one thread (``subscribe``'s callback excepted)."""

    def __init__(
        self,
        url: str,
        collection: str,
        identity: IndexIdentity,
        *,
        read_only: bool,
        exact: bool = False,
        location: str | None = None,
    ) -> None:
        """``location`` is how the collection is shown (no secrets); by default the
        URL without its password and ``#collection``."""
        self._url = url
        self._collection = collection
        self._schema = schema_for(collection)
        self._s = sql.Identifier(self._schema)
        self._identity = identity
        self._read_only = read_only
        self._exact = exact
        self._location = location or f"{display_url(url)}#{collection}"
        self._conn: psycopg.Connection[Any] | None = None
        self._keywords: keywords.PostgresKeywordIndex | None = None
        self._listener: Listener | None = None
        self._locked = False  # this handle holds the writer's lock
        self._seen_generation = -1
        self._cache: dict[str, Any] = {}
        # One unit of work on the connection at a time: a hybrid search's keyword half
        # runs on another thread beside its dense half, and each has its own transaction.
        self._using = threading.RLock()
        # A writer's searches have a connection of their own: they read what is committed
        # while a file's transaction is open on the writer's (old or new, never a half).
        self._reads: psycopg.Connection[Any] | None = None
        self._reads_keywords: keywords.PostgresKeywordIndex | None = None
        self._reading = threading.RLock()
        self._between: Callable[[], None] | None = None  # inside writing(): its between
        self._open()

    # -- connections and errors -------------------------------------------------------

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self._s, d=sql.Literal(self._identity.dimension))

    def _connection(self) -> psycopg.Connection[Any]:
        """The open connection, reconnecting after a loss (DatabaseUnavailable if down)."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self._drop_connection()
        role = "reader" if self._read_only else "writer"
        try:
            conn = connect(self._url, read_only=self._read_only, role=role)
            if not self._read_only:
                self._create_extension(conn)
            if not register_vector(conn):
                conn.close()
                raise DatabaseError(
                    f"the team index {self._location}: the database has no pgvector"
                    " extension (CREATE EXTENSION vector, as its owner)"
                )
        except psycopg.Error as exc:
            raise translate(exc, self._location) from exc
        self._conn = conn
        self._keywords = keywords.PostgresKeywordIndex(conn, self._schema)
        return conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None
        self._keywords = None
        self._locked = False  # a session lock goes with its session

    def _run(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(connection)``, with driver errors turned into one-line BackendErrors.
        The connection is this call's alone until ``fn`` returns (a transaction ``fn``
        opens never nests in another thread's)."""
        return self._on(self._using, self._connection, self._drop_connection, fn)

    def _read(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``fn(connection)`` for a search: a reader's one connection (as :meth:`_run`),
        a writer's second one, so that a search between the slices of a file's write
        (``between``) reads the committed collection, never the open transaction, and
        never waits for it."""
        if self._read_only:
            return self._run(fn)
        return self._on(self._reading, self._reads_connection, self._drop_reads, fn)

    def _on(
        self,
        held: contextlib.AbstractContextManager[Any],
        opened: Callable[[], psycopg.Connection[Any]],
        dropped: Callable[[], None],
        fn: Callable[[psycopg.Connection[Any]], T],
    ) -> T:
        """``fn`` on the connection ``opened`` gives, with ``held`` (its lock) held:
        driver errors as one-line BackendErrors, a lost connection ``dropped``."""
        with held:
            conn = opened()
            try:
                return fn(conn)
            except psycopg.Error as exc:
                error = translate(exc, self._location)
                if conn.closed or conn.broken:
                    dropped()
                raise error from exc

    def _reads_connection(self) -> psycopg.Connection[Any]:
        """A writer's connection for its searches (read-only at the server), opened when
        the first search comes and again after a loss."""
        if self._reads is not None and not self._reads.closed and not self._reads.broken:
            return self._reads
        self._drop_reads()
        try:
            conn = connect(self._url, read_only=True, role="writer's searches")
            register_vector(conn)
        except psycopg.Error as exc:
            raise translate(exc, self._location) from exc
        self._reads = conn
        self._reads_keywords = keywords.PostgresKeywordIndex(conn, self._schema)
        return conn

    def _drop_reads(self) -> None:
        if self._reads is not None:
            with contextlib.suppress(Exception):
                self._reads.close()
        self._reads = None
        self._reads_keywords = None

    def _keywords_on(self, conn: psycopg.Connection[Any]) -> keywords.PostgresKeywordIndex:
        """The keyword index on ``conn``: the writer's searches' own, or the main one."""
        if conn is self._reads and self._reads_keywords is not None:
            return self._reads_keywords
        return self._kw

    def _pause(self) -> None:
        """Between two slices of a write: the running ``writing()`` block's ``between``
        (one that raises is not called again: the write goes on)."""
        between = self._between
        if between is None:
            return
        try:
            between()
        except Exception:
            log.debug("a step between two slices of a write failed", exc_info=True)
            self._between = None

    @property
    def _kw(self) -> keywords.PostgresKeywordIndex:
        self._connection()
        assert self._keywords is not None
        return self._keywords

    # -- opening ----------------------------------------------------------------------

    def _open(self) -> None:
        if self._read_only:
            self._run(self._check_reader)
        else:
            self._run(self._prepare_writer)
        self._seen_generation = self.generation()

    def _exists(self, conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute("SELECT to_regclass(%s)", (f"{self._schema}.state",)).fetchone()
        return row is not None and row[0] is not None

    def _check_reader(self, conn: psycopg.Connection[Any]) -> None:
        if not self._exists(conn):
            raise CollectionMissing(
                f"the team index {self._location} does not exist: index it first with"
                f" `citeline index --store URL --collection {self._collection}`"
            )
        check_identity(self, self._identity, f"the team index {self._location}")

    @staticmethod
    def _create_extension(conn: psycopg.Connection[Any]) -> None:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege:
            pass  # register_vector says that it is missing
        except psycopg.errors.UniqueViolation:
            pass  # created by another writer just now

    def _prepare_writer(self, conn: psycopg.Connection[Any]) -> None:
        key = _lock_key(self._schema)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key - 1,))  # DDL, one at a time
            conn.execute(self._q("CREATE SCHEMA IF NOT EXISTS {s}"))
            conn.execute(self._q(_SCHEMA))
            keywords.create_tables(conn, self._schema)
        if conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:  # type: ignore[index]
            try:
                self._reconcile(conn)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        elif self.get_meta("embedder") not in (None, self._identity.embedder_key):
            raise WriterBusy(
                f"the team index {self._location} is being written by another writer"
                f" ({self._other_writer(conn)}) with another embedding model; try again"
                " when it is done"
            )

    def _reconcile(self, conn: psycopg.Connection[Any]) -> None:
        reconcile_identity(self, self._identity)
        self.set_meta("schema", SCHEMA_VERSION)
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass"
            " AND attname = 'embedding'",
            (f"{self._schema}.chunks",),
        ).fetchone()
        if row is not None and int(row[0]) != self._identity.dimension:
            # another model of another dimension: the tables were just cleared
            with conn.transaction():
                conn.execute(self._q("DROP INDEX IF EXISTS {s}.chunks_embedding"))
                for table in ("chunks", "vectors"):
                    alter = "ALTER TABLE {s}.{t} ALTER COLUMN embedding TYPE vector({d})"
                    conn.execute(
                        sql.SQL(alter).format(
                            s=self._s,
                            t=sql.Identifier(table),
                            d=sql.Literal(self._identity.dimension),
                        )
                    )
                conn.execute(self._q(_SCHEMA))

    def _other_writer(self, conn: psycopg.Connection[Any]) -> str:
        row = conn.execute(
            "SELECT a.pid, coalesce(a.client_addr::text, 'local'), a.application_name,"
            " a.backend_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted"
            " AND ((l.classid::bigint << 32) | l.objid::bigint) = %s LIMIT 1",
            (_lock_key(self._schema),),
        ).fetchone()
        if row is None:
            return "unknown"
        return f"server pid {row[0]} from {row[1]}, {row[2]}, connected {row[3]:%Y-%m-%d %H:%M}"

    # -- what it is ----------------------------------------------------------------

    @property
    def identity(self) -> IndexIdentity:
        return self._identity

    @property
    def location(self) -> str:
        return self._location

    @property
    def collection(self) -> str | None:
        return self._collection

    @property
    def read_only(self) -> bool:
        return self._read_only

    # -- meta (for reconcile_identity and check_identity) ---------------------------

    def get_meta(self, key: str) -> str | None:
        def read(conn: psycopg.Connection[Any]) -> str | None:
            row = conn.execute(self._q("SELECT value FROM {s}.meta WHERE key = %s"), (key,))
            found = row.fetchone()
            return None if found is None else str(found[0])

        return self._run(read)

    def set_meta(self, key: str, value: str) -> None:
        self._writable()
        self._run(
            lambda conn: conn.execute(
                self._q(
                    "INSERT INTO {s}.meta VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                ),
                (key, value),
            )
        )

    def clear(self) -> None:
        """Forget every file, chunk and vector (another embedding model)."""
        self._writable()

        def clear(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                self._kw.clear()
                conn.execute(self._q("TRUNCATE {s}.chunks, {s}.files, {s}.vectors"))
                self._bump(conn)

        self._run(clear)

    def forget_chunks(self) -> None:
        """Forget files and chunks but keep their vectors (other chunk settings)."""
        self._writable()

        def forget(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                self._kw.clear()
                conn.execute(
                    self._q(
                        "INSERT INTO {s}.vectors (key, embedding, last_used)"
                        " SELECT DISTINCT ON (vector_key) vector_key, embedding, %s"
                        " FROM {s}.chunks"
                        " ON CONFLICT (key) DO UPDATE SET last_used = excluded.last_used"
                    ),
                    (time.time(),),
                )
                conn.execute(self._q("TRUNCATE {s}.chunks, {s}.files"))
                self._bump(conn)

        self._run(forget)

    # -- freshness --------------------------------------------------------------------

    def generation(self) -> int:
        def read(conn: psycopg.Connection[Any]) -> int:
            row = conn.execute(self._q("SELECT generation FROM {s}.state")).fetchone()
            return int(row[0]) if row else 0

        return self._run(read)

    def refresh(self) -> None:
        """Learn the collection's generation (one row); when it moved, forget what was
        cached and (for a reader) check that the model is still the configured one."""
        generation = self.generation()
        if generation == self._seen_generation:
            return
        self._cache.clear()
        if self._read_only:
            check_identity(self, self._identity, f"the team index {self._location}")
        self._seen_generation = generation

    def _cached(self, key: str, compute: Callable[[], T]) -> T:
        """A value computed once per generation (readers refresh before each search)."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]  # type: ignore[no-any-return]

    def subscribe(self, callback: Callable[[], None]) -> bool:
        if self._listener is None:
            self._listener = Listener(self._url, self._schema, callback)
            self._listener.listening.wait(CONNECT_TIMEOUT + 1)  # no commit missed from here
        return True

    def _bump(self, conn: psycopg.Connection[Any]) -> None:
        """Inside a write transaction: a new generation, announced at commit."""
        row = conn.execute(
            self._q(
                "UPDATE {s}.state SET generation = generation + 1,"
                " changed_at = extract(epoch FROM now()) RETURNING generation"
            )
        ).fetchone()
        assert row is not None
        conn.execute("SELECT pg_notify(%s, %s)", (self._schema, str(row[0])))
        self._seen_generation = int(row[0])
        self._cache.clear()

    # -- reading ----------------------------------------------------------------------

    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        wanted = None if paths is None else [_to_db(p) for p in dict.fromkeys(paths)]

        def read(conn: psycopg.Connection[Any]) -> dict[str, FileRecord]:
            query = (
                "SELECT id, path, kind, title, content_hash, size, mtime_ns, indexed_at, error,"
                " note FROM {s}.files"
            )
            if wanted is None:
                rows = conn.execute(self._q(query)).fetchall()
            else:
                rows = conn.execute(self._q(query + " WHERE path = ANY(%s)"), (wanted,)).fetchall()
            return {
                _from_db(row[1]): FileRecord(row[0], _from_db(row[1]), *row[2:]) for row in rows
            }

        return self._run(read)

    def file_errors(self) -> list[tuple[str, str]]:
        def read(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
            rows = conn.execute(
                self._q("SELECT path, error FROM {s}.files WHERE error IS NOT NULL")
            ).fetchall()
            return sorted((_from_db(p), str(e)) for p, e in rows)

        return self._cached("errors", lambda: self._read(read))

    def file_notes(self) -> list[tuple[str, str]]:
        def read(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
            rows = conn.execute(
                self._q("SELECT path, note FROM {s}.files WHERE note IS NOT NULL AND error IS NULL")
            ).fetchall()
            return sorted((_from_db(p), str(n)) for p, n in rows)

        return self._cached("notes", lambda: self._read(read))

    def content_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return {}

        def read(conn: psycopg.Connection[Any]) -> dict[str, str]:
            rows = conn.execute(
                self._q(
                    "SELECT path, content_hash FROM {s}.files"
                    " WHERE error IS NULL AND path = ANY(%s)"
                ),
                ([_to_db(p) for p in wanted],),
            ).fetchall()
            return {_from_db(p): str(h) for p, h in rows}

        return self._read(read)

    def counts(self) -> IndexCounts:
        def read(conn: psycopg.Connection[Any]) -> IndexCounts:
            files = conn.execute(
                self._q("SELECT count(*) FROM {s}.files WHERE error IS NULL")
            ).fetchone()
            chunks = conn.execute(self._q("SELECT count(*) FROM {s}.chunks")).fetchone()
            return IndexCounts(int(files[0]), int(chunks[0]))  # type: ignore[index]

        return self._cached("counts", lambda: self._read(read))

    def last_update(self) -> float | None:
        def read(conn: psycopg.Connection[Any]) -> float | None:
            row = conn.execute(self._q("SELECT max(indexed_at) FROM {s}.files")).fetchone()
            return None if row is None or row[0] is None else float(row[0])

        return self._cached("last_update", lambda: self._read(read))

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Chunk]:
        wanted = [int(i) for i in ids]
        if not wanted:
            return {}

        def read(conn: psycopg.Connection[Any]) -> dict[int, Chunk]:
            rows = conn.execute(
                self._q(
                    "SELECT c.id, f.path, c.title, c.heading_path, c.text, c.start_line,"
                    " c.end_line, c.page, c.ordinal, c.title_from_content"
                    " FROM {s}.chunks c JOIN {s}.files f ON f.id = c.file_id"
                    " WHERE c.id = ANY(%s)"
                ),
                (wanted,),
            ).fetchall()
            return {
                int(row[0]): Chunk(
                    path=_from_db(row[1]),
                    title=row[2],
                    heading_path=tuple(row[3]),
                    text=row[4],
                    start_line=row[5],
                    end_line=row[6],
                    page=row[7],
                    ordinal=row[8],
                    title_from_content=bool(row[9]),
                )
                for row in rows
            }

        return self._read(read)

    def dense_search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        """Nearest chunks by cosine: HNSW (``ef_search`` at least ``k``), or exact."""
        if k <= 0:
            return []
        vector = Embedding(query)

        def search(conn: psycopg.Connection[Any]) -> list[tuple[int, float]]:
            with conn.transaction():
                if self._exact:  # an expression the index cannot serve: a full scan
                    order = "(embedding <=> %s) + 0"
                else:
                    order = "embedding <=> %s"
                    conn.execute(
                        "SELECT set_config('hnsw.ef_search', %s, true)", (str(max(EF_SEARCH, k)),)
                    )
                rows = conn.execute(
                    self._q(
                        f"SELECT id, 1 - (embedding <=> %s) FROM {{s}}.chunks"
                        f" ORDER BY {order} LIMIT %s"
                    ),
                    (vector, vector, k),
                ).fetchall()
            return [(int(i), float(score)) for i, score in rows]

        return self._read(search)

    def script_means(self) -> dict[bool, FloatMatrix]:
        """Not computed for a team collection: its searches keep the query as embedded."""
        return {}

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        wanted = [int(i) for i in ids]
        if not wanted:
            return {}

        def read(conn: psycopg.Connection[Any]) -> dict[int, float]:
            rows = conn.execute(
                self._q("SELECT id, 1 - (embedding <=> %s) FROM {s}.chunks WHERE id = ANY(%s)"),
                (Embedding(query), wanted),
            ).fetchall()
            return {int(i): float(score) for i, score in rows}

        return self._read(read)

    def keyword_search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        return self._read(lambda conn: self._keywords_on(conn).search(terms, k))

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        return self._read(lambda conn: self._keywords_on(conn).document_frequencies(terms))

    # -- writing ----------------------------------------------------------------------

    def _writable(self) -> None:
        if self._read_only:
            raise BackendError(
                f"the team index {self._location} is open read-only: only its writer"
                " (`citeline index --store … --collection …`) changes it"
            )

    @contextlib.contextmanager
    def writing(self, between: Callable[[], None] | None = None) -> Iterator[None]:
        """The collection's one writer: a session advisory lock for the block (a second
        writer fails at once, naming the first).  Each file commits on its own."""
        self._writable()
        conn = self._connection()
        key = _lock_key(self._schema)
        if not self._locked:
            acquired = self._run(
                lambda c: c.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            )
            if not acquired or not acquired[0]:
                raise WriterBusy(
                    f"the team index {self._location} is being updated by another writer"
                    f" ({self._run(self._other_writer)}); try again when it is done"
                )
            self._locked = True
        try:
            self.refresh()
            self._between = between
            yield
            self._run(self._repack)
        finally:
            self._between = None
            if self._locked and not conn.closed and not conn.broken:
                with self._using, contextlib.suppress(psycopg.Error):
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            self._locked = False

    def _repack(self, conn: psycopg.Connection[Any]) -> None:
        """At the end of a writer's block: the keyword index's packed lists made again
        when many chunks changed since (``keywords.REPACK_SHARE``), in one transaction
        (readers keep searching the lists they have until it commits)."""
        if self._kw.pack_due():
            with conn.transaction():
                self._kw.pack()

    def vectors_for_keys(self, keys: Iterable[str]) -> dict[str, Vector]:
        wanted = sorted(set(keys))
        if not wanted:
            return {}

        def read(conn: psycopg.Connection[Any]) -> dict[str, Vector]:
            out: dict[str, Vector] = {}
            rows = conn.execute(
                self._q(
                    "SELECT DISTINCT ON (vector_key) vector_key, embedding FROM {s}.chunks"
                    " WHERE vector_key = ANY(%s)"
                ),
                (wanted,),
                binary=True,
            ).fetchall()
            out.update((str(k), v) for k, v in rows)
            rest = [k for k in wanted if k not in out]
            if rest:
                rows = conn.execute(
                    self._q("SELECT key, embedding FROM {s}.vectors WHERE key = ANY(%s)"),
                    (rest,),
                    binary=True,
                ).fetchall()
                out.update((str(k), v) for k, v in rows)
            return out

        return self._run(read)

    def import_vectors(self, batches: Iterable[Sequence[tuple[str, Vector]]]) -> int:
        """Seed the collection's reusable vectors (another index of the same model and
        text: same key, same vector), so its writer embeds only what is new."""
        self._writable()
        now = time.time()
        total = 0

        def write(conn: psycopg.Connection[Any], rows: Sequence[tuple[str, Vector]]) -> None:
            copy_in = self._q("COPY {s}.vectors_import (key, embedding) FROM STDIN (FORMAT BINARY)")
            with conn.transaction(), conn.cursor() as cur, cur.copy(copy_in) as copy:
                copy.set_types(["text", "vector"])
                for key, vector in rows:
                    copy.write_row((key, Embedding(vector)))

        def prepare(conn: psycopg.Connection[Any]) -> None:
            conn.execute(self._q("DROP TABLE IF EXISTS {s}.vectors_import"))
            conn.execute(
                self._q(
                    "CREATE UNLOGGED TABLE {s}.vectors_import (key text, embedding vector({d}))"
                )
            )

        self._run(prepare)
        for rows in batches:
            self._run(lambda conn, rows=rows: write(conn, rows))  # type: ignore[misc]
            total += len(rows)

        def merge(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute(
                    self._q(
                        "INSERT INTO {s}.vectors (key, embedding, last_used)"
                        " SELECT DISTINCT ON (key) key, embedding, %s FROM {s}.vectors_import"
                        " ON CONFLICT (key) DO UPDATE SET last_used = excluded.last_used"
                    ),
                    (now,),
                )
                conn.execute(self._q("DROP TABLE {s}.vectors_import"))

        self._run(merge)
        return total

    def add_vectors(self, vectors: Mapping[str, Vector]) -> None:
        """Keep embedded vectors now, in their own transaction (an interrupted run keeps
        its embedding work); a file that uses them later finds them by key."""
        self._writable()
        if not vectors:
            return
        now = time.time()

        def write(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    self._q(
                        "INSERT INTO {s}.vectors (key, embedding, last_used) VALUES (%s, %s, %s)"
                        " ON CONFLICT (key) DO UPDATE SET last_used = excluded.last_used"
                    ),
                    [(key, Embedding(v), now) for key, v in sorted(vectors.items())],
                )

        self._run(write)

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self._writable()
        self._run(
            lambda conn: conn.execute(
                self._q("UPDATE {s}.files SET size = %s, mtime_ns = %s WHERE path = %s"),
                (size, mtime_ns, _to_db(path)),
            )
        )

    def _retire(self, conn: psycopg.Connection[Any], ids: list[int], now: float) -> None:
        """Inside a write: the chunks' terms go, their vectors move to ``vectors``."""
        if not ids:
            return
        self._kw.remove(ids)
        conn.execute(
            self._q(
                "INSERT INTO {s}.vectors (key, embedding, last_used)"
                " SELECT DISTINCT ON (vector_key) vector_key, embedding, %s FROM {s}.chunks"
                " WHERE id = ANY(%s)"
                " ON CONFLICT (key) DO UPDATE SET last_used = excluded.last_used"
            ),
            (now, ids),
        )

    def _chunk_ids(self, conn: psycopg.Connection[Any], paths: Sequence[str]) -> list[int]:
        rows = conn.execute(
            self._q(
                "SELECT c.id FROM {s}.chunks c JOIN {s}.files f ON f.id = c.file_id"
                " WHERE f.path = ANY(%s) ORDER BY c.id"
            ),
            ([_to_db(p) for p in paths],),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def replace_file(self, update: FileUpdate) -> tuple[list[int], list[int]]:
        """One transaction: the file's old chunks out (their vectors kept by key), the
        new ones in with their vectors and terms, :data:`WRITE_SLICE` at a time with the
        writing block's ``between`` after each (its searches, on the writer's second
        connection, find the file as it was until the commit), a new generation
        announced."""
        self._writable()
        now = time.time()
        path, chunks = update.path, update.chunks
        record = update.file_row(now)

        def write(conn: psycopg.Connection[Any]) -> tuple[list[int], list[int]]:
            with conn.transaction():
                removed = self._chunk_ids(conn, [path])
                self._retire(conn, removed, now)
                stored = _to_db(path)
                conn.execute(self._q("DELETE FROM {s}.files WHERE path = %s"), (stored,))
                row = conn.execute(
                    self._q(
                        "INSERT INTO {s}.files (path, kind, title, content_hash, size, mtime_ns,"
                        " indexed_at, error, note) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                        " RETURNING id"
                    ),
                    (stored, *record),
                ).fetchone()
                assert row is not None
                file_id = int(row[0])
                added: list[int] = []
                for start in range(0, len(chunks), WRITE_SLICE):
                    if start:
                        self._pause()  # searches meanwhile read the committed collection
                    end = start + WRITE_SLICE
                    part = chunks[start:end]
                    ids = self._insert_chunks(conn, file_id, part, update.chunk_vectors[start:end])
                    self._kw.add_many(
                        [(cid, item.terms) for cid, item in zip(ids, part, strict=True)]
                    )
                    added.extend(ids)
                if removed or added:
                    self._bump(conn)
            return removed, added

        return self._run(write)

    def _insert_chunks(
        self,
        conn: psycopg.Connection[Any],
        file_id: int,
        chunks: Sequence[NewChunk],
        vectors: FloatMatrix,
    ) -> list[int]:
        """Inside a file's write: some of its chunks in, with their vectors; their ids."""
        if not chunks:
            return []
        ids: list[int] = []
        with conn.cursor() as cur:
            cur.executemany(
                self._q(
                    "INSERT INTO {s}.chunks (file_id, ordinal, title,"
                    " title_from_content, heading_path, text, start_line, end_line,"
                    " page, vector_key, embedding)"
                    " VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s)"
                    " RETURNING id"
                ),
                [
                    (
                        file_id,
                        item.chunk.ordinal,
                        item.chunk.title,
                        item.chunk.title_from_content,
                        json.dumps(list(item.chunk.heading_path), ensure_ascii=False),
                        item.chunk.text,
                        item.chunk.start_line,
                        item.chunk.end_line,
                        item.chunk.page,
                        item.vector_key,
                        Embedding(vector),
                    )
                    for item, vector in zip(chunks, vectors, strict=True)
                ],
                returning=True,
            )
            while True:
                found = cur.fetchone()
                assert found is not None
                ids.append(int(found[0]))
                if not cur.nextset():
                    break
        return ids

    def remove_files(self, paths: Iterable[str]) -> list[int]:
        self._writable()
        gone = list(paths)
        if not gone:
            return []
        now = time.time()

        def write(conn: psycopg.Connection[Any]) -> list[int]:
            with conn.transaction():
                removed = self._chunk_ids(conn, gone)
                self._retire(conn, removed, now)
                conn.execute(
                    self._q("DELETE FROM {s}.files WHERE path = ANY(%s)"),
                    ([_to_db(p) for p in gone],),
                )
                if removed:
                    self._bump(conn)
            return removed

        return self._run(write)

    def prune_vectors(self) -> int:
        """Drop kept vectors no chunk has used for a week."""
        self._writable()
        cutoff = time.time() - PRUNE_AFTER_SECONDS

        def prune(conn: psycopg.Connection[Any]) -> int:
            cur = conn.execute(self._q("DELETE FROM {s}.vectors WHERE last_used < %s"), (cutoff,))
            return int(cur.rowcount)

        return self._run(prune)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        self._drop_reads()
        self._drop_connection()
