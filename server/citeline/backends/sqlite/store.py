"""The embedded index's source of truth: an SQLite database of files, chunks and vectors.

Tables:
- ``meta``: what built the index (embedding model fingerprint, dimension, chunk
  settings) and a ``generation`` counter bumped by every commit that changes
  chunks, so a vector index saved at another generation is known to be stale.
- ``files``: one row per document seen, with its content hash, size, mtime, the
  load error if it could not be read, and a note of what loading left out.  A path
  is its text, or (a name that is not valid UTF-8) its exact bytes as a BLOB, so
  every name is stored losslessly and found again.
- ``chunks``: the text and location (heading path, line span or page) of every
  chunk, and the key of the vector that embeds it.  Chunk ids are vector ids.
- ``vectors``: content-addressed embeddings (key = hash of the embedded text),
  so an unchanged text is never embedded twice, even across renames.
- ``chunk_terms``: the FTS5 keyword index (BM25), one row per chunk (rowid =
  chunk id): ``fts5.py``.

A file's chunks are replaced in one transaction with its file row, so a crash
leaves either the old or the new version of each file, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.backends.sqlite import clean_close, fts5
from citeline.backends.sqlite.fts5 import Fts5KeywordIndex
from citeline.core.documents import Chunk
from citeline.core.errors import BackendError, DiskFull, IndexDamaged, disk_full_message
from citeline.core.index import FileRecord, FileUpdate, IndexCounts, NewChunk, Vector

log = logging.getLogger(__name__)

SCHEMA_VERSION = "2"
INSERT_SLICE = 128  # chunks written between two calls of a big file's ``between``

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    indexed_at REAL NOT NULL,
    error TEXT,
    note TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    title TEXT NOT NULL,
    title_from_content INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    start_line INTEGER,
    end_line INTEGER,
    page INTEGER,
    vector_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_error ON files(error) WHERE error IS NOT NULL;
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE INDEX IF NOT EXISTS chunks_vector ON chunks(vector_key);
CREATE TABLE IF NOT EXISTS vectors (
    key TEXT PRIMARY KEY,
    vector BLOB NOT NULL,
    last_used REAL NOT NULL
);
"""

_TABLES = (*fts5.TABLES, "chunks", "files", "vectors", "meta")


def path_key(path: str) -> str | bytes:
    """How a relative path is stored: its text, or its bytes when it is not valid UTF-8
    (a name Python decoded with surrogate escapes), so every name round-trips."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape")


def path_of(value: str | bytes) -> str:
    """The relative path a stored value names (the inverse of :func:`path_key`)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _file_record(row: Any) -> FileRecord:
    """A ``files`` row (the columns in ``FileRecord``'s order) as a record."""
    record = FileRecord._make(row)
    if not isinstance(record.path, str):  # a name that is not valid UTF-8: its bytes
        record = record._replace(path=path_of(record.path))
    return record


class StoreError(BackendError):
    """The index database cannot be opened or used; one line for the user."""


class StoreDamaged(StoreError, IndexDamaged):
    """The index database is damaged (not a database, malformed, not a file): it is
    derived from the documents, so it is moved aside and rebuilt (``EmbeddedIndex``)."""


_DAMAGE = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
_FILES = ("", "-wal", "-shm", "-journal")  # the database and SQLite's files beside it


def database_files(path: Path) -> list[Path]:
    """The database file and the journal files SQLite keeps beside it."""
    return [path.with_name(path.name + suffix) for suffix in _FILES]


def _damaged(exc: sqlite3.Error, path: Path) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _DAMAGE:
        return True
    if code is not None and code & 0xFF == sqlite3.SQLITE_CANTOPEN:
        # A folder (or a FIFO...) where the database or its journal should be; not a
        # permission problem, which is the user's to fix and is reported as it is.
        return any(f.is_symlink() or (f.exists() and not f.is_file()) for f in database_files(path))
    return False


