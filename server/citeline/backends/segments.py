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
from pathlib import Path
from typing import Any

TOKEN_LENGTH = 12  # hex digits
_SUFFIXES = ("base", "log", "npy")


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
    (``_compaction_due``); otherwise the changes not yet saved, appended to the log."""

    _head: dict[str, Any] | None
    _pending: list[Any]  # changes not yet in the saved log

    def save(self, path: Path) -> None:
        head = self._head
        if head is None or self._head_on_disk(path) != head or self._compaction_due():
            self._compact(path)
            return
        if not self._pending:
            return
        self._head = append_log(path, head, self._records())
        self._pending = []

    def _head_on_disk(self, path: Path) -> dict[str, Any] | None:
        raise NotImplementedError

    def _compaction_due(self) -> bool:
        raise NotImplementedError

    def _compact(self, path: Path) -> None:
        raise NotImplementedError

    def _records(self) -> bytes:
        """The pending changes as log records."""
        raise NotImplementedError
