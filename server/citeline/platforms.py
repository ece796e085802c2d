"""Which platforms Citeline runs on, said plainly before a command fails deep inside.

Citeline reads files with POSIX-only open flags (``O_NOFOLLOW``, ``O_DIRECTORY``,
``O_NONBLOCK``, ``O_CLOEXEC``, ``O_NOCTTY``: ``core/files.py``) and locks an index with
``fcntl.flock`` (``backends/embedded.py``).  Linux (x86-64 tested; the release wheels
are built for it) and macOS have them; Windows has neither, so there the first command
says so in one line instead of a traceback from whichever module got there first.
"""

from __future__ import annotations

import importlib.util
import os
import sys

SUPPORTED = "Linux and macOS"
#: The POSIX open flags Citeline's file reading and index locking use.
POSIX_FLAGS = ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY")


def missing_features() -> list[str]:
    """What this platform lacks of what Citeline needs (empty: all there)."""
    missing = [name for name in POSIX_FLAGS if not hasattr(os, name)]
    try:
        has_fcntl = importlib.util.find_spec("fcntl") is not None
    except (ImportError, ValueError):
        has_fcntl = False
    if not has_fcntl:
        missing.append("fcntl")
    return missing


def unsupported_reason() -> str | None:
    """One line saying why Citeline cannot run here, or None when it can."""
    missing = missing_features()
    if not missing:
        return None
    return (
        f"Citeline runs on {SUPPORTED}; this platform ({sys.platform}) lacks"
        f" {', '.join(missing)}. On Windows, run it inside WSL 2."
    )
