"""The server's log: stderr, an optional file, and the client (``window/logMessage``).

Every record goes through one :class:`RateLimit` shared by the handlers: a burst
of up to :data:`BURST` lines passes, then at most :data:`PER_SECOND` a second;
what is dropped is counted and said on the next line that passes.  A message
longer than :data:`MAX_CHARS` is cut.  So a client sending thousands of bad
messages costs a few lines a second, never megabytes of log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING

from lsprotocol import types

from citeline.stdio import log_to_stderr

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

PER_SECOND = 20.0
BURST = 100
MAX_CHARS = 2000


class RateLimit(logging.Filter):
    """A token bucket over log records, shared by every handler it is added to."""

    def __init__(self, per_second: float = PER_SECOND, burst: int = BURST) -> None:
        super().__init__()
        self.per_second = per_second
        self.burst = burst
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._dropped = 0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        decided = getattr(record, "citeline_passes", None)
        if decided is not None:  # another handler already asked about this record
            return bool(decided)
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
            self._last = now
            passes = self._tokens >= 1.0
            if passes:
                self._tokens -= 1.0
                dropped, self._dropped = self._dropped, 0
            else:
                self._dropped += 1
        record.citeline_passes = passes
        if passes:
            _shorten(record, dropped)
        return passes


def _shorten(record: logging.LogRecord, dropped: int) -> None:
    message = record.getMessage()
    if len(message) > MAX_CHARS:
        message = message[: MAX_CHARS - 1] + "…"
    if dropped:
        message = f"({dropped} log lines dropped) {message}"
    if message != record.getMessage():
        record.msg, record.args = message, None


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as ``window/logMessage``."""

    LEVELS = (
        (logging.ERROR, types.MessageType.Error),
        (logging.WARNING, types.MessageType.Warning),
        (logging.INFO, types.MessageType.Info),
        (0, types.MessageType.Log),
    )

    def __init__(self, ls: CitelineServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.INFO)
        self.ls = ls
        self.loop = loop
        self.setFormatter(logging.Formatter("%(message)s"))
        for handler in logging.getLogger().handlers:  # the same limit as the other outputs
            for limit in handler.filters:
                if isinstance(limit, RateLimit):
                    self.addFilter(limit)

    def emit(self, record: logging.LogRecord) -> None:
        if self.loop.is_closed():
            return
        kind = next(t for level, t in self.LEVELS if record.levelno >= level)
        try:
            text = self.format(record)
            self.loop.call_soon_threadsafe(self._send, kind, text)
        except Exception:  # never let logging break the server
            self.handleError(record)

    def _send(self, kind: types.MessageType, text: str) -> None:
        with contextlib.suppress(Exception):  # the connection is gone
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=text))


def configure_logging(log_file: str | None, verbose: bool) -> None:
    """Citeline's records at INFO (DEBUG with -v) to stderr and the optional file, every
    output behind one rate limit."""
    log_to_stderr(log_file, verbose, "pygls", [RateLimit()])
