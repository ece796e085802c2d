"""Parsing documents where a native crash costs one file, not the process.

PDFs are parsed by MuPDF, native code: a hostile file (an outline nested 60,000 levels
deep) makes it segfault, which no Python handler survives.  So PDFs are parsed in a
child process, one long-lived ``python -m citeline.backends.parsing`` kept for every
PDF after the first (its start, PyMuPDF's import included, is paid once; a small
PDF then costs a round trip of a few milliseconds), with a budget: at most
:data:`PARSE_SECONDS` per file and :data:`PARSE_MEMORY_BYTES` of address space.  A
crash, a file over the budget or a child that cannot start is the file's one-line
:class:`~citeline.core.documents.LoadError` ("could not be read: the PDF parser
crashed"), which the index records with the file's size and mtime, so the file is not
tried again until it changes; the next PDF gets a new child.  While the child works,
the caller's ``between`` runs every few milliseconds (the daemon's queued searches),
so one big PDF never holds the searches of the rest.  Other formats are parsed by pure
Python in the process (a parser's exception there is already one line).

The wire between the two: each message is an 8-byte length and a pickle; requests
``(bytes, path, rel_path)``, answers ``("error", message)`` or ``("ok", SourceDocument
without its blocks, parts)`` followed by ``parts`` messages of at most
:data:`BLOCKS_PER_PART` blocks each.  The parent unpickles one part at a time and
calls ``between`` after each, so a 50,000-page PDF's result (0.4 s to unpickle whole)
never holds the searches for more than one part's few milliseconds.  The child speaks
it on the stdout it was given (its own prints and MuPDF's go to stderr) and ends when
its stdin closes, so it never outlives its parent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from citeline.core.documents import Block, LoadError, SourceDocument
from citeline.core.loaders import parse_document

log = logging.getLogger(__name__)

ISOLATED_SUFFIXES = frozenset({".pdf"})  # parsed by native code: in the child
PARSE_SECONDS = 120.0  # one file's budget (a 50,000-page PDF takes about 30 s)
PARSE_MEMORY_BYTES = 4 * 1024**3  # the child's address space
WAIT_STEP = 0.02  # seconds between two calls of ``between`` while the child works
BLOCKS_PER_PART = 250  # blocks in one message of a parsed document (a few ms to unpickle)
_HEADER = struct.Struct("!Q")
NO_MEMORY = "could not be read: the file needs more memory than allowed"


class ParseChild:
    """One child process that parses documents, started on first use."""

    def __init__(
        self, seconds: float = PARSE_SECONDS, memory_bytes: int = PARSE_MEMORY_BYTES
    ) -> None:
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._unread = bytearray()  # read from the child past the last message
        self.started = 0  # children started (a crash costs a new one)

    def parse(
        self, data: bytes, path: Path, rel_path: str, between: Callable[[], None] | None = None
    ) -> SourceDocument:
        """The document in ``data``, parsed in the child; LoadError as the parsers raise
        it, or for a crash or a file over the budget."""
        wait = between or _nothing
        with self._lock:
            process = self._ensure()
            # The request (the file's bytes) goes on a thread of its own: a big file
            # fills the pipe faster than the child reads it, and meanwhile ``wait``
            # runs here.  If the child dies, the write fails there and the read here.
            sender = threading.Thread(
                target=_send_quietly,
                args=(process, (data, str(path), rel_path)),
                name="citeline-parse-send",
                daemon=True,
            )
            sender.start()
            try:
                kind, value, *rest = self._receive(process, wait)
                sender.join()  # the child answered: it has read the whole request
                if kind != "ok" or not isinstance(value, SourceDocument):
                    raise LoadError(str(value))
                blocks: list[Block] = []
                for _ in range(int(rest[0])):
                    wait()  # the part before was unpickled: searches get in
                    blocks.extend(self._receive(process, wait))
            except _ChildLost as lost:
                self.stop()
                raise LoadError(f"could not be read: {lost.why}") from None
            except LoadError:
                raise
            except BaseException:  # parts left unread: the next answer would be out of step
                self.stop()
                raise
        return dataclasses.replace(value, blocks=tuple(blocks))

    @property
    def busy(self) -> bool:
        """A parse is under way (the caller's ``between`` runs inside it)."""
        return self._lock.locked()

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        command = [sys.executable, "-m", "citeline.backends.parsing", str(self.memory_bytes)]
        try:
            self._process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True
            )
        except OSError as exc:
            raise LoadError(f"could not be read: the parser could not start ({exc})") from exc
        self._unread = bytearray()
        self.started += 1
        return self._process

    def _receive(self, process: subprocess.Popen[bytes], between: Callable[[], None]) -> Any:
        """The next message from the child.  A read may take in the start of the
        message after it (the parts of a document come one after another): what is
        past this message stays in ``self._unread`` for the next call."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + self.seconds
        buffer = self._unread
        while True:
            need = _HEADER.size - len(buffer)
            if need <= 0:
                (length,) = _HEADER.unpack_from(buffer)
                end = _HEADER.size + length
                if len(buffer) >= end:
                    body = bytes(buffer[_HEADER.size : end])
                    del buffer[:end]
                    return pickle.loads(body)
                need = end - len(buffer)
            left = deadline - time.monotonic()
            if left <= 0:
                raise _ChildLost(f"the parser took more than {self.seconds:g} s")
            ready, _, _ = select.select([fd], [], [], min(WAIT_STEP, left))
            if not ready:
                between()
                continue
            chunk = os.read(fd, min(max(need, 1 << 16), 1 << 24))
            if not chunk:
                raise _ChildLost(_death(process))
            buffer += chunk

    def stop(self) -> None:
        """End the child (the next parse starts another)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _ChildLost(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _death(process: subprocess.Popen[bytes]) -> str:
    try:
        code = process.wait(5)
    except subprocess.TimeoutExpired:
        return "the parser stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the PDF parser crashed ({name})"
    return f"the PDF parser exited (status {code})"


def _send_quietly(process: subprocess.Popen[bytes], message: object) -> None:
    """Write one request; a child that died meanwhile is the reader's to report."""
    assert process.stdin is not None
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    with contextlib.suppress(OSError, ValueError):  # a broken pipe, a closed stream
        process.stdin.write(_HEADER.pack(len(body)))
        process.stdin.write(body)
        process.stdin.flush()


def _nothing() -> None:
    pass


_SHARED: ParseChild | None = None
_SHARED_LOCK = threading.Lock()


def shared_child() -> ParseChild:
    """The process's one parse child (every folder's ingest shares it)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ParseChild()
        return _SHARED


def isolated_parse(
    data: bytes, path: Path, rel_path: str, between: Callable[[], None]
) -> SourceDocument:
    """What ingest calls to parse a file: PDFs in the shared child, the rest here."""
    if path.suffix.lower() in ISOLATED_SUFFIXES:
        return shared_child().parse(data, path, rel_path, between)
    return parse_document(data, path, rel_path)


# -- the child ---------------------------------------------------------------------------


def _read_exactly(stream: BinaryIO, n: int) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def child_main(memory_bytes: int) -> int:
    """Parse what arrives on stdin until it closes; answers on the stdout given."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed (PyMuPDF, MuPDF) goes to stderr
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, format="citeline: parser: %(message)s")
    with contextlib.suppress(ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    requests = sys.stdin.buffer
    while True:
        header = _read_exactly(requests, _HEADER.size)
        if header is None:
            return 0
        (length,) = _HEADER.unpack(header)
        body = _read_exactly(requests, length)
        if body is None:
            return 0
        data, path, rel_path = pickle.loads(body)
        try:
            document = parse_document(data, Path(path), rel_path)
        except LoadError as exc:
            _answer(channel, ("error", str(exc)))
            continue
        except MemoryError:
            _answer(channel, ("error", NO_MEMORY))
            continue
        for message in document_messages(document):
            _answer(channel, message)


def document_messages(document: SourceDocument) -> list[object]:
    """The messages that carry ``document``: its fields and the number of parts, then
    its blocks, :data:`BLOCKS_PER_PART` to a part."""
    blocks = document.blocks
    parts = [
        blocks[start : start + BLOCKS_PER_PART] for start in range(0, len(blocks), BLOCKS_PER_PART)
    ]
    head: object = ("ok", dataclasses.replace(document, blocks=()), len(parts))
    return [head, *parts]


def _answer(channel: BinaryIO, message: object) -> None:
    out = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    channel.write(_HEADER.pack(len(out)) + out)
    channel.flush()


if __name__ == "__main__":
    raise SystemExit(child_main(int(sys.argv[1]) if len(sys.argv) > 1 else PARSE_MEMORY_BYTES))
