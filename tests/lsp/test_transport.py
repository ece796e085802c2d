"""stdio: messages in, answers out, exit ends it with the status LSP says."""

from __future__ import annotations

import io
import os
import threading
import time
from typing import Any

from citeline.app import ModelPool
from citeline.lsp import transport
from citeline.lsp.server import build_server
from wire import frame

INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}


def _message(method: str, msg_id: int | None = None, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        message["id"] = msg_id
    return frame(message)


def _serve(shutdown_first: bool) -> int:
    ls = build_server(backends=ModelPool())
    read_fd, write_fd = os.pipe()
    out = io.BytesIO()
    result: list[int] = []

    def serve() -> None:
        result.append(transport.serve_stdio(ls, os.fdopen(read_fd, "rb"), out))

    thread = threading.Thread(target=serve)
    thread.start()
    os.write(write_fd, b"garbage\r\n" + _message("initialize", 1, INITIALIZE))
    if shutdown_first:
        os.write(write_fd, _message("shutdown", 2))
        deadline = time.monotonic() + 30
        while b'"id": 2' not in out.getvalue():
            assert time.monotonic() < deadline, out.getvalue()
            time.sleep(0.01)
    os.write(write_fd, _message("exit"))  # stdin stays open: exit alone ends the server
    thread.join(30)
    os.close(write_fd)
    ls.service.stop(5)
    assert out.getvalue().startswith(b"Content-Length: ")
    return result[0]


def test_stdio_serves_until_exit_and_says_whether_shutdown_came_first() -> None:
    assert _serve(shutdown_first=True) == 0
    assert _serve(shutdown_first=False) == 1


def test_stdio_ends_when_the_client_closes_stdin() -> None:
    ls = build_server(backends=ModelPool())
    assert transport.serve_stdio(ls, io.BytesIO(b""), io.BytesIO()) == 1  # no shutdown: 1
    ls.service.stop(5)
