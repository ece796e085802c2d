"""A real PostgreSQL 16 + pgvector server for the tests, from the ``pgserver`` wheel:
started in a temporary folder (about 2 s), reached over a Unix socket, stopped and
deleted at the end.  The fault tests stop and start their own one."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

_names = itertools.count(1)


class TestServer:
    """One private server in a folder of its own; ``stop()`` and ``start()`` keep its URL.

    The folder is outside pytest's temporary tree: as root, pgserver runs the server as
    its own user, who must keep access to it (pytest makes its tree private again)."""

    __test__ = False  # not a test class

    def __init__(self) -> None:
        import pgserver

        self.folder = Path(tempfile.mkdtemp(prefix="citeline-pg-"))
        self.folder.chmod(0o755)
        self.server = pgserver.get_server(self.folder / "pgdata", cleanup_mode=None)
        self.url = self.server.get_uri()

    def _postmaster(self) -> int | None:
        try:
            return int((self.server.pgdata / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server now (fast shutdown: its clients lose their connections)."""
        pid = self._postmaster()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)

    def start(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def fresh_collection(self) -> str:
        """A collection name no test has used on this server."""
        return f"t{next(_names)}_{uuid.uuid4().hex[:6]}"

    def execute(self, query: str, *params: object) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(query, params or None)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []
