"""PDFs that crash or choke the parser: each costs its own file only.  An outline
60,000 levels deep makes MuPDF segfault while opening the file; one 40,000 deep does
not; an outline with an entry per page is read in time linear in its size.  Run
through ``citeline index`` (the crash is the file's one-line error, the rest is
indexed, a second run does not try the file again) and through a daemon watching the
folder (the file copied in while it runs: it stays up, reports the file, and a
restart does not parse it again).
Used by tests/torture/test_pdf_crashes.py and benchmarks/torture.py.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torture import pdfs
from torture.hostile import PROSE
from torture.starvation import INITIALIZE, start_server
from wire import Peer

CRASHED = "the PDF parser crashed"


@dataclass(frozen=True)
class Kind:
    name: str
    entries: int
    deep: bool
    pages: int
    outcome: str  # "crashed" (the file's error) | "indexed"


KINDS = (
    Kind("outline 60,000 levels deep", 60_000, True, 1, "crashed"),
    Kind("outline 40,000 levels deep", 40_000, True, 1, "indexed"),
    Kind("an outline entry per page", 60, False, 60, "indexed"),
)


def file_name(kind: Kind) -> str:
    return kind.name.replace(" ", "-").replace(",", "") + ".pdf"


def build(docs: Path, kinds: tuple[Kind, ...] = KINDS) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "keeper.md").write_text("# Keeper\n\n" + PROSE)
    for kind in kinds:
        pdfs.write(docs / file_name(kind), kind.entries, deep=kind.deep, pages=kind.pages)


def index(docs: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "citeline.cli", "index", "--docs", str(docs), "--json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


def through_index(work: Path) -> dict[str, str | None]:
    """Each kind's verdict after ``citeline index`` (and "second run" for the run after)."""
    docs = work / "index-run"
    build(docs)
    done = index(docs)
    if done.returncode != 0 or "Traceback" in done.stderr:
        return {"index": f"exit {done.returncode}: {done.stderr[-400:]}"}
    report = json.loads(done.stdout)
    errors = {e["path"]: e["message"] for e in report["errors"]}
    verdicts: dict[str, str | None] = {}
    for kind in KINDS:
        name = file_name(kind)
        message = errors.get(name)
        if kind.outcome == "crashed":
            ok = message is not None and CRASHED in message
        else:
            ok = message is None
        verdicts[kind.name] = None if ok else f"expected {kind.outcome}, got {message!r}"
    if report["files"] != len(KINDS) + 1 - sum(k.outcome == "crashed" for k in KINDS):
        verdicts["keeper.md"] = f"{report['files']} files indexed"
    again = index(docs)
    changed = json.loads(again.stdout)["files_changed"] if again.returncode == 0 else None
    verdicts["second run"] = None if changed == 0 else f"second run: {changed} changed"
    return verdicts


def _status(peer: Peer, msg_id: int) -> dict[str, Any]:
    answer = peer.request(msg_id, "citeline/status", {}, 30)
    folders: list[dict[str, Any]] = answer["result"]["folders"]
    return folders[0]


def _connect(token_file: Path) -> Peer:
    port = int(token_file.stem.split("-")[1])
    peer = Peer.connect("127.0.0.1", port)
    params = {**INITIALIZE, "initializationOptions": {"token": token_file.read_text().strip()}}
    assert "result" in peer.request(1, "initialize", params, 30)
    peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return peer


