"""A seeded JSON-RPC fuzz of ``citeline serve``, over stdio or TCP, with health checks.

:func:`messages` makes hostile or malformed messages from a seed (the same seed,
the same bytes); :func:`run` starts a real server on a small folder, sends them,
and every ``every`` messages times a ``citeline/status`` request (answered from
the event loop: a slow one means the loop is stuck) and, less often, a search
(through the index worker and the embedder).  Used by tests/torture/test_fuzz.py
and benchmarks/torture.py.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wire import Peer, frame

KNOWN = [
    "textDocument/hover",
    "citeline/search",
    "citeline/status",
    "citeline/reindex",
    "workspace/executeCommand",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWorkspaceFolders",
    "$/cancelRequest",
    "$/setTrace",
    "initialize",
    "citeline/ask",
    "citeline/history",
    "citeline/historyEntry",
    "citeline/historyDelete",
    "citeline/indexFolder",
]
COMMANDS = ["citeline.ask", "citeline.search", "citeline.status", "citeline.openCitation", "x"]
URIS = [
    "file:///etc/passwd",
    "file:///dev/zero",
    "file:///dev/urandom",
    "file:///proc/self/mem",
    "file:///tmp/../etc/shadow",
    "file://remote/share/a.md",
    "file:///%00nul.md",
    "file:///%ff%fe.md",
    "untitled:1",
    "http://example.com/",
    "",
    "file://",
    "not a uri at all",
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(12 if depth < 4 else 8)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 2**31, 2**63, -(2**70), 10**300])
    if pick == 3:
        return rng.choice([1e308, -0.0, 3.5])
    if pick == 4:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(20)))
    if pick == 5:
        return rng.choice(URIS)
    if pick == 6:
        return "x" * rng.choice([0, 1, 10_001, 200_000])
    if pick == 7:
        return "\ud800\udfff\x00\u202e"
    if pick in (8, 9):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["query", "question", "folder", "k", "textDocument", "position", "uri", "text"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _params(rng: random.Random, method: str) -> Any:
    uri = rng.choice(URIS)
    roll = rng.random()
    if roll < 0.3:
        return _value(rng)
    if method == "textDocument/hover":
        return {
            "textDocument": {"uri": uri},
            "position": {"line": rng.choice([0, -1, 2**40]), "character": rng.randrange(5)},
            "citeline": rng.choice([{}, {"selection": _value(rng)}, None]),
        }
    if method == "citeline/search":
        return {"query": rng.choice(["lighthouse", "", "x" * 20_000, 5]), "k": _value(rng)}
    if method == "citeline/ask":  # never a valid question: asks would run the generator
        return {"question": rng.choice([None, 7, "", "x" * 20_000, [1]]), "zzz": 1}
    if method == "workspace/executeCommand":
        return {"command": rng.choice(COMMANDS), "arguments": [{"uri": uri}, _value(rng)]}
    if method.startswith("textDocument/did"):
        text = rng.choice(["", "# doc\n", "é" * 100_000])
        return {
            "textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text},
            "contentChanges": [{"text": text}],
        }
    if method == "workspace/didChangeConfiguration":
        return {"settings": {"citeline": {"retrieval": {"k": _value(rng)}, "nonsense": 1}}}
    if method == "$/cancelRequest":
        return {"id": _value(rng)}
    return _value(rng)


def _deep(n: int) -> bytes:
    return b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": ' + b"[" * n + b"]" * n + b"}"


def messages(seed: int, count: int) -> Iterator[bytes]:
    """``count`` hostile messages, framed (some deliberately not), from ``seed``; made
    one at a time (a few are 9 MB)."""
    rng = random.Random(seed)
    for n in range(count):
        out: list[bytes] = []
        roll = rng.random()
        if roll < 0.55:
            method = rng.choice(KNOWN)
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if rng.random() < 0.7:
                message["id"] = rng.choice([n, f"f{n}", None, True, 1.5, [n], {"a": n}])
            if rng.random() < 0.9:
                message["params"] = _params(rng, method)
            out.append(frame(message))
        elif roll < 0.65:
            out.append(frame(_value(rng)))  # any JSON at all
        elif roll < 0.72:
            out.append(frame(bytes(rng.randrange(256) for _ in range(rng.randrange(64)))))
        elif roll < 0.77:
            out.append(frame(_deep(rng.choice([65, 1000, 100_000]))))
        elif roll < 0.81:
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "citeline/status"}).encode()
            out.append(b"Content-Length: %d\r\n\r\n" % (len(body) - 5) + body + b"\r\n")
        elif roll < 0.85:
            out.append(rng.choice([b"GET / HTTP/1.1\r\n\r\n", b"\r\n\r\n", b"\xff\xfe\x00\n"]))
        elif roll < 0.88:
            # Lengths that do not match the body: 0, or one short of it.  (A length
            # over the limit is skipped as its bytes arrive: one that is never sent
            # would leave the connection waiting for them, as LSP framing must.)
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "shutdown"}).encode()
            declared = rng.choice([0, len(body) - 1])
            out.append(b"Content-Length: %d\r\n\r\n" % declared + body + b"\r\n")
        elif roll < 0.90:
            out.append(b"Content-Length: 9000000\r\n\r\n" + b" " * 9_000_000)  # over the limit
        elif roll < 0.95:
            out.append(frame({"jsonrpc": "2.0", "id": n, "result": _value(rng)}))
        else:
            out.append(frame([{"jsonrpc": "2.0", "id": n, "method": "citeline/status"}]))
        yield from out


@dataclass
class FuzzResult:
    transport: str
    messages: int = 0
    crashes: int = 0
    hangs: int = 0
    health_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    stderr_bytes: int = 0
    tracebacks: int = 0
    exit_code: int | None = None

    def p95(self, values: list[float]) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "transport": self.transport,
            "messages": self.messages,
            "crashes": self.crashes,
            "hangs": self.hangs,
            "health_checks": len(self.health_ms),
            "health_p95_ms": round(self.p95(self.health_ms), 1),
            "health_max_ms": round(max(self.health_ms, default=0.0), 1),
            "search_p95_ms": round(self.p95(self.search_ms), 1),
            "rss_before_mb": round(self.rss_before_mb, 1),
            "rss_after_mb": round(self.rss_after_mb, 1),
            "stderr_kb": round(self.stderr_bytes / 1024, 1),
            "tracebacks": self.tracebacks,
            "exit_code": self.exit_code,
        }


def rss_mb(pid: int) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(match.group(1)) / 1024 if match else 0.0


def _start(transport: str, docs: Path, work: Path) -> tuple[subprocess.Popen[bytes], Peer, Any]:
    stderr = open(work / f"stderr-{transport}.log", "wb")  # noqa: SIM115
    command = [sys.executable, "-m", "citeline.cli", "serve", "--docs", str(docs)]
    if transport == "stdio":
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        assert process.stdin is not None and process.stdout is not None
        return process, Peer(process.stdout.fileno(), process.stdin.fileno()), None
    token_file = work / "run" / "tcp-{port}.token"
    process = subprocess.Popen(
        [*command, "--tcp", "0", "--token-file", str(token_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    deadline = time.monotonic() + 120
    while not list((work / "run").glob("tcp-*.token")) if (work / "run").is_dir() else True:
        if time.monotonic() > deadline or process.poll() is not None:
            raise RuntimeError("the TCP server did not start")
        time.sleep(0.05)
    (written,) = (work / "run").glob("tcp-*.token")
    time.sleep(0.05)  # the token is written whole right after listening
    port = int(written.stem.split("-")[1])
    return process, Peer.connect("127.0.0.1", port), written.read_text().strip()


def _wait_ready(peer: Peer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        message = peer.receive(max(0.0, deadline - time.monotonic()))
        assert message is not None, "the server closed before it was ready"
        if message.get("method") == "citeline/status":
            folders = message["params"]["folders"]
            if folders and all(f["state"] == "ready" for f in folders):
                return


def run(
    transport: str,
    docs: Path,
    work: Path,
    *,
    count: int,
    seed: int,
    every: int = 50,
    hang_seconds: float = 20.0,
) -> FuzzResult:
    """Fuzz a fresh server on ``docs`` with ``count`` messages; see the module."""
    work.mkdir(parents=True, exist_ok=True)
    result = FuzzResult(transport)
    process, peer, token = _start(transport, docs, work)
    try:
        params: dict[str, Any] = {"processId": os.getpid(), "rootUri": None, "capabilities": {}}
        if token is not None:
            params["initializationOptions"] = {"token": token}
        assert "result" in peer.request("init", "initialize", params, 120)
        peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        _wait_ready(peer, 600)
        result.rss_before_mb = rss_mb(process.pid)
        checks = 0
        for n, data in enumerate(messages(seed, count), 1):
            try:
                peer.send_raw(data, hang_seconds)
            except TimeoutError:
                result.hangs += 1
                break
            except ConnectionError:
                result.crashes += 1
                break
            result.messages = n
            if n % every == 0 or n == count:
                checks += 1
                timed = _timed(peer, f"health-{checks}", "citeline/status", {}, hang_seconds)
                if timed is None:
                    result.hangs += 1
                    break
                result.health_ms.append(timed)
                if checks % 5 == 0:
                    query = {"query": "lighthouse weather", "k": 2}
                    timed = _timed(peer, f"search-{checks}", "citeline/search", query, 120)
                    if timed is None:
                        result.hangs += 1
                        break
                    result.search_ms.append(timed)
        if process.poll() is not None:
            result.crashes += 1
        else:
            result.rss_after_mb = rss_mb(process.pid)
            found = peer.request("final", "citeline/search", {"query": "lighthouse"}, 120)
            assert found.get("result", {}).get("hits"), found
            peer.request("bye", "shutdown", None, 60)
            peer.send({"jsonrpc": "2.0", "method": "exit"})
            result.exit_code = process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        peer.close()
    log = (work / f"stderr-{transport}.log").read_bytes()
    result.stderr_bytes = len(log)
    result.tracebacks = log.count(b"Traceback")
    return result


def _timed(peer: Peer, msg_id: str, method: str, params: Any, timeout: float) -> float | None:
    started = time.monotonic()
    try:
        answer = peer.request(msg_id, method, params, timeout)
    except (TimeoutError, ConnectionError):
        return None
    assert "result" in answer, answer
    return (time.monotonic() - started) * 1000
