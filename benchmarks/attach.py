"""Two editor windows on one folder, both designs: each window its own daemon
(readers while a writer works), or the second attached to the first
(`citeline serve --attach`, server/citeline/lsp/attach.py).  For each: the second
window's RSS once it has answered a search, and its search latency while the first
indexes N new files (searches one after another until it holds them all); and the
RSS of a `citeline mcp` on the same folder once it has answered a search tool call
(its own models, or `citeline mcp --attach`, attached to the first window's daemon).

    .venv/bin/python benchmarks/attach.py              # 150 new files
    .venv/bin/python benchmarks/attach.py --files 300 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from torture.full_disk import write_docs  # noqa: E402
from torture.fuzz import rss_mb  # noqa: E402
from wire import Peer  # noqa: E402

WAITING = "waiting: another Citeline process"


class Window:
    """One editor window: a `citeline serve` over stdio and its client."""

    def __init__(self, work: Path, docs: Path, name: str, attach: bool, env: dict[str, str]):
        self.log = work / f"{name}.log"
        command = [sys.executable, "-m", "citeline.cli", "serve", "--log-file", str(self.log)]
        self.process = subprocess.Popen(
            [*command, *(["--attach"] if attach else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.peer = Peer(self.process.stdout.fileno(), self.process.stdin.fileno())
        self.ids = 0
        folder = {"uri": docs.as_uri(), "name": docs.name}
        self.request(
            "initialize",
            {"capabilities": {}, "rootUri": docs.as_uri(), "workspaceFolders": [folder]},
        )
        self.peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def request(self, method: str, params: Any, timeout: float = 600) -> Any:
        self.ids += 1
        answer = self.peer.request(self.ids, method, params, timeout)
        if "result" not in answer:
            raise RuntimeError(f"{method}: {answer.get('error')}")
        return answer["result"]

    def files(self) -> tuple[str, int]:
        folder = self.request("citeline/status", {})["folders"][0]
        return folder["state"], folder["files"]

    def wait(self, files: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while self.files() != ("ready", files):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.log.name}: not ready with {files} files")
            time.sleep(0.2)

    def close(self) -> None:
        try:
            self.request("shutdown", None, 60)
            self.peer.send({"jsonrpc": "2.0", "method": "exit"})
            self.process.wait(60)
        except (OSError, RuntimeError, TimeoutError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


class Agent:
    """An agent's MCP client: `citeline mcp --docs DOCS` over stdio, JSON lines."""

    def __init__(self, work: Path, docs: Path, attach: bool, env: dict[str, str]):
        self.log = work / "mcp.log"
        command = [sys.executable, "-m", "citeline.cli", "mcp", "--docs", str(docs)]
        self.process = subprocess.Popen(
            [*command, "--log-file", str(self.log), *(["--attach"] if attach else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.ids = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "benchmark", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        assert self.process.stdout is not None
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the MCP server ended")
            answer = json.loads(line)
            if answer.get("id") == self.ids:
                if "result" not in answer:
                    raise RuntimeError(f"{method}: {answer.get('error')}")
                return answer["result"]

    def search(self, query: str) -> None:
        result = self.request("tools/call", {"name": "search", "arguments": {"query": query}})
        if result.get("isError"):
            raise RuntimeError(f"search: {result}")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "searches": len(ordered),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def one_design(work: Path, *, attach: bool, files: int) -> dict[str, Any]:
    docs = work / "docs"
    docs.mkdir(parents=True)
    (docs / "citeline.toml").write_text("# served\n")
    write_docs(docs, range(10))
    run = work / "run"
    run.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(run), PYTHONUNBUFFERED="1")
    first = Window(work, docs, "first", attach, env)
    second: Window | None = None
    try:
        first.wait(10)
        first.request("citeline/search", {"query": "note says weather"})
        if attach:  # the first window offers the folder once it serves it
            while not list((run / "citeline").glob("folder-*.json")):
                time.sleep(0.1)
        second = Window(work, docs, "second", attach, env)
        second.wait(10)
        second.request("citeline/search", {"query": "note says weather"})  # its model loaded
        result: dict[str, Any] = {
            "design": "attach" if attach else "separate daemons",
            "rss_first_mb": round(rss_mb(first.process.pid), 1),
            "rss_second_mb": round(rss_mb(second.process.pid), 1),
            "attached": "attached to the server" in second.log.read_text(),
        }
        agent = Agent(work, docs, attach, env)
        try:
            agent.search("note says weather")  # its model loaded, or the daemon answered
            result["rss_mcp_mb"] = round(rss_mb(agent.process.pid), 1)
            result["mcp_attached"] = "attached to the server" in agent.log.read_text()
        finally:
            agent.close()
        write_docs(docs, range(10, 10 + files))
        started = time.monotonic()
        times: dict[str, list[float]] = {"first": [], "second": []}
        while True:  # each window searches in turn, one search after another
            for name, window in (("first", first), ("second", second)):
                begun = time.monotonic()
                window.request("citeline/search", {"query": "note says weather"})
                times[name].append(time.monotonic() - begun)
            if len(times["second"]) % 10 == 0 and all(
                w.files() == ("ready", 10 + files) for w in (first, second)
            ):
                break
            if time.monotonic() - started > 900:
                raise TimeoutError("the windows never held every file")
            time.sleep(0.05)
        result["seconds"] = round(time.monotonic() - started, 1)
        for name, window in (("first", first), ("second", second)):
            result[f"{name}_search"] = percentiles(times[name])
            result[f"{name}_waited_for_lock"] = WAITING in window.log.read_text()
        return result
    finally:
        for opened in (second, first):
            if opened is not None:
                opened.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=150, help="new files the first indexes")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = []
    for attach in (False, True):
        work = Path(tempfile.mkdtemp(prefix="citeline-attach-"))
        try:
            results.append(one_design(work, attach=attach, files=args.files))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    out = {
        "files": args.files,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "designs": results,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.files} new files; load average {load_before:.2f} -> {out['load_after']:.2f}")
    for r in results:
        print(
            f"{r['design']}: RSS first {r['rss_first_mb']} MB, second {r['rss_second_mb']} MB,"
            f" citeline mcp{' --attach' if r['mcp_attached'] else ''} {r['rss_mcp_mb']} MB"
        )
        for name in ("first", "second"):
            s = r[f"{name}_search"]
            waited = " (waited for the other's lock)" if r[f"{name}_waited_for_lock"] else ""
            print(
                f"  {name} window's searches while the files are indexed ({r['seconds']} s):"
                f" {s['searches']}, p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms,"
                f" max {s['max_ms']} ms{waited}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
