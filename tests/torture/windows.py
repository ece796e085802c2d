"""Several editor windows on one folder: two daemons serve it, 150 files arrive, one
daemon indexes them while the other waits for the write lock.  Searches in both keep
being answered meanwhile (the waiting one's from the index as it was), and a
``citeline search`` on the folder says that it waits, and why.
Used by tests/torture/test_windows.py and benchmarks/torture.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torture.full_disk import write_docs
from torture.pdf_crashes import _connect, _status, _wait
from torture.starvation import start_server
from wire import Peer

WAITING = "waiting: another Citeline process"


@dataclass
class Window:
    searches: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    max_ms: float = 0.0
    waited: bool = False  # its log says it waited for the other's lock

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Result:
    files: int
    seconds: float = 0.0  # from the files' arrival until both windows held them all
    windows: list[Window] = field(default_factory=list)
    cli_said_wait: bool = False
    cli_exit: int | None = None
    cli_line: str = ""
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["windows"] = [w.to_json() for w in self.windows]
        return out


def _percentiles(times: list[float], window: Window) -> None:
    ordered = sorted(times)
    if not ordered:
        return
    window.searches = len(ordered)
    window.p50_ms = round(1000 * ordered[len(ordered) // 2], 1)
    window.p95_ms = round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1)
    window.max_ms = round(1000 * ordered[-1], 1)


def run(work: Path, *, files: int = 150) -> Result:
    docs = work / "docs"
    docs.mkdir(parents=True)
    (docs / "citeline.toml").write_text("# served\n")
    write_docs(docs, range(10))
    servers: list[subprocess.Popen[bytes]] = []
    peers: list[Peer] = []
    result = Result(files=files)
    try:
        for name in ("a", "b"):
            (work / name).mkdir()
            server, token_file = start_server(work / name, docs)
            servers.append(server)
            peers.append(_connect(token_file))
        for peer in peers:
            _wait(peer, lambda f: f["state"] == "ready" and f["files"] >= 10)
        times: list[list[float]] = [[], []]
        holds_all = [False, False]
        deadline = time.monotonic() + 600

        def search(k: int) -> None:  # each window's client on its own thread, in turn
            n = 1000
            try:
                while time.monotonic() < deadline:
                    n += 1
                    begun = time.monotonic()
                    query = {"query": "note says weather"}
                    answer = peers[k].request(n, "citeline/search", query, 300)
                    if "result" in answer:
                        times[k].append(time.monotonic() - begun)
                    else:
                        result.problems.append(f"window {k}: {answer.get('error')}")
                    if n % 10 == 0 and _status(peers[k], n + 100_000)["files"] >= 10 + files:
                        holds_all[k] = True
                        return
                    time.sleep(0.05)
            except (OSError, AssertionError) as exc:
                result.problems.append(f"window {k}: {exc}")

        write_docs(docs, range(10, 10 + files))
        started = time.monotonic()
        threads = [threading.Thread(target=search, args=(k,), daemon=True) for k in (0, 1)]
        for thread in threads:
            thread.start()
        time.sleep(3)  # both daemons have seen the files; one writes, the other waits
        cli = subprocess.run(
            [sys.executable, "-m", "citeline.cli", "search", "--docs", str(docs), "weather"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        result.cli_exit = cli.returncode
        said = [line for line in cli.stderr.splitlines() if WAITING in line]
        result.cli_said_wait = bool(said)
        result.cli_line = said[0] if said else cli.stderr[-300:]
        for thread in threads:
            thread.join(660)
        result.seconds = round(time.monotonic() - started, 1)
        if not all(holds_all):
            result.problems.append(f"the windows hold all the files: {holds_all}")
        for k in (0, 1):
            window = Window()
            _percentiles(times[k], window)
            result.windows.append(window)
    finally:
        for peer in peers:
            peer.close()
        for server in servers:
            server.send_signal(signal.SIGTERM)
        for server in servers:
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
    for k, name in enumerate(("a", "b")):
        log = (work / name / "server.log").read_text(errors="replace")
        if k < len(result.windows):
            result.windows[k].waited = WAITING in log
        if "Traceback" in log:
            result.problems.append(f"window {name}: a traceback in its log")
    return result
