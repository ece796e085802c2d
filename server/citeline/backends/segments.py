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
import logging
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

TOKEN_LENGTH = 12  # hex digits
_SUFFIXES = ("base", "log", "npy")
PUMP_SECONDS = 0.01  # how often a save in the background lets ``between`` run
COMPACTION_NICE = 10  # a compaction's thread yields the CPU to searches and edits


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


def remove_token(path: Path, token: str) -> None:
    """Delete the files of ``token`` (a new base that was not published)."""
    if len(token) != TOKEN_LENGTH:
        return
    for file in path.parent.glob(f"{path.name}.{token}.*"):
        if file.name.split(".")[-1] in _SUFFIXES:
            with contextlib.suppress(OSError):
                file.unlink()


def other_tokens(path: Path, token: str) -> list[Path]:
    """The bases and logs of tokens other than ``token`` (``<path>.<token>.*``)."""
    found = []
    for other in path.parent.glob(f"{path.name}.*.*"):
        parts = other.name[len(path.name) + 1 :].split(".")
        if len(parts[0]) == TOKEN_LENGTH and parts[0] != token and parts[-1] in _SUFFIXES:
            found.append(other)
    return found


def remove_other_tokens(path: Path, token: str) -> None:
    """Delete the bases and logs of tokens other than ``token``."""
    for other in other_tokens(path, token):
        with contextlib.suppress(OSError):
            other.unlink()


def _release(files: list[Path], retired: dict[str, Any]) -> None:
    """Delete ``files`` and drop ``retired`` (an index's old state) on a thread of
    their own: unmapping an old base and freeing its deleted files' blocks took 0.1-0.3 s
    at 100k chunks, which a search or an edit would otherwise wait for."""

    def run() -> None:
        for file in files:
            with contextlib.suppress(OSError):
                file.unlink()
        retired.clear()

    threading.Thread(target=run, name="citeline-release", daemon=True).start()


class Segmented:
    """What a save writes: a new base (*compaction*) when there is no head yet, when
    another process replaced the head on disk, or when the log has grown enough
    (``_compaction_due``); otherwise the changes not yet saved, appended to the log.

    A new base is written in three steps: :meth:`_snapshot` takes what the index holds
    (on the index's thread, cheap: the base is never modified, the small delta is
    copied), :meth:`_write_files` writes the new base and its log from it without
    touching the index (so on a thread of its own), and :meth:`_publish` appends to
    that log the changes made since the snapshot, writes the head that names it and
    carries the index on from those files (:meth:`_restart`, on the index's thread).
    Until the head is written the old base and log stay the index on disk, so a crash
    at any point leaves one or the other whole.

    ``save(path, between)`` writes the base on a thread while ``between`` runs (the
    daemon's searches); ``save(path, later=True)`` only appends to the log and, when a
    compaction is due, starts it as a :class:`Compaction` and returns: the changes
    saved are readable at once, and later saves go on appending (each also kept for
    the new log) while the base is written.  :meth:`settle` publishes a finished one."""

    _head: dict[str, Any] | None
    _pending: list[Any]  # changes not yet in the saved log
    _compacting: Compaction | None = None  # a new base being written on its own thread

    def save(
        self, path: Path, between: Callable[[], None] | None = None, *, later: bool = False
    ) -> None:
        head = self._head
        if head is None or self._head_on_disk(path) != head:
            self._drop(path)  # a compaction of a log no longer there
            self._compact(path, between)
            return
        if not later:
            if self._compacting is not None and between is not None:
                self._compacting.wait(between)  # searches go on meanwhile
            self.settle(path, wait=True)
            if self._compaction_due():
                self._compact(path, between)
                return
        if self._pending:
            records = self._records()
            self._head = append_log(path, self._head or head, records)
            self._pending = []
            if self._compacting is not None:
                self._compacting.since.append(records)
        if later and self._compacting is None and self._compaction_due():
            snapshot, token = self._snapshot(between), new_token()
            self._compacting = Compaction(
                token, lambda: self._written(path, snapshot, token, beside=True)
            )

    @property
    def compacting(self) -> bool:
        """Whether a new base is being written, or written and not yet published."""
        return self._compacting is not None

    def compaction_done(self) -> bool:
        """Whether a compaction started by a save is written, ready for :meth:`settle`."""
        return self._compacting is not None and self._compacting.done()

    def settle(self, path: Path, *, wait: bool = False) -> bool:
        """Publish the compaction a save started once its base is written (``wait``:
        wait for that); whether the index now reads a new base.  A compaction that
        failed (a full disk) is dropped with a warning: the log it would have replaced
        is still whole, and a later save tries again."""
        job = self._compacting
        if job is None or not (wait or job.done()):
            return False
        self._compacting = None
        try:
            written = job.result()
        except (OSError, RuntimeError, ValueError) as exc:  # FAISS says a failed write so
            log.warning("%s: a new base could not be written (%s); the log stays", path, exc)
            remove_token(path, job.token)
            return False
        if self._head_on_disk(path) != self._head:  # another process replaced it meanwhile
            remove_token(path, job.token)
            return False
        self._publish(path, written, b"".join(job.since) + self._records(), beside=True)
        return True

    def _drop(self, path: Path) -> None:
        job, self._compacting = self._compacting, None
        if job is not None:
            with contextlib.suppress(Exception):
                job.result()
            remove_token(path, job.token)

    def _compact(self, path: Path, between: Callable[[], None] | None) -> None:
        snapshot, token = self._snapshot(between), new_token()
        if between is None:
            written = self._written(path, snapshot, token, beside=False)
        else:
            written = _beside(lambda: self._written(path, snapshot, token, beside=False), between)
        self._publish(path, written, b"", beside=False)

    def _written(
        self, path: Path, snapshot: Any, token: str, *, beside: bool
    ) -> tuple[dict[str, Any], Any]:
        """The new base's files written, its head and the base opened (off the index's
        thread too: a FAISS base takes ~30 ms to open at 100k)."""
        head = self._write_files(path, snapshot, token, beside=beside)
        return head, self._open_base(path, head)

    def _publish(
        self, path: Path, written: tuple[dict[str, Any], Any], since: bytes, *, beside: bool
    ) -> None:
        """Append ``since`` (the changes after the snapshot) to the new log, write the
        head naming the new base, carry on from the new files and delete the old ones
        (``beside``: on a thread of their own, as the old state is dropped)."""
        head = append_log(path, written[0], since)
        old = other_tokens(path, str(head["token"]))
        if not beside:  # a save that waits for its base: the old files go with it
            remove_other_tokens(path, str(head["token"]))
            old = []
        retired = dict(vars(self))  # the old base and delta, dropped beside
        self._restart(path, head, written[1])
        _release(old, retired)

    def _head_on_disk(self, path: Path) -> dict[str, Any] | None:
        raise NotImplementedError

    def _compaction_due(self) -> bool:
        raise NotImplementedError

    def _snapshot(self, between: Callable[[], None] | None = None) -> Any:
        """What the index holds now, for :meth:`_write_files` (which may run on another
        thread while the index changes): nothing it shares may change afterwards.
        ``between`` may run while it is taken (it only searches the index)."""
        raise NotImplementedError

    def _write_files(
        self, path: Path, snapshot: Any, token: str, *, beside: bool
    ) -> dict[str, Any]:
        """Write a base of ``snapshot`` and its log as ``token``'s files (not the head);
        the head to write.
        ``beside``: the index's own work goes on meanwhile (use one core)."""
        raise NotImplementedError

    def _open_base(self, path: Path, head: dict[str, Any]) -> Any:
        """The base ``head`` names, opened (mapped)."""
        raise NotImplementedError

    def _restart(self, path: Path, head: dict[str, Any], base: Any = None) -> None:
        """Carry on from the files ``head`` names: its base (``base``, opened already,
        or opened now) and its log replayed."""
        raise NotImplementedError

    def _records(self) -> bytes:
        """The pending changes as log records."""
        raise NotImplementedError


