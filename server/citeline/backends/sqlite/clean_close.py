"""Whether the index database is exactly as its last clean close left it.

Opening the store checks the database (``PRAGMA quick_check``), which reads every
page: 0.3 s at 100,000 chunks (390 MB), most of a daemon's start on an indexed
folder.  The check is only needed when something may have changed the file since
Citeline last had it in a known-good state, so a clean close leaves a stamp beside
the database (``index.sqlite3.closed``: its size, mtime, ctime and inode, taken
after SQLite checkpointed and removed its WAL), and the next open skips the check
when the stamp still describes the file.

The stamp is sound because it is narrow:

- it is written only after a close that left no WAL or rollback journal behind
  (the last connection closed and checkpointed), and never after damage was met
  in use;
- it is read and deleted by every open, so it only ever describes the moment of
  one clean close: a crash or a kill after that open leaves no stamp (and a WAL);
- any WAL or journal file beside the database at open means the check runs;
- a write to the file changes its ctime (which no tool can set back), and the
  stamp file is only trusted when it was written in a later clock tick than the
  database's last change, so a write in the same tick as the close cannot hide
  behind a timestamp it shares with the stamp.

Damage that keeps size and every timestamp (a disk's bit rot) is not seen at open;
any statement that meets it raises ``StoreDamaged`` and the index is rebuilt, as
for damage that appears while the daemon runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

STAMP_SUFFIX = ".closed"
_JOURNALS = ("-wal", "-journal")
_TICK_TRIES = 50  # at most ~50 ms at close waiting for the clock to move past a change


def stamp_path(database: Path) -> Path:
    """The stamp a clean close leaves beside the database at ``database``."""
    return database.with_name(database.name + STAMP_SUFFIX)


def _journals_present(database: Path) -> bool:
    return any(os.path.lexists(database.with_name(database.name + suffix)) for suffix in _JOURNALS)


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def record(database: Path) -> bool:
    """After the last connection to ``database`` closed: leave the stamp that lets the
    next open skip its check.  False (and no stamp) when the close left a WAL or a
    journal behind (another connection is open, or the checkpoint failed)."""
    stamp = stamp_path(database)
    with contextlib.suppress(OSError):
        if _journals_present(database):
            stamp.unlink(missing_ok=True)
            return False
        st = os.stat(database)
        text = json.dumps({"database": _identity(st)})
        for _ in range(_TICK_TRIES):
            stamp.write_text(text)
            if os.stat(stamp).st_mtime_ns > st.st_ctime_ns:
                return True
            time.sleep(0.001)  # a clock as coarse as the change's: wait for the next tick
        stamp.unlink(missing_ok=True)
    return False


def consume(database: Path) -> bool:
    """At open: whether ``database`` is exactly as the last clean close left it.  The
    stamp is deleted whatever the answer, so it never outlives this open."""
    stamp = stamp_path(database)
    try:
        written = os.stat(stamp).st_mtime_ns
        recorded = json.loads(stamp.read_text())["database"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    finally:
        with contextlib.suppress(OSError):
            stamp.unlink(missing_ok=True)
    try:
        st = os.stat(database)
    except OSError:
        return False
    return (
        not _journals_present(database) and recorded == _identity(st) and st.st_ctime_ns < written
    )
