"""What the indexes saved as a *base and a log* share (the FAISS vector index and the
postings keyword index): a small JSON *head* replaced atomically, which names the
base and the log of one *token*, the log's appends, the removal of older tokens'
files, and :class:`Segmented`, the rule for what a save writes.

``path`` itself is the head; ``<path>.<token>.*`` are its base and log.  A new base
gets a new token, and the files of older tokens are deleted once the head no longer
names them (a process that has them mapped keeps reading them).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOKEN_LENGTH = 12  # hex digits
_SUFFIXES = ("base", "log", "npy")
PUMP_SECONDS = 0.01  # how often a save in the background lets ``between`` run


def new_token() -> str:
    return secrets.token_hex(TOKEN_LENGTH // 2)


def read_head(path: Path, form: str, what: str) -> dict[str, Any]:
    """The head at ``path``, of format ``form``; ``what`` names the index in errors."""
    if not path.is_file():
        raise FileNotFoundError(f"no {what} at {path}")
    try:
        head = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable {what} {path}: {exc}") from exc
    if not isinstance(head, dict) or head.get("format") != form:
        raise ValueError(f"{what} {path} is of another format")
    return head


def write_head(path: Path, head: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(head))
    os.replace(tmp, path)


def append_log(path: Path, head: dict[str, Any], records: bytes) -> dict[str, Any]:
    """Append ``records`` to the log the head names, after the bytes it counts (what a
    crash left half-written is dropped), and write the head that counts them too."""
    head = dict(head)
    with open(path.parent / head["log"], "r+b") as handle:
        handle.truncate(int(head["log_bytes"]))
        handle.seek(int(head["log_bytes"]))
        handle.write(records)
        head["log_bytes"] = handle.tell()
    write_head(path, head)
    return head


def remove_other_tokens(path: Path, token: str) -> None:
    """Delete the bases and logs of tokens other than ``token`` (``<path>.<token>.*``)."""
    for other in path.parent.glob(f"{path.name}.*.*"):
        parts = other.name[len(path.name) + 1 :].split(".")
        if len(parts[0]) == TOKEN_LENGTH and parts[0] != token and parts[-1] in _SUFFIXES:
            with contextlib.suppress(OSError):
                other.unlink()


class Segmented:
    """What a save writes: a new base (``_compact``) when there is no head yet, when
    another process replaced the head on disk, or when the log has grown enough
    (``_compaction_due``); otherwise the changes not yet saved, appended to the log.

    A new base is written in two steps: :meth:`_write_base` writes its files and head
    from what the index holds (only reading it), and :meth:`_take` makes the index
    carry on from them.  Given ``between``, :meth:`save` writes the base on a thread
    of its own and runs ``between`` (the daemon's searches, which only read the index
    too) meanwhile; the index changes only in :meth:`_take`, on the caller's thread."""

    _head: dict[str, Any] | None
    _pending: list[Any]  # changes not yet in the saved log

    def save(self, path: Path, between: Callable[[], None] | None = None) -> None:
        head = self._head
        if head is None or self._head_on_disk(path) != head or self._compaction_due():
            if between is None:
                self._take(self._write_base(path))
            else:
                self._take(_beside(lambda: self._write_base(path), between))
            return
        if not self._pending:
            return
        self._head = append_log(path, head, self._records())
        self._pending = []

    def _compact(self, path: Path) -> None:
        self._take(self._write_base(path))

    def _head_on_disk(self, path: Path) -> dict[str, Any] | None:
        raise NotImplementedError

    def _compaction_due(self) -> bool:
        raise NotImplementedError

    def _write_base(self, path: Path) -> Any:
        """Write a base of what the index holds, its empty log and its head; what
        :meth:`_take` needs to carry on from them."""
        raise NotImplementedError

    def _take(self, written: Any) -> None:
        """Carry on from the base :meth:`_write_base` wrote."""
        raise NotImplementedError

    def _records(self) -> bytes:
        """The pending changes as log records."""
        raise NotImplementedError


def _beside(work: Callable[[], Any], between: Callable[[], None]) -> Any:
    """``work()`` on a thread of its own while this one runs ``between`` every
    :data:`PUMP_SECONDS`; its result (or its error, raised here)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # raised on the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="citeline-save", daemon=True)
    thread.start()
    try:
        while True:
            thread.join(PUMP_SECONDS)
            if not thread.is_alive():
                break
            between()
    finally:
        thread.join()  # never leave the files half written behind an error of ``between``
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
