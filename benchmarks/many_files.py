"""Memory of a first index of many tiny files (issue 23: 100,000 peaked at 962 MB).

Writes N one-paragraph Markdown notes, each its own text, and indexes them once
with the default model in this process, sampling RSS every 50 ms: the peak, and
the RSS after the plan, at each quarter of the files and after the index is saved.
``--tracemalloc`` also prints where Python's memory is at the end of the run (the
biggest allocation sites; it slows the run down).

    .venv/bin/python benchmarks/many_files.py                 # 100,000 files
    .venv/bin/python benchmarks/many_files.py --files 20000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from citeline.app import ModelPool, open_workspace
from citeline.settings import load_settings


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Sampler:
    def __init__(self) -> None:
        self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def write_notes(docs: Path, count: int) -> None:
    docs.mkdir(parents=True)
    (docs / "citeline.toml").write_text("# served\n")
    for n in range(count):
        folder = docs / f"part-{n // 1000:03d}"
        if n % 1000 == 0:
            folder.mkdir()
        (folder / f"note-{n:06d}.md").write_text(
            f"# Note {n}\n\nNote {n} records item{n} in bin {n % 97} of row {n % 31}.\n"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--work", help="a folder to write the notes in (default: a temp one)")
    parser.add_argument("--tracemalloc", action="store_true", help="where Python's memory is")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="citeline-many-"))
    docs = work / "docs"
    shutil.rmtree(docs, ignore_errors=True)
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    write_notes(docs, args.files)
    wrote = time.monotonic() - started
    pool = ModelPool()
    settings, _ = load_settings(docs)
    workspace = open_workspace(docs, settings, pool)
    workspace.ingestor.embedder.embed_query("warm up")  # the model's memory, before the run
    marks: dict[str, float] = {"before": round(rss_mb(), 1)}
    quarters = {args.files * q // 4: f"{25 * q}%" for q in (1, 2, 3)}

    def progress(done: int, total: int, rel: str) -> None:
        if done in quarters:
            marks[quarters[done]] = round(rss_mb(), 1)

    def planned(count: int) -> None:
        marks["planned"] = round(rss_mb(), 1)

    if args.tracemalloc:
        tracemalloc.start(8)
    with Sampler() as sampler:
        begun = time.monotonic()
        report = workspace.update(progress=progress, planned=planned)
        seconds = time.monotonic() - begun
        marks["saved"] = round(rss_mb(), 1)
    top: list[str] = []
    if args.tracemalloc:
        snapshot = tracemalloc.take_snapshot()
        for stat in snapshot.statistics("traceback")[:8]:
            frames = [f"{f.filename.split('citeline/')[-1]}:{f.lineno}" for f in stat.traceback]
            top.append(f"{stat.size / 2**20:.1f} MB in {stat.count}: {' < '.join(frames[-4:])}")
        tracemalloc.stop()
    workspace.close()
    out: dict[str, Any] = {
        "files": args.files,
        "chunks": report.chunks,
        "write_seconds": round(wrote, 1),
        "index_seconds": round(seconds, 1),
        "files_per_second": round(args.files / seconds, 1),
        "peak_rss_mb": round(sampler.peak, 1),
        "rss_mb": marks,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "python_memory_at_end": top,
    }
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{args.files} files, {report.chunks} chunks indexed in {out['index_seconds']} s"
        f" ({out['files_per_second']} files/s); peak RSS {out['peak_rss_mb']} MB"
    )
    print("RSS (MB): " + ", ".join(f"{k} {v}" for k, v in marks.items()))
    print(f"load average {load_before:.2f} -> {out['load_after']:.2f}")
    for line in top:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
