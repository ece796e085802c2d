"""A JSON-RPC peer on raw bytes, for tests that send what no real client would:
framed messages over a pipe pair (a process's stdin/stdout) or a socket, written
and read without ever blocking on one while the other is full, with deadlines."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import time
from typing import Any

HEADER = re.compile(rb"Content-Length: (\d+)\r\n(?:[^\r\n]+\r\n)*\r\n", re.IGNORECASE)


def frame(message: Any) -> bytes:
    """One message in LSP's base protocol (any JSON value, or raw bytes as the body)."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Peer:
    """Writes bytes and reads whole messages; what arrives while writing is kept."""

    def __init__(self, read_fd: int, write_fd: int, sock: socket.socket | None = None) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.sock = sock
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._buffer = bytearray()
        self.closed = False
        self.received = 0  # bytes

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = 10.0) -> Peer:
        sock = socket.create_connection((host, port), timeout=timeout)
        return cls(sock.fileno(), sock.fileno(), sock)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()

    def send(self, message: Any, timeout: float = 30.0) -> None:
        self.send_raw(frame(message), timeout)

    def send_raw(self, data: bytes, timeout: float = 30.0) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the peer stopped reading")
            readable, writable, _ = select.select([self.read_fd], [self.write_fd], [], left)
            if readable:
                self._read_some()
            if writable:
                try:
                    written = os.write(self.write_fd, view[: 1 << 16])
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionError) as exc:
                    raise ConnectionError("the peer is gone") from exc
                view = view[written:]

    def _read_some(self) -> None:
        try:
            chunk = os.read(self.read_fd, 1 << 16)
        except BlockingIOError:
            return
        except (ConnectionError, OSError):
            chunk = b""
        if not chunk:
            self.closed = True
        self.received += len(chunk)
        self._buffer += chunk

    def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when the peer closed; TimeoutError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            match = HEADER.match(self._buffer)
            if match:
                end = match.end() + int(match.group(1))
                if len(self._buffer) >= end:
                    body = bytes(self._buffer[match.end() : end])
                    del self._buffer[:end]
                    return dict(json.loads(body))
            elif len(self._buffer) >= 14 and not self._buffer.startswith(b"Content-Length"):
                raise AssertionError(f"not a JSON-RPC header: {bytes(self._buffer[:80])!r}")
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message in time")
            readable, _, _ = select.select([self.read_fd], [], [], left)
            if readable:
                self._read_some()

    def response(self, msg_id: Any, timeout: float) -> dict[str, Any]:
        """The response to ``msg_id`` (other messages from the server passed over)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                raise ConnectionError(f"closed before the response to {msg_id!r}")
            if "method" not in message and message.get("id") == msg_id:
                return message

    def request(self, msg_id: Any, method: str, params: Any, timeout: float) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.response(msg_id, timeout)
