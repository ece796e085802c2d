"""A real PostgreSQL 16 + pgvector server for the tests, from the ``pgserver`` wheel:
started in a temporary folder (about 2 s), reached over a Unix socket, stopped and
deleted at the end.  The fault tests stop and start their own one."""

from __future__ import annotations

import itertools
import shutil
import uuid
from pathlib import Path

import psycopg

_names = itertools.count(1)


class TestServer:
    """One private server; ``stop()`` and ``start()`` keep its URL."""

    __test__ = False  # not a test class

    def __init__(self, folder: Path) -> None:
        import pgserver

        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.server = pgserver.get_server(folder / "pgdata", cleanup_mode=None)
        self.url = self.server.get_uri()

    def stop(self) -> None:
        """Stop the server at once (its clients lose their connections)."""
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()

    def close(self) -> None:
        try:
            self.stop()
        except Exception:  # already stopped
            pass
        shutil.rmtree(self.folder, ignore_errors=True)

    def fresh_collection(self) -> str:
        """A collection name no test has used on this server."""
        return f"t{next(_names)}_{uuid.uuid4().hex[:6]}"

    def execute(self, query: str, *params: object) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(query, params or None)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []
