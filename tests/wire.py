"""A JSON-RPC peer on raw bytes, for tests that send what no real client would:
framed messages over any pair of byte streams (a pipe to a process, a socket),
read back with a deadline."""

from __future__ import annotations

import json
import os
import re
import select
import socket
import time
from typing import Any

HEADER = re.compile(rb"Content-Length: (\d+)\r\n(?:[^\r\n]*\r\n)*\r\n", re.IGNORECASE)


def frame(message: Any) -> bytes:
    """One message in LSP's base protocol (any JSON value, or raw bytes as the body)."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Peer:
    """Writes frames and reads whole messages from a file descriptor or a socket."""

    def __init__(self, read_fd: int, write: Any) -> None:
        self.read_fd = read_fd
        self._write = write
        self._buffer = bytearray()
        self.closed = False

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = 10.0) -> Peer:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setblocking(True)
        peer = cls(sock.fileno(), sock.sendall)
        peer.sock = sock  # type: ignore[attr-defined]
        return peer

    def close(self) -> None:
        sock = getattr(self, "sock", None)
        if sock is not None:
            sock.close()

    def send(self, message: Any) -> None:
        self.send_raw(frame(message))

    def send_raw(self, data: bytes) -> None:
        self._write(data)

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
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.read_fd, 1 << 16)
                except (ConnectionError, OSError):
                    chunk = b""
                if not chunk:
                    self.closed = True
                self._buffer += chunk

    def response(self, msg_id: Any, timeout: float) -> dict[str, Any]:
        """The response to ``msg_id`` (notifications and requests from the server skipped)."""
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
