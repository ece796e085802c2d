"""The ask log: one JSON line per question in the index folder, bounded.

A record holds its ``id`` and ``time`` (ISO 8601, UTC), the answer object
(``Answer.to_json()``: the answer, its citations and hits), the text of each cited
passage (``passages``, by its ``[n]``), the content hash of every cited or hit file
as the index held it when the answer was made (``hashes``: what tells later that a
source changed), the prompt, the models and the timings.  Everything in it comes
from the documents folder or the question: paths are relative to the folder and
models are named by file name, never by where they live.

The log keeps the newest :data:`MAX_RECORDS` asks: once it holds
:data:`TRIM_SLACK` more, it is rewritten with the newest ones (so a rewrite is
rare), and readers only ever see the newest :data:`MAX_RECORDS`.  Records can be
deleted one by one or all at once (:func:`delete_records`).  A line the log cannot
parse is skipped; records written before ids existed get one from their bytes.

Several daemons (or threads) may append to one log at once: a record is one
``write`` of the whole line to a file opened ``O_APPEND``, taken under an advisory
lock (``asks.jsonl.lock``) that a rewrite (a trim or a deletion) holds from its
read to its rename, so no line is lost between them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import stat
import uuid
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from citeline.core.answering.results import Answer

log = logging.getLogger(__name__)

RECORDS_FILE = "asks.jsonl"
MAX_RECORDS = 1000  # the newest asks a log keeps
TRIM_SLACK = 100  # records over MAX_RECORDS before the log is rewritten
MIN_RECORD_BYTES = 200  # no record is shorter (its keys alone are longer)
MAX_READ_BYTES = 64 * 1024 * 1024  # at most this much of a log's end is read

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
LOCK_SUFFIX = ".lock"
# What a record holds for bookkeeping, beside the answer object.
INTERNAL_KEYS = frozenset({"id", "time", "hashes", "passages", "prompt", "evidence", "dropped"})


@dataclass(frozen=True)
class AskRecord:
    """One line of the log: its id, its time (ISO 8601, UTC) and the JSON object."""

    id: str
    time: str
    data: Mapping[str, Any]

    @property
    def answer(self) -> dict[str, Any]:
        """The answer object as ``citeline ask --json`` printed it."""
        return {k: v for k, v in self.data.items() if k not in INTERNAL_KEYS and k != "models"}

    @property
    def hashes(self) -> dict[str, str]:
        """Each cited or hit file's content hash when the answer was made ({} for
        records written before hashes were kept)."""
        value = self.data.get("hashes")
        if not isinstance(value, Mapping):
            return {}
        return {str(k): v for k, v in value.items() if isinstance(v, str)}

    @property
    def passages(self) -> dict[int, str]:
        """The text of each cited passage by its ``[n]``."""
        value = self.data.get("passages")
        if not isinstance(value, Mapping):
            return {}
        out: dict[int, str] = {}
        for key, text in value.items():
            with contextlib.suppress(ValueError):
                if isinstance(text, str):
                    out[int(key)] = text
        return out


def utc_now() -> str:
    """Now, ISO 8601 in UTC to the millisecond (asks in one second keep their order)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_ask(
    index_dir: Path,
    answer: Answer,
    models: dict[str, str],
    hashes: Mapping[str, str] | None = None,
) -> str | None:
    """Append one record for ``answer``; its id, or None when it could not be written.
    ``hashes``: the content hash the index held for each cited or hit file."""
    record_id = uuid.uuid4().hex[:16]
    record = {
        "id": record_id,
        "time": utc_now(),
        **answer.to_json(),
        "passages": {str(e.n): e.hit.chunk.text for e in answer.evidence},
        "hashes": dict(hashes or {}),
        "prompt": answer.prompt,
        "evidence": [e.n for e in answer.evidence],
        "dropped": answer.dropped,
        "models": models,
    }
    path = index_dir / RECORDS_FILE
    # A path that is not valid UTF-8 (lone surrogates) is written as a JSON \u escape.
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
    try:
        with _locked(path):
            _append(path, line)
            try:
                _trim(path)
            except OSError as exc:
                log.warning("could not trim the ask log %s: %s", path, exc)
    except OSError as exc:  # a full disk must not turn an answer into an error
        log.warning("could not record the ask in %s: %s", index_dir, exc)
        return None
    return record_id