def _wait(peer: Peer, until: Any, seconds: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    n = 100
    while True:
        n += 1
        folder = _status(peer, n)
        if until(folder) or time.monotonic() > deadline:
            return folder
        time.sleep(0.5)


def through_daemon(work: Path) -> str | None:
    """None when a daemon watching the folder survives the crashing PDF copied in,
    reports it, and after a restart neither dies nor parses it again."""
    docs = work / "daemon"
    build(docs, ())
    (docs / "citeline.toml").write_text("# served\n")
    crash = next(k for k in KINDS if k.outcome == "crashed")
    source = pdfs.write(work / "crash.pdf", crash.entries, deep=True)
    server, token_file = start_server(work, docs)
    try:
        peer = _connect(token_file)
        _wait(peer, lambda f: f["state"] == "ready" and f["files"] >= 1)
        shutil.copy(source, docs / "crash.pdf")
        folder = _wait(peer, lambda f: any(e["path"] == "crash.pdf" for e in f["errors"]))
        if server.poll() is not None:
            return f"the daemon died (exit {server.returncode})"
        errors = {e["path"]: e["message"] for e in folder["errors"]}
        if CRASHED not in errors.get("crash.pdf", ""):
            return f"crash.pdf not reported as a crash: {folder['errors']}"
        peer.close()
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        server, token_file = start_server(work, docs)
        peer = _connect(token_file)
        folder = _wait(peer, lambda f: f["state"] == "ready" and f["files"] >= 1)
        time.sleep(8)  # the daemon died about 6 s after each start
        if server.poll() is not None:
            return f"the restarted daemon died (exit {server.returncode})"
        folder = _status(peer, 99)
        if not any(e["path"] == "crash.pdf" for e in folder["errors"]):
            return "the restarted daemon forgot the file's error"
        peer.close()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
    said = (work / "server.log").read_text(errors="replace").count(CRASHED)
    if said != 1:
        return f"the crash was logged {said} times (parsed again after the restart?)"
    return None


def plain_pdf(pages: int) -> bytes:
    """``pages`` pages of the same line, no outline: parsing costs what its pages cost,
    and its chunks share a few texts, so embedding them is quick."""
    return pdfs.outline_pdf(0, deep=False, pages=pages, line=b"the lighthouse weather log")


@dataclass
class Searches:
    pages: int
    during: int  # searches answered while the big file was being read
    seconds: float  # from the copy until the file was indexed
    p50_ms: float
    p95_ms: float
    max_ms: float
    slowest: list[tuple[float, float]]  # the 5 slowest: (seconds after the copy, ms)
    # From each due time (every ``interval``) to the answer that served it: what a
    # search made at any moment waits, a stall counted for every slot it covers.
    due_p95_ms: float
    due_max_ms: float

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def search_while_parsing(
    work: Path, pages: int, *, interval: float = 0.05, notes: int = 0
) -> Searches:
    """Searches of a daemon's folder while a PDF of ``pages`` pages copied into it is
    read and indexed: one every ``interval`` seconds (the next at once when one took
    longer), the folder holding ``notes`` ordinary notes besides the keeper."""
    docs = work / f"big-{pages}"
    build(docs, ())
    for k in range(notes):
        (docs / f"note-{k:03}.md").write_text(f"# Note {k}\n\n{PROSE}\n\nNote number {k}.\n")
    (docs / "citeline.toml").write_text("# served\n")
    source = work / f"big-{pages}.pdf"
    source.write_bytes(plain_pdf(pages))
    server, token_file = start_server(work, docs)
    times: list[float] = []
    offsets: list[float] = []
    waits: list[float] = []
    try:
        peer = _connect(token_file)
        _wait(peer, lambda f: f["state"] == "ready" and f["files"] >= 1 + notes)
        for n in range(3):  # warm: the query model path, the keyword index
            peer.request(200 + n, "citeline/search", {"query": "lighthouse weather"}, 60)
        shutil.copy(source, docs / "big.pdf")
        started = time.monotonic()
        n = 1000
        due = slot = started
        while True:
            n += 1
            time.sleep(max(0.0, due - time.monotonic()))
            begun = time.monotonic()
            due = begun + interval
            answer = peer.request(n, "citeline/search", {"query": "keeper logs dawn"}, 300)
            assert "result" in answer, answer
            answered = time.monotonic()
            times.append(answered - begun)
            offsets.append(begun - started)
            while slot <= answered:  # every slot this answer covers
                waits.append(answered - slot)
                slot += interval
            if n % 10 == 0:
                folder = _status(peer, n + 100_000)
                if folder["files"] >= 2 + notes and folder["state"] == "ready":
                    break
                if folder["state"] == "ready" and folder["errors"]:  # never indexed
                    raise RuntimeError(f"the big PDF was not indexed: {folder['errors'][0]}")
        seconds = time.monotonic() - started
        peer.close()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
    ordered = sorted(times)
    return Searches(
        pages=pages,
        during=len(times),
        seconds=round(seconds, 1),
        p50_ms=round(1000 * ordered[len(ordered) // 2], 1),
        p95_ms=round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        max_ms=round(1000 * ordered[-1], 1),
        due_p95_ms=round(1000 * sorted(waits)[int(0.95 * (len(waits) - 1))], 1),
        due_max_ms=round(1000 * max(waits), 1),
        slowest=sorted(
            zip([round(at, 1) for at in offsets], [round(1000 * t, 1) for t in times], strict=True),
            key=lambda pair: -pair[1],
        )[:5],
    )
