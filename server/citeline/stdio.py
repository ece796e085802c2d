"""The process's stdio for a protocol that owns stdout (LSP under ``citeline serve``,
MCP under ``citeline mcp``).

:func:`protocol_streams` gives the protocol a private copy of the client's stdout
and points file descriptor 1 (and ``sys.stdout``) at stderr before anything else
runs, so whatever a library prints can never reach the client as protocol bytes;
:func:`log_to_stderr` sends the log where it belongs instead.
"""

from __future__ import annotations

import logging
import os
import sys
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The client's stdin and stdout for the protocol; fd 1 and sys.stdout then go to
    stderr."""
    sys.stdout.flush()
    protocol_out = typing.cast(BinaryIO, os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, protocol_out


def log_to_stderr(
    log_file: str | None,
    verbose: bool,
    protocol_library: str,
    filters: Iterable[logging.Filter] = (),
) -> None:
    """Citeline's records at INFO (DEBUG with -v) to stderr and the optional file.  The
    protocol's library (``pygls``, ``mcp``) logs every message at INFO: only with -v,
    and then at DEBUG detail.  ``filters`` go on every handler (the LSP's rate limit)."""
    fmt = logging.Formatter("citeline: %(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    if not any(
        isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr
        for h in root.handlers
    ):
        root.addHandler(logging.StreamHandler(sys.stderr))
    if log_file:
        root.addHandler(
            logging.FileHandler(
                Path(log_file).expanduser(), encoding="utf-8", errors="backslashreplace"
            )
        )
    kept = list(filters)
    for handler in root.handlers:
        handler.setFormatter(fmt)
        handler.setLevel(logging.NOTSET)
        for one in kept:
            handler.addFilter(one)
    root.setLevel(logging.WARNING)
    logging.getLogger("citeline").setLevel(logging.DEBUG if verbose else logging.INFO)
    logging.getLogger(protocol_library).setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("watchdog").setLevel(logging.WARNING)
    logging.getLogger("asyncio").setLevel(logging.ERROR)