def read_records(index_dir: Path) -> list[AskRecord]:
    """The newest :data:`MAX_RECORDS` records of the log, oldest first ([] if none)."""
    return _parse(_read_lines(index_dir / RECORDS_FILE))[-MAX_RECORDS:]


def delete_records(index_dir: Path, ids: Collection[str] | None = None) -> int:
    """Delete the records with ``ids`` (None: every record); how many were deleted."""
    path = index_dir / RECORDS_FILE
    if not path.parent.is_dir():
        return 0
    with _locked(path):
        return _delete(path, ids)


def _delete(path: Path, ids: Collection[str] | None) -> int:
    lines = _read_lines(path)
    if not lines:
        return 0
    if ids is None:
        count = len(_parse(lines)[-MAX_RECORDS:])
        path.unlink(missing_ok=True)
        return count
    wanted = set(ids)
    kept: list[bytes] = []
    deleted = 0
    for line in lines:
        record = _record(line)
        if record is not None and record.id in wanted:
            deleted += 1
        else:
            kept.append(line)
    if deleted:
        _rewrite(path, kept)
    return deleted


# -- the file ------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the log's advisory lock (a sibling file, never through a symlink): an
    append and a rewrite never interleave, in one process or across several."""
    fd = os.open(path.with_name(path.name + LOCK_SUFFIX), _APPEND_FLAGS, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _append(path: Path, line: bytes) -> None:
    """Append ``line`` in one ``write`` to the log opened ``O_APPEND`` (never through a
    symlink): concurrent appenders each land whole lines at the end."""
    fd = os.open(path, _APPEND_FLAGS, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        written = os.write(fd, line)
        while written < len(line):  # a short write (a nearly full disk): finish the line
            written += os.write(fd, line[written:])
    finally:
        os.close(fd)


def _read_lines(path: Path) -> list[bytes]:
    """The log's lines (its last :data:`MAX_READ_BYTES`, whole lines only); [] when it
    does not exist.  Only a regular file is read, never through a symlink."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot read the ask log %s: %s", path, exc.strerror or exc)
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            log.warning("the ask log %s is not a regular file; ignored", path)
            return []
        start = max(st.st_size - MAX_READ_BYTES, 0)
        os.lseek(fd, start, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if start:  # the first line is cut: drop it
        data = data.partition(b"\n")[2]
    return [line for line in data.split(b"\n") if line.strip()]


def _parse(lines: list[bytes]) -> list[AskRecord]:
    out = []
    for line in lines:
        record = _record(line)
        if record is not None:
            out.append(record)
    return out


def _record(line: bytes) -> AskRecord | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("question"), str):
        return None
    record_id = data.get("id")
    if not isinstance(record_id, str) or not record_id:
        record_id = hashlib.sha256(line.strip()).hexdigest()[:16]  # written before ids
    return AskRecord(record_id, _utc(data.get("time")), data)


def _utc(value: object) -> str:
    """A record's time in UTC (records before ids were kept had local time and offset)."""
    if not isinstance(value, str):
        return ""
    if value.endswith("Z"):
        return value
    for pattern in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"):
        with contextlib.suppress(ValueError):
            parsed = datetime.strptime(value, pattern)
            if parsed.tzinfo is None:
                parsed = parsed.astimezone()
            return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return value


def _trim(path: Path) -> None:
    """Keep the newest MAX_RECORDS lines once the log holds TRIM_SLACK more."""
    if path.stat().st_size < MIN_RECORD_BYTES * (MAX_RECORDS + TRIM_SLACK):
        return  # too small to hold that many records: no need to count them
    lines = _read_lines(path)
    if len(lines) > MAX_RECORDS + TRIM_SLACK:
        _rewrite(path, lines[-MAX_RECORDS:])


def _rewrite(path: Path, lines: list[bytes]) -> None:
    """Replace the log with ``lines`` at once (a reader sees the old or the new log)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(b"".join(line + b"\n" for line in lines))
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
