"""Churn under a running server: files created, edited, deleted and renamed as fast
as a script can, the watcher keeping up; afterwards the index holds exactly what is
on disk (no lost, no stale file) and memory is flat.  Used by
tests/torture/test_churn.py and benchmarks/torture.py."""

from __future__ import annotations

import hashlib
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torture import fuzz
from torture.crashes import Corpus, snapshot


@dataclass
class ChurnResult:
    operations: int = 0
    seconds: float = 0.0
    settle_seconds: float = 0.0
    lost_files: int = 0
    stale_files: int = 0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "operations": self.operations,
            "seconds": round(self.seconds, 2),
            "settle_seconds": round(self.settle_seconds, 2),
            "lost_files": self.lost_files,
            "stale_files": self.stale_files,
            "rss_before_mb": round(self.rss_before_mb, 1),
            "rss_after_mb": round(self.rss_after_mb, 1),
        }


def _on_disk(docs: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in docs.glob("*.md")}


def run(work: Path, *, operations: int, seed: int, settle_timeout: float = 300.0) -> ChurnResult:
    docs = work / "docs"
    docs.mkdir(parents=True)
    corpus = Corpus(docs, random.Random(seed))
    corpus.churn(10)
    result = ChurnResult()
    process, peer, _ = fuzz._start("stdio", docs, work)
    try:
        params = {"processId": os.getpid(), "rootUri": None, "capabilities": {}}
        assert "result" in peer.request("init", "initialize", params, 120)
        peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        fuzz._wait_ready(peer, 600)
        result.rss_before_mb = fuzz.rss_mb(process.pid)
        started = time.monotonic()
        corpus.churn(operations)
        result.operations = operations
        result.seconds = time.monotonic() - started
        # Settled: the status says ready with nothing pending and the disk's file count,
        # twice in a row a watcher debounce apart.
        deadline = time.monotonic() + settle_timeout
        steady = 0
        n = 0
        while steady < 2 and time.monotonic() < deadline:
            n += 1
            status = peer.request(f"s{n}", "citeline/status", {}, 60)["result"]["folders"][0]
            done = status["state"] == "ready" and not status["pending"]
            steady = steady + 1 if done and status["files"] == len(_on_disk(docs)) else 0
            time.sleep(0.5)
        result.settle_seconds = time.monotonic() - started - result.seconds
        result.rss_after_mb = fuzz.rss_mb(process.pid)
        peer.request("bye", "shutdown", None, 60)
        peer.send({"jsonrpc": "2.0", "method": "exit"})
        process.wait(60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        peer.close()
    held = snapshot(docs)
    disk = _on_disk(docs)
    result.lost_files = len([p for p in disk if p not in held])
    result.stale_files = len([p for p, h in held.items() if disk.get(p) != h[0]])
    return result
