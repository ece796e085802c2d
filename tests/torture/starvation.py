"""TCP starvation: connections without the token that sit idle and reconnect the
moment they are dropped, against a real ``citeline serve --tcp``; the token holder
connects again and again meanwhile and must be served every time.  Then SIGTERM: the
server closes cleanly and removes its token file.
Used by tests/torture/test_starvation.py and benchmarks/torture.py.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from wire import Peer

INITIALIZE: dict[str, Any] = {"processId": None, "rootUri": None, "capabilities": {}}


@dataclass
class Result:
    attackers: int
    attempts: int
    served: int
    attacker_connections: int
    p95_ms: float
    sigterm_exit: int | None
    token_file_left: bool
    clean_close: bool

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _attacker(port: int, stop: threading.Event, count: list[int]) -> None:
    """Connect, say nothing, and reconnect as soon as the server drops us."""
    while not stop.is_set():
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError:
            time.sleep(0.001)
            continue
        count[0] += 1
        with contextlib.suppress(OSError):
            sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    if not sock.recv(4096):
                        break  # dropped: reconnect at once
                except TimeoutError:
                    continue
        sock.close()


def start_server(work: Path, docs: Path | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    """``citeline serve --tcp`` on a free port; the server and its token file."""
    command = [sys.executable, "-m", "citeline.cli", "serve", "--tcp", "127.0.0.1:0"]
    command += ["--token-file", str(work / "tcp-{port}.token")]
    if docs is not None:
        command += ["--docs", str(docs)]
    with (work / "server.log").open("ab") as log:
        server = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
        )
    deadline = time.monotonic() + 60
    while not (found := list(work.glob("tcp-*.token"))):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    while not found[0].read_text().strip():  # written, not yet filled
        time.sleep(0.01)
    return server, found[0]


def run(work: Path, *, attackers: int = 8, attempts: int = 20) -> Result:
    work.mkdir(parents=True, exist_ok=True)
    docs = work / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "citeline.toml").write_text("# served\n")
    server, token_file = start_server(work, docs)
    port = int(token_file.stem.split("-")[1])
    token = token_file.read_text().strip()
    stop = threading.Event()
    count = [0]
    threads = [
        threading.Thread(target=_attacker, args=(port, stop, count), daemon=True)
        for _ in range(attackers)
    ]
    served = 0
    times: list[float] = []
    try:
        for thread in threads:
            thread.start()
        time.sleep(1.0)  # every attacker is connected and idle
        for n in range(attempts):
            started = time.monotonic()
            try:
                peer = Peer.connect("127.0.0.1", port)
                params = {**INITIALIZE, "initializationOptions": {"token": token}}
                answer = peer.request(1, "initialize", params, 10)
                if "result" in answer:
                    peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                    status = peer.request(2, "citeline/status", {}, 10)
                    if "result" in status:
                        served += 1
                        times.append(time.monotonic() - started)
                peer.close()
            except (OSError, TimeoutError, AssertionError, RuntimeError):
                pass
            if n % 5 == 4:
                time.sleep(0.5)  # idle connections time out and come back meanwhile
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
    closed = docs / ".citeline" / "index.sqlite3.closed"
    server.send_signal(signal.SIGTERM)
    try:
        code: int | None = server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        code = None
    times.sort()
    return Result(
        attackers=attackers,
        attempts=attempts,
        served=served,
        attacker_connections=count[0],
        p95_ms=round(1000 * times[int(0.95 * (len(times) - 1))], 1) if times else 0.0,
        sigterm_exit=code,
        token_file_left=token_file.exists(),
        clean_close=closed.exists(),
    )
