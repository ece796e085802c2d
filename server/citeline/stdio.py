"""The process's stdio for a protocol that owns stdout (LSP under ``citeline serve``,
MCP under ``citeline mcp``).

:func:`protocol_streams` gives the protocol a private copy of the client's stdout
and points file descriptor 1 (and ``sys.stdout``) at stderr before anything else
runs, so whatever a library prints can never reach the client as protocol bytes.
"""

from __future__ import annotations

import os
import sys
import typing
from typing import BinaryIO


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The client's stdin and stdout for the protocol; fd 1 and sys.stdout then go to
    stderr."""
    sys.stdout.flush()
    protocol_out = typing.cast(BinaryIO, os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, protocol_out