class _Connection(sqlite3.Connection):
    """A connection whose statements report a damaged database as :class:`StoreDamaged`
    (one line, never a traceback), whatever query meets the damage first."""

    store_path: Path = Path()
    read_only_snapshot = False  # opened read-only because the disk is full

    def execute(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        try:
            return super().execute(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise _translated(exc, self.store_path, self.read_only_snapshot) from exc

    def executemany(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        try:
            return super().executemany(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise _translated(exc, self.store_path, self.read_only_snapshot) from exc

    def executescript(self, *args: Any, **kwargs: Any) -> sqlite3.Cursor:
        try:
            return super().executescript(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise _translated(exc, self.store_path, self.read_only_snapshot) from exc


def _disk_full(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_FULL


def _io_error(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN)


def no_space_left(folder: Path) -> bool:
    """Whether the file system holding ``folder`` has (almost) no space left."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return False
    return info.f_bavail * info.f_frsize < 256 * 1024


def _translated(exc: sqlite3.DatabaseError, path: Path, snapshot: bool = False) -> Exception:
    code = getattr(exc, "sqlite_errorcode", 0) or 0
    if _disk_full(exc) or (snapshot and code & 0xFF == sqlite3.SQLITE_READONLY):
        return DiskFull(disk_full_message(path.parent))
    if _io_error(exc) and no_space_left(path.parent):
        return DiskFull(disk_full_message(path.parent))
    if _damaged(exc, path):
        # Damage met in use: the next open rebuilds, whatever its own check sees.
        with contextlib.suppress(OSError):
            rebuild_marker(path).touch()
        return StoreDamaged(f"index database {path} is damaged ({exc})")
    return exc


def rebuild_marker(path: Path) -> Path:
    """The file that says the database at ``path`` was found damaged while in use."""
    return path.with_name(path.name + ".needs-rebuild")


def read_vectors(
    path: Path, embedder_key: str, dimension: int, batch: int = 4096
) -> Iterator[list[tuple[str, npt.NDArray[np.float32]]]]:
    """The vectors of the index database at ``path``, opened read-only, in batches;
    StoreError unless it was built by the model ``embedder_key`` names."""
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot read index database {path}: {exc}") from exc
    try:
        if row is None or row[0] != embedder_key:
            raise StoreError(
                f"index database {path} was built by another embedding model; its vectors"
                " cannot be reused"
            )
        cursor = db.execute("SELECT key, vector FROM vectors ORDER BY key")
        while rows := cursor.fetchmany(batch):
            yield [(str(k), np.frombuffer(v, dtype=np.float32, count=dimension)) for k, v in rows]
    finally:
        db.close()


class SqliteStore:
    """SQLite-backed store.  One instance per thread; SQLite serialises writers.

    Opening checks the database (``PRAGMA quick_check``: about a millisecond per
    megabyte) unless it is exactly as this store's last clean close left it
    (``clean_close``); a damaged one raises :class:`StoreDamaged`, as does any later
    statement that meets damage the check could not see.
    """

    _db: sqlite3.Connection

    def __init__(self, path: Path, *, snapshot: bool = False) -> None:
        """``snapshot``: open the database as it is on disk, read-only, without the
        journal files WAL mode needs (what a full disk leaves possible); every write
        is :class:`DiskFull`."""
        self.path = path
        self.snapshot = snapshot
        try:
            if snapshot:
                self._open_snapshot()
                return
            self._open()
        except StoreDamaged:
            self.close()
            raise
        except sqlite3.DatabaseError as exc:
            self.close()
            if _disk_full(exc) or (_io_error(exc) and no_space_left(path.parent)):
                raise DiskFull(disk_full_message(path.parent)) from exc
            if _damaged(exc, path):
                raise StoreDamaged(f"index database {path} is damaged ({exc})") from exc
            raise StoreError(f"cannot open the index database {path}: {exc}") from exc

    def _open_snapshot(self) -> None:
        self._opened = False  # never stamped: nothing of it was checked or written
        if not self.path.is_file():
            raise DiskFull(disk_full_message(self.path.parent))
        uri = f"{self.path.absolute().as_uri()}?mode=ro&immutable=1"
        db = sqlite3.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, factory=_Connection
        )
        assert isinstance(db, _Connection)
        db.store_path = self.path
        db.read_only_snapshot = True
        self._db = db
        db.execute("SELECT count(*) FROM chunks").fetchone()
        self.keywords = Fts5KeywordIndex(db)

    def _open(self) -> None:
        path = self.path
        self._opened = False  # a clean close is recorded only for a store opened whole
        unchanged = clean_close.consume(path)
        if rebuild_marker(path).exists():
            raise StoreDamaged(f"index database {path} was found damaged while in use")
        db = sqlite3.connect(
            path,
            timeout=30.0,
            isolation_level=None,
            check_same_thread=False,
            factory=_Connection,
        )
        assert isinstance(db, _Connection)
        db.store_path = path
        self._db = db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        if not unchanged:  # not as a clean close left it: anything may have happened
            log.debug("checking %s: not as its last clean close left it", path)
            problems = [str(r[0]) for r in db.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                raise StoreDamaged(f"index database {path} is damaged ({'; '.join(problems)})")
        if self._schema_version() not in (None, SCHEMA_VERSION):
            # The index is a cache of the documents: an old format is rebuilt.
            log.info("index at %s has an older format; rebuilding it", path)
            for table in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {table}")
        db.executescript(_SCHEMA + fts5.SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(files)")}
        if "note" not in columns:  # an index from before notes: same format otherwise
            db.execute("ALTER TABLE files ADD COLUMN note TEXT")
        # What every update reports (errors, notes) is read from partial indexes: the
        # files with one, not a scan of every file (2-3 ms of CPU each at 25k files).
        db.execute("CREATE INDEX IF NOT EXISTS files_note ON files(note) WHERE note IS NOT NULL")
        if self.get_meta("schema") != SCHEMA_VERSION:  # no write when it is: a full disk
            self.set_meta("schema", SCHEMA_VERSION)  # leaves an index readable
        db.execute("SELECT count(*) FROM chunks").fetchone()
        self.keywords = Fts5KeywordIndex(db)
        self._opened = True

    def close(self) -> None:
        """Close the database; after a store that was opened whole and met no damage,
        leave the stamp that spares the next open its check."""
        db: sqlite3.Connection | None = getattr(self, "_db", None)
        if db is None:
            return
        db.close()
        if getattr(self, "_opened", False) and not rebuild_marker(self.path).exists():
            self._opened = False  # recorded once, whatever closes it again
            try:
                clean_close.record(self.path)
            except OSError as exc:  # a full disk: the next open checks the database
                log.info("no clean-close stamp for %s: %s", self.path, exc)

    def _schema_version(self) -> str | None:
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not exists:
            return None
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        return None if row is None else str(row[0])

    # -- meta ---------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        if not self._db.in_transaction and self.get_meta(key) == value:
            return  # nothing to write: an index on a full disk opens and reads
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def _bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation + 1))

    # -- files --------------------------------------------------------------

    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        columns = "id, path, kind, title, content_hash, size, mtime_ns, indexed_at, error, note"
        if paths is None:  # every start's catch-up: 25,000 rows in 0.07 s
            rows = self._db.execute(f"SELECT {columns} FROM files").fetchall()
            return {record.path: record for record in map(_file_record, rows)}
        wanted = sorted({path_key(path) for path in paths}, key=repr)
        out: dict[str, FileRecord] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self._db.execute(
                f"SELECT {columns} FROM files WHERE path IN ({marks})", part
            ):
                record = _file_record(row)
                out[record.path] = record
        return out

    def file_errors(self) -> list[tuple[str, str]]:
        # No ORDER BY: sorting in SQL would walk the path index over every file
        # instead of the partial index over the files with an error.
        rows = self._db.execute("SELECT path, error FROM files WHERE error IS NOT NULL").fetchall()
        return sorted((path_of(p), str(e)) for p, e in rows)

    def file_notes(self) -> list[tuple[str, str]]:
        rows = self._db.execute(
            "SELECT path, note FROM files WHERE note IS NOT NULL AND error IS NULL"
        ).fetchall()
        return sorted((path_of(p), str(n)) for p, n in rows)

    def content_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(paths))
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT path, content_hash FROM files WHERE error IS NULL AND path IN ({marks})",
                part,
            )
            out.update((str(p), str(h)) for p, h in rows)
        return out

    def chunk_ids_for(self, path: str) -> list[int]:
        rows = self._db.execute(
            "SELECT chunks.id FROM chunks JOIN files ON files.id = chunks.file_id"
            " WHERE files.path = ?",
            (path_key(path),),
        ).fetchall()
        return [int(r[0]) for r in rows]

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Record a new mtime for a file whose content did not change."""
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?",
            (size, mtime_ns, path_key(path)),
        )

    def replace_file(
        self, update: FileUpdate, between: Callable[[], None] | None = None
    ) -> tuple[list[int], list[int]]:
        """Atomically replace a file's chunks (``update.chunk_vectors`` is the vector
        index's: the store keeps vectors by key).  Returns (removed ids, added ids).

        One transaction, staged so that ``between`` (the daemon's searches) can run
        every :data:`INSERT_SLICE` vectors and chunks while a big file is written: the new chunks
        are added beside the old ones (which stay readable: the in-memory indexes
        searches use know only them), and only at the end are the old chunks deleted
        and the file's record set, which is short.  Other connections see the old
        file or the new one, never a part of it; a kill before COMMIT keeps the old."""
        path, chunks = update.path, update.chunks
        now = time.time()
        with self._transaction():
            row = self._db.execute(
                "SELECT id FROM files WHERE path = ?", (path_key(path),)
            ).fetchone()
            removed = self.chunk_ids_for(path) if row is not None else []
            record = update.file_row(now)
            if row is None:
                cursor = self._db.execute(
                    "INSERT INTO files(path, kind, title, content_hash, size, mtime_ns,"
                    " indexed_at, error, note)"
                    " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (path_key(path), *record),
                )
                assert cursor.lastrowid is not None
                file_id = int(cursor.lastrowid)
            else:
                file_id = int(row[0])
            fresh = list(update.new_vectors.items())
            for start in range(0, len(fresh), INSERT_SLICE):
                if start and between is not None:
                    between()
                self._put_vectors(dict(fresh[start : start + INSERT_SLICE]), now)
            added: list[int] = []
            for start in range(0, len(chunks), INSERT_SLICE):
                if (start or len(fresh) > INSERT_SLICE) and between is not None:
                    between()
                for item in chunks[start : start + INSERT_SLICE]:
                    added.append(self._insert_chunk(file_id, item))
            if removed:
                self.keywords.remove(removed)
                self._db.executemany(
                    "DELETE FROM chunks WHERE id = ?", [(chunk_id,) for chunk_id in removed]
                )
            if row is not None:
                self._db.execute(
                    "UPDATE files SET kind = ?, title = ?, content_hash = ?, size = ?,"
                    " mtime_ns = ?, indexed_at = ?, error = ?, note = ? WHERE id = ?",
                    (*record, file_id),
                )
            if removed or added:
                self._bump_generation()
        return removed, added

    def _insert_chunk(self, file_id: int, item: NewChunk) -> int:
        c = item.chunk
        cur = self._db.execute(
            "INSERT INTO chunks(file_id, ordinal, title, title_from_content, heading_path,"
            " text, start_line, end_line, page, vector_key)"
            " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                file_id,
                c.ordinal,
                c.title,
                int(c.title_from_content),
                json.dumps(list(c.heading_path), ensure_ascii=False),
                c.text,
                c.start_line,
                c.end_line,
                c.page,
                item.vector_key,
            ),
        )
        assert cur.lastrowid is not None
        chunk_id = int(cur.lastrowid)
        self.keywords.add(chunk_id, item.terms)
        return chunk_id

    def remove_files(self, paths: Iterable[str]) -> list[int]:
        """Delete files and their chunks in one transaction; returns removed chunk ids."""
        removed: list[int] = []
        with self._transaction():
            for path in paths:
                ids = self.chunk_ids_for(path)
                self.keywords.remove(ids)
                removed.extend(ids)
                self._db.execute("DELETE FROM files WHERE path = ?", (path_key(path),))
            if removed:
                self._bump_generation()
        return removed

    def clear(self) -> None:
        """Forget every file, chunk and vector (the model or settings changed)."""
        with self._transaction():
            self.keywords.clear()
            self._db.execute("DELETE FROM chunks")
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM vectors")
            self._bump_generation()

    def forget_chunks(self) -> None:
        """Forget files and chunks but keep vectors (chunking changed, the model did not)."""
        with self._transaction():
            self.keywords.clear()
            self._db.execute("DELETE FROM chunks")
            self._db.execute("DELETE FROM files")
            self._bump_generation()

    # -- vectors ------------------------------------------------------------

    def add_vectors(self, vectors: Mapping[str, Vector]) -> None:
        """Keep vectors by content key now, in their own transaction (see
        ``DocumentIndex.add_vectors``); a key already stored is only marked used."""
        if not vectors:
            return
        with self._transaction():
            self._put_vectors(vectors, time.time())

    def _put_vectors(self, vectors: Mapping[str, Vector], now: float) -> None:
        self._db.executemany(
            "INSERT INTO vectors(key, vector, last_used) VALUES(?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET last_used = excluded.last_used",
            [(k, np.asarray(v, np.float32).tobytes(), now) for k, v in vectors.items()],
        )

    def vectors_for_keys(self, keys: Iterable[str], dimension: int) -> dict[str, Vector]:
        wanted = list(set(keys))
        out: dict[str, Vector] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part)
            for key, blob in rows:
                out[str(key)] = np.frombuffer(blob, dtype=np.float32, count=dimension)
        return out

    def iter_chunk_vectors(
        self, dimension: int, batch: int = 4096
    ) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
        """All (chunk ids, vectors) in batches: what the vector index is rebuilt from."""
        cursor = self._db.execute(
            "SELECT chunks.id, vectors.vector FROM chunks"
            " JOIN vectors ON vectors.key = chunks.vector_key"
            " ORDER BY chunks.id"
        )
        while True:
            rows = cursor.fetchmany(batch)
            if not rows:
                return
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
                len(rows), dimension
            )
            yield ids, vecs

    def sample_chunk_vectors(
        self, dimension: int, limit: int
    ) -> Iterator[tuple[str, npt.NDArray[np.float32]]]:
        """(text, vector) of about ``limit`` chunks spread over the index (every n-th
        chunk id), for statistics of the whole folder at a bounded cost."""
        chunks = int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        step = max(1, -(-chunks // max(limit, 1)))
        cursor = self._db.execute(
            "SELECT chunks.text, vectors.vector FROM chunks"
            " JOIN vectors ON vectors.key = chunks.vector_key"
            " WHERE chunks.id % ? = 0",
            (step,),
        )
        for text, blob in cursor:
            yield str(text), np.frombuffer(blob, dtype=np.float32, count=dimension)

    def prune_vectors(
        self, older_than_seconds: float = 7 * 24 * 3600, every_seconds: float = 3600
    ) -> int:
        """Drop vectors no chunk uses that were last used long ago; at most once every
        ``every_seconds`` (it reads the whole vectors table: 0.2 s at 100k chunks)."""
        now = time.time()
        last = float(self.get_meta("pruned_at") or 0)
        if 0 <= now - last < every_seconds:
            return 0
        cutoff = now - older_than_seconds
        with self._transaction():
            self.set_meta("pruned_at", repr(now))
            cur = self._db.execute(
                "DELETE FROM vectors WHERE last_used < ?"
                " AND key NOT IN (SELECT vector_key FROM chunks)",
                (cutoff,),
            )
        return cur.rowcount

    # -- chunks -------------------------------------------------------------

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Chunk]:
        out: dict[int, Chunk] = {}
        for start in range(0, len(ids), 500):
            part = [int(i) for i in ids[start : start + 500]]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                "SELECT chunks.id, files.path, chunks.title, chunks.heading_path, chunks.text,"
                " chunks.start_line, chunks.end_line, chunks.page, chunks.ordinal,"
                " chunks.title_from_content"
                " FROM chunks JOIN files ON files.id = chunks.file_id"
                f" WHERE chunks.id IN ({marks})",
                part,
            )
            for row in rows:
                out[int(row[0])] = Chunk(
                    path=path_of(row[1]),
                    title=row[2],
                    heading_path=tuple(json.loads(row[3])),
                    text=row[4],
                    start_line=row[5],
                    end_line=row[6],
                    page=row[7],
                    ordinal=row[8],
                    title_from_content=bool(row[9]),
                )
        return out

    def counts(self) -> IndexCounts:
        # All files less those with an error: two counts over indexes, not a table scan.
        every = self._db.execute("SELECT count(*) FROM files").fetchone()[0]
        failed = self._db.execute("SELECT count(*) FROM files WHERE error IS NOT NULL").fetchone()[
            0
        ]
        files = int(every) - int(failed)
        chunks = self._db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return IndexCounts(int(files), int(chunks))

    def last_update(self) -> float | None:
        row = self._db.execute("SELECT max(indexed_at) FROM files").fetchone()
        return None if row[0] is None else float(row[0])

    # -- transactions -------------------------------------------------------

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already (it does on some
        errors); the error that led here is the one reported."""
        with contextlib.suppress(Exception):
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            if _COMMIT_HOOK is not None:
                _COMMIT_HOOK.before_commit()
        except BaseException:
            self._rollback()
            raise
        try:
            self._db.execute("COMMIT")
        except BaseException:  # a full disk at commit: the transaction must not stay open
            self._rollback()
            raise
        if _COMMIT_HOOK is not None:
            _COMMIT_HOOK.after_commit()


class _CommitHook:
    """Test-only: a pause inside every write transaction, just before COMMIT, so a test
    can kill the process there (tests/torture/test_kill.py).  Enabled by the
    environment: ``CITELINE_TEST_COMMIT_LOG`` names a file that gets ``begin N`` when
    the pause starts and ``end N`` after the commit; ``CITELINE_TEST_COMMIT_PAUSE`` is
    the pause in seconds (default 0.05)."""

    def __init__(self, log_file: str, pause: float) -> None:
        self.log_file = log_file
        self.pause = pause
        self.count = 0

    def _write(self, line: str) -> None:
        with open(self.log_file, "a", encoding="utf-8") as handle:
            handle.write(f"{line} {os.getpid()}\n")

    def before_commit(self) -> None:
        self.count += 1
        self._write(f"begin {self.count}")
        time.sleep(self.pause)

    def after_commit(self) -> None:
        self._write(f"end {self.count}")


def _commit_hook() -> _CommitHook | None:
    log_file = os.environ.get("CITELINE_TEST_COMMIT_LOG")
    if not log_file:
        return None
    return _CommitHook(log_file, float(os.environ.get("CITELINE_TEST_COMMIT_PAUSE", "0.05")))


_COMMIT_HOOK = _commit_hook()