class Compaction:
    """A new base written on a thread of its own, and the log records saved since its
    snapshot (the new log gets them before its head is written)."""

    def __init__(self, token: str, work: Callable[[], tuple[dict[str, Any], Any]]) -> None:
        self.since: list[bytes] = []
        self.token = token  # the new base's files are ``<path>.<token>.*``
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(
            target=self._run, args=(work,), name="citeline-compact", daemon=True
        )
        self._thread.start()

    def _run(self, work: Callable[[], tuple[dict[str, Any], Any]]) -> None:
        _lower_priority()
        try:
            self._outcome["result"] = work()
        except BaseException as exc:  # raised by result(), on the index's thread
            self._outcome["error"] = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, between: Callable[[], None]) -> None:
        """Until the base is written, running ``between`` every :data:`PUMP_SECONDS`."""
        while True:
            self._thread.join(PUMP_SECONDS)
            if not self._thread.is_alive():
                return
            between()

    def result(self) -> tuple[dict[str, Any], Any]:
        """The head to write and the base opened."""
        self._thread.join()
        if "error" in self._outcome:
            raise self._outcome["error"]
        written: tuple[dict[str, Any], Any] = self._outcome["result"]
        return written


def _lower_priority() -> None:
    """This thread after the index's own work: :data:`COMPACTION_NICE` more niceness
    (Linux sets a thread's own; elsewhere, or refused, it stays as it is)."""
    with contextlib.suppress(AttributeError, OSError):
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + COMPACTION_NICE))


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


class NpyWriter:
    """A ``.npy`` file of a known shape written a block of rows at a time (what
    ``np.save`` writes, without the whole array in memory)."""

    def __init__(self, path: Path, dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
        self._handle = open(path, "wb")  # noqa: SIM115 (closed by __exit__)
        self._expected = int(np.prod(shape)) * dtype.itemsize
        self._written = 0
        np.lib.format.write_array_header_1_0(
            self._handle,
            {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape},
        )

    def write(self, rows: npt.NDArray[Any]) -> None:
        data = np.ascontiguousarray(rows).tobytes()
        self._handle.write(data)
        self._written += len(data)

    def __enter__(self) -> NpyWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()
        if exc[0] is None and self._written != self._expected:
            raise ValueError(f"{self._handle.name}: {self._written} bytes, not {self._expected}")
