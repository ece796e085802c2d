"""A full disk, on a small tmpfs mounted for the test (root only): ``citeline index``
meeting it mid-run says so in one line and keeps the index as it was readable; a
daemon meeting it mid-edit stays up, keeps answering from the index as it is, and
when space returns indexes by itself every file edited meanwhile, nothing lost.
Used by tests/torture/test_full_disk.py and benchmarks/torture.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from torture.hostile import PROSE
from torture.pdf_crashes import _connect, _status, _wait
from torture.starvation import start_server


def can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of ``megabytes`` at ``path``, unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)], check=True
    )
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with one file; deleting it gives the space back."""
    filler = disk / "filler.bin"
    with filler.open("wb") as handle:
        block = b"\0" * (1 << 16)
        with contextlib.suppress(OSError):
            while True:
                handle.write(block)
                handle.flush()
    for size in (4096, 512, 1):  # the last partial blocks
        with contextlib.suppress(OSError), filler.open("ab") as handle:
            while True:
                handle.write(b"\0" * size)
                handle.flush()
    return filler


def write_docs(docs: Path, names: range) -> None:
    for n in names:
        (docs / f"note-{n:03d}.md").write_text(
            f"# Note {n}\n\nNote {n} says: {PROSE}The word of the day is placeholder{n:04d}.\n"
        )


def edit(docs: Path, n: int) -> str:
    """Rewrite a note in place, the same size, with a word of its own: the edit needs no
    new space, as an editor's save of a changed word often does not."""
    path = docs / f"note-{n:03d}.md"
    word = f"quokkaword{n:04d}"
    text = path.read_text().replace(f"placeholder{n:04d}", word)
    with path.open("r+") as handle:
        handle.write(text)
    return word


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline.cli", *args], capture_output=True, text=True, timeout=600
    )


def _indexed(docs: Path) -> dict[str, str | None]:
    with sqlite3.connect(docs / ".citeline" / "index.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return dict(db.execute("SELECT path, error FROM files"))


@dataclass
class Result:
    index_error_lines: int  # what `citeline index` said when the disk filled mid-run
    index_exit: int
    tracebacks: int
    search_while_full: bool  # the intact index answered `citeline search`
    index_after: int  # files in the index after space came back and `citeline index` ran
    files: int
    daemon_alive: bool
    daemon_said_full: bool
    daemon_search_while_full: bool
    edited: int
    lost: int  # edits not searchable after space returned
    recovered_seconds: float
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run(work: Path, *, megabytes: int = 24, edits: int = 10) -> Result:
    problems: list[str] = []
    disk = work / "disk"
    with small_disk(disk, megabytes):
        docs = disk / "docs"
        docs.mkdir()
        (docs / "citeline.toml").write_text("# served\n")
        write_docs(docs, range(20))
        first = cli("index", "--docs", str(docs))
        if first.returncode != 0:
            problems.append(f"first index: {first.stderr[-300:]}")
        # -- citeline index, mid-run ------------------------------------------------
        write_docs(docs, range(20, 60))
        filler = fill(disk)
        full = cli("index", "--docs", str(docs))
        said = [line for line in full.stderr.splitlines() if line.strip()]
        tracebacks = full.stderr.count("Traceback")
        if full.returncode != 2 or len(said) != 1 or "disk is full" not in said[0]:
            problems.append(f"index on a full disk: exit {full.returncode}: {said[-3:]}")
        found = cli("search", "--docs", str(docs), "--json", "note 3 says lighthouse")
        tracebacks += found.stderr.count("Traceback")
        hits = json.loads(found.stdout)["hits"] if found.returncode == 0 else []
        search_full = bool(hits) and hits[0]["path"].startswith("note-")
        if not search_full:
            problems.append(
                f"search on a full disk: exit {found.returncode}: {found.stderr[-300:]}"
            )
        filler.unlink()
        again = cli("index", "--docs", str(docs))
        tracebacks += again.stderr.count("Traceback")
        indexed = _indexed(docs)
        clean = [p for p, error in indexed.items() if error is None and p.startswith("note-")]
        if len(clean) != 60:
            problems.append(f"after space came back: {len(clean)} of 60 notes indexed")
        # -- a daemon, mid-edit -----------------------------------------------------
        server, token_file = start_server(work, docs)
        alive = said_full = search_daemon = False
        lost = edits
        recovered = 0.0
        try:
            peer = _connect(token_file)
            _wait(peer, lambda f: f["state"] == "ready" and f["files"] >= 60)
            filler = fill(disk)
            words = [edit(docs, n) for n in range(edits)]
            folder = _wait(peer, lambda f: f["state"] == "error", 60)
            said_full = "disk is full" in (folder.get("message") or "")
            if not said_full:
                problems.append(f"the daemon did not say the disk is full: {folder}")
            answer = peer.request(7, "citeline/search", {"query": "note 5 says lighthouse"}, 60)
            search_daemon = bool((answer.get("result") or {}).get("hits"))
            time.sleep(6)  # it tries again meanwhile; nothing may be lost by that
            filler.unlink()
            started = time.monotonic()
            deadline = started + 120
            n = 1000
            while True:
                missing = []
                for k, word in enumerate(words):
                    n += 1
                    result = peer.request(n, "citeline/search", {"query": word, "k": 1}, 60)
                    hits = (result.get("result") or {}).get("hits") or []
                    if not hits or not str(hits[0].get("uri", "")).endswith(f"note-{k:03d}.md"):
                        missing.append(word)
                lost = len(missing)
                if not missing or time.monotonic() > deadline:
                    break
                time.sleep(1)
            recovered = time.monotonic() - started
            folder = _status(peer, 99)
            if folder["state"] != "ready":
                problems.append(f"the daemon did not recover: {folder['state']}")
            alive = server.poll() is None
            peer.close()
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
        log = (work / "server.log").read_text(errors="replace")
        tracebacks += log.count("Traceback")
    return Result(
        index_error_lines=len(said),
        index_exit=full.returncode,
        tracebacks=tracebacks,
        search_while_full=search_full,
        index_after=len(clean),
        files=60,
        daemon_alive=alive,
        daemon_said_full=said_full,
        daemon_search_while_full=search_daemon,
        edited=edits,
        lost=lost,
        recovered_seconds=round(recovered, 1),
        problems=problems,
    )
