"""A damaged index folder, every way we know: each is recovered by the next command
(moved aside and rebuilt, said once), never a traceback or a command that fails.
Used by tests/torture/test_damage.py and benchmarks/torture.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from torture.hostile import PROSE


def _truncate(index: Path) -> None:
    store = index / "index.sqlite3"
    store.write_bytes(store.read_bytes()[: store.stat().st_size // 3])


def _overwrite(index: Path) -> None:
    store = index / "index.sqlite3"
    store.write_bytes(os.urandom(store.stat().st_size))


def _header_only(index: Path) -> None:
    store = index / "index.sqlite3"
    data = bytearray(store.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)
    store.write_bytes(bytes(data))


def _store_folder(index: Path) -> None:
    (index / "index.sqlite3").unlink()
    (index / "index.sqlite3").mkdir()


def _wal_garbage(index: Path) -> None:
    (index / "index.sqlite3-wal").write_bytes(os.urandom(5000))
    (index / "index.sqlite3-shm").write_bytes(os.urandom(40000))


def _deleted(index: Path) -> None:
    (index / "index.sqlite3").unlink()


def _vectors_garbage(index: Path) -> None:
    for path in index.glob("vectors.faiss*"):
        path.write_bytes(os.urandom(3000))


def _lock_folder(index: Path) -> None:
    lock = index / "lock"
    if lock.exists():
        lock.unlink()
    lock.mkdir()


def _lock_fifo(index: Path) -> None:
    lock = index / "lock"
    if lock.exists():
        lock.unlink()
    os.mkfifo(lock)


def _index_file(index: Path) -> None:
    shutil.rmtree(index)
    index.write_text("not a folder")


def _empty_store(index: Path) -> None:
    (index / "index.sqlite3").write_bytes(b"")


DAMAGE: dict[str, Callable[[Path], None]] = {
    "store truncated": _truncate,
    "store overwritten": _overwrite,
    "store header only": _header_only,
    "store empty": _empty_store,
    "store is a folder": _store_folder,
    "WAL and SHM garbage": _wal_garbage,
    "store deleted": _deleted,
    "vector files garbage": _vectors_garbage,
    "lock is a folder": _lock_folder,
    "lock is a FIFO": _lock_fifo,
    ".citeline is a file": _index_file,
}


def search(docs: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "citeline.cli", "search", "--docs", str(docs)]
    return subprocess.run(
        [*command, "--json", "lighthouse weather"], capture_output=True, text=True, timeout=300
    )


def indexed_folder(work: Path) -> Path:
    """A small documents folder with its index, to copy for each kind of damage."""
    docs = work / "template"
    docs.mkdir(parents=True)
    (docs / "keeper.md").write_text("# Keeper\n\n" + PROSE)
    first = search(docs)
    assert first.returncode == 0, first.stderr[-300:]
    return docs


def recovers(work: Path, name: str, template: Path) -> str | None:
    """None when ``search`` after the damage ``name`` to a copy of ``template`` answers
    with the passage and says so in at most one warning line; else what went wrong."""
    docs = work / name.replace(" ", "-")
    shutil.copytree(template, docs)
    DAMAGE[name](docs / ".citeline")
    after = search(docs)
    if after.returncode != 0 or "Traceback" in after.stderr:
        return f"exit {after.returncode}: {after.stderr[-300:]}"
    hits = json.loads(after.stdout)["hits"]
    if not hits or hits[0]["path"] != "keeper.md":
        return f"no passage after recovery: {after.stdout[:200]}"
    warnings = [ln for ln in after.stderr.splitlines() if "damaged" in ln or "moved" in ln]
    if len(warnings) > 1:
        return f"{len(warnings)} warnings: {warnings}"
    return None
