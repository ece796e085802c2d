"""Connections to the team index's database: URLs shown without secrets, collection
names, pgvector's wire format, one-line errors, and the listener that hears a
writer's commits (LISTEN/NOTIFY).

Credentials come from wherever libpq looks: the URL, ``PGPASSWORD`` and the other
``PG*`` variables, ``~/.pgpass`` and ``pg_service.conf`` (``postgresql:///?service=team``);
Citeline never stores them and never shows a password.
"""

from __future__ import annotations

import logging
import re
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import Dumper, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import Format
from psycopg.types import TypeInfo

from citeline.core.embedding import FloatMatrix
from citeline.core.errors import BackendError, IndexUnavailable

log = logging.getLogger(__name__)

SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT = 5  # seconds; a dead server is reported, not waited for
STATEMENT_TIMEOUT_MS = 60_000  # a reader's query; the writer's have none
COLLECTION_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}")
LISTEN_POLL = 1.0  # seconds between checks that the listener should stop
LIVENESS_SECONDS = 5.0  # the listener pings its server this often
RETRY_SECONDS = 1.0


class DatabaseUnavailable(IndexUnavailable):
    """The database server cannot be reached (down, restarting, network gone)."""


class CollectionMissing(IndexUnavailable):
    """The collection does not exist (yet): its writer has not run."""


class WriterBusy(BackendError):
    """Another writer is updating the collection."""


class DatabaseError(BackendError):
    """The database refused something (permissions, a missing extension)."""


def is_postgres_url(store: str) -> bool:
    return store.startswith(SCHEMES)


def display_url(url: str) -> str:
    """The URL without its password (or any secret parameter), for status and logs."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unreadable URL)"
    user = parts.get("user")
    host = str(parts.get("host") or "")
    port = parts.get("port")
    where = "" if host.startswith("/") else host
    text = "postgresql://" + (f"{user}@" if user else "") + where
    text += f":{port}" if port and where else ""
    text += "/" + str(parts.get("dbname") or "")
    query = [f"host={host}"] if host.startswith("/") else []
    if parts.get("service"):
        query.append(f"service={parts['service']}")
    return text + ("?" + "&".join(query) if query else "")


def check_collection(name: str) -> str:
    """``name`` if it is a valid collection name, else a BackendError saying what is."""
    if not COLLECTION_NAME.fullmatch(name):
        raise BackendError(
            f"collection name {name!r}: use 1-48 lower-case letters, digits or underscores,"
            " starting with a letter"
        )
    return name


def schema_for(collection: str) -> str:
    """The schema that holds a collection's tables."""
    return f"citeline_{check_collection(collection)}"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def translate(exc: psycopg.Error, where: str) -> BackendError:
    """A driver error as the one-line error the user sees."""
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)) and not isinstance(
        exc, pg_errors.QueryCanceled
    ):
        return DatabaseUnavailable(f"the team index {where} cannot be reached: {first_line(exc)}")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return DatabaseError(f"the team index {where}: permission denied ({first_line(exc)})")
    if isinstance(exc, pg_errors.UndefinedTable):
        return CollectionMissing(f"the team index {where} does not exist (any more)")
    return DatabaseError(f"the team index {where}: {first_line(exc)}")


# -- pgvector's binary format -----------------------------------------------------


class Embedding:
    """A vector parameter: one row of float32, sent in pgvector's binary format."""

    __slots__ = ("values",)

    def __init__(self, values: FloatMatrix) -> None:
        self.values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)


class _VectorDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Embedding) -> bytes:
        values = obj.values
        return struct.pack(">HH", len(values), 0) + values.astype(">f4").tobytes()


class _VectorLoader(Loader):
    format = Format.BINARY

    def load(self, data: Any) -> FloatMatrix:
        raw = bytes(data)
        (dimension,) = struct.unpack_from(">H", raw)
        return np.frombuffer(raw, dtype=">f4", count=dimension, offset=4).astype(np.float32)


class _VectorTextLoader(Loader):
    format = Format.TEXT

    def load(self, data: Any) -> FloatMatrix:
        text = bytes(data).decode("ascii").strip("[]")
        return np.array(text.split(",") if text else [], dtype=np.float32)


def register_vector(conn: psycopg.Connection[Any]) -> bool:
    """Teach ``conn`` pgvector's ``vector`` type; False when the extension is missing."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        return False
    info.register(conn)
    dumper = type("EmbeddingDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(Embedding, dumper)
    conn.adapters.register_loader(info.oid, _VectorTextLoader)
    conn.adapters.register_loader(info.oid, _VectorLoader)
    return True


def connect(url: str, *, read_only: bool, role: str) -> psycopg.Connection[Any]:
    """An autocommit connection; a reader's refuses to write at the server."""
    options = [f"-c statement_timeout={STATEMENT_TIMEOUT_MS if read_only else 0}"]
    if read_only:
        options.append("-c default_transaction_read_only=on")
    return psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=CONNECT_TIMEOUT,
        application_name=f"citeline {role}",
        options=" ".join(options),
    )


class Listener:
    """A thread that calls ``callback`` when the collection's writer commits, and when
    the connection to the server is lost or comes back (readers then refresh, and learn
    of the outage or the recovery).  It pings the server every few seconds, so a
    vanished server is noticed without a request."""

    def __init__(self, url: str, channel: str, callback: Callable[[], None]) -> None:
        self.url = url
        self.channel = channel
        self.callback = callback
        self._stop = threading.Event()
        self.listening = threading.Event()  # set once the first LISTEN is in place
        self._thread = threading.Thread(target=self._run, name="citeline-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(LISTEN_POLL + CONNECT_TIMEOUT + 1)

    def _call(self) -> None:
        try:
            self.callback()
        except Exception:  # the callback is the service's; never kill the thread
            log.exception("index change callback failed")

    def _run(self) -> None:
        lost = False
        while not self._stop.is_set():
            try:
                with connect(self.url, read_only=True, role="listener") as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.listening.set()
                    if lost:
                        log.info("the team index is reachable again")
                        lost = False
                        self._call()
                    pinged = time.monotonic()
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=LISTEN_POLL):
                            self._call()
                        if time.monotonic() - pinged > LIVENESS_SECONDS:
                            conn.execute("SELECT 1")
                            pinged = time.monotonic()
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                self.listening.set()  # not listening: nobody should wait for it
                if not lost:
                    log.warning("the team index cannot be reached: %s", first_line(exc))
                    lost = True
                    self._call()
                self._stop.wait(RETRY_SECONDS)
