"""Memory of a first index of many tiny files (issue 23: 100,000 peaked at 962 MB).

Writes N one-paragraph Markdown notes, each its own text, and indexes them once
with the default model in this process, sampling RSS every 50 ms: the peak, and
the RSS after the plan, at each quarter of the files and after the index is saved.
``--tracemalloc`` also prints where Python's memory is at the end of the run (the
biggest allocation sites; it slows the run down).

    .venv/bin/python benchmarks/many_files.py                 # 100,000 files
    .venv/bin/python benchmarks/many_files.py --files 20000 --json
    .venv/bin/python benchmarks/many_files.py --mirrors-only 100000   # the indexes alone
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


def rss_parts_mb() -> dict[str, float]:
    """RSS in its parts: anonymous memory (the heaps: Python's, SQLite's, llama.cpp's,
    numpy's) and file-backed pages (the model file and the mirrors' memory-mapped
    bases, which the kernel may drop and read again)."""
    parts: dict[str, float] = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile", "RssShmem"):
                parts[name[3:].lower()] = int(value.split()[0]) / 1024
    return parts


class Sampler:
    def __init__(self) -> None:
        self.peak = rss_mb()
        self.peak_anon = rss_parts_mb().get("anon", 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())
            self.peak_anon = max(self.peak_anon, rss_parts_mb().get("anon", 0.0))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())
        self.peak_anon = max(self.peak_anon, rss_parts_mb().get("anon", 0.0))


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


def mirrors_only(count: int) -> dict[str, Any]:
    """The two in-memory indexes of a first index of ``count`` notes alone (no model,
    no store): the real FAISS vector index fed random unit vectors of the default
    model's 384 dimensions and the real postings index each note's keyword terms, saved
    every ``SAVE_EVERY_CHUNKS`` chunks as a first index saves them, RSS sampled.  The
    peak comes from writing a new base (compaction), which this isolates."""
    import numpy as np

    from citeline.backends.embedded import SAVE_EVERY_CHUNKS
    from citeline.backends.faiss.index import FaissVectorIndex
    from citeline.backends.postings import PostingsKeywordIndex
    from citeline.core.keywords import terms

    work = Path(tempfile.mkdtemp(prefix="citeline-mirrors-"))
    vectors, keywords = FaissVectorIndex(384), PostingsKeywordIndex()
    rng = np.random.default_rng(1)
    before = rss_parts_mb().get("anon", 0.0)
    begun = time.monotonic()
    with Sampler() as sampler:
        for start in range(0, count, SAVE_EVERY_CHUNKS):
            end = min(count, start + SAVE_EVERY_CHUNKS)
            block = rng.normal(size=(end - start, 384)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            vectors.add(np.arange(start + 1, end + 1, dtype=np.int64), block)
            del block
            for n in range(start, end):
                text = f"Note {n} records item{n} in bin {n % 97} of row {n % 31}."
                keywords.add(n + 1, " ".join(terms(text)))
            vectors.save(work / "vectors.faiss")
            keywords.save(work / "keywords.postings")
    shutil.rmtree(work, ignore_errors=True)
    return {
        "mirrors_only": count,
        "vector_kind": vectors.kind,
        "seconds": round(time.monotonic() - begun, 1),
        "anon_before_mb": round(before, 1),
        "peak_rss_mb": round(sampler.peak, 1),
        "peak_anon_mb": round(sampler.peak_anon, 1),
        "load": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--work", help="a folder to write the notes in (default: a temp one)")
    parser.add_argument("--tracemalloc", action="store_true", help="where Python's memory is")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--mirrors-only",
        type=int,
        metavar="N",
        help="only the vector and keyword indexes of N notes, saved as a first index saves"
        " them (no model, no store): the memory of writing their bases",
    )
    args = parser.parse_args()
    if args.mirrors_only:
        print(json.dumps(mirrors_only(args.mirrors_only), indent=2 if args.json else None))
        return 0
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
    anon: dict[str, float] = {"before": round(rss_parts_mb().get("anon", 0.0), 1)}
    times: dict[str, float] = {}
    quarters = {args.files * q // 4: f"{25 * q}%" for q in (1, 2, 3)}
    begun = time.monotonic()

    def progress(done: int, total: int, rel: str) -> None:
        if done in quarters:
            marks[quarters[done]] = round(rss_mb(), 1)
            anon[quarters[done]] = round(rss_parts_mb().get("anon", 0.0), 1)
            times[quarters[done]] = round(time.monotonic() - begun, 1)

    def planned(count: int) -> None:
        marks["planned"] = round(rss_mb(), 1)
        anon["planned"] = round(rss_parts_mb().get("anon", 0.0), 1)

    if args.tracemalloc:
        tracemalloc.start(8)
    with Sampler() as sampler:
        begun = time.monotonic()
        report = workspace.update(progress=progress, planned=planned)
        seconds = time.monotonic() - begun
        marks["saved"] = round(rss_mb(), 1)
        anon["saved"] = round(rss_parts_mb().get("anon", 0.0), 1)
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
        "peak_anon_mb": round(sampler.peak_anon, 1),
        "rss_mb": marks,
        "anon_mb": anon,
        "seconds_at": times,
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
    print(
        f"anonymous (MB, peak {out['peak_anon_mb']}): "
        + ", ".join(f"{k} {v}" for k, v in anon.items())
    )
    print("seconds at: " + ", ".join(f"{k} {v}" for k, v in times.items()))
    print(f"load average {load_before:.2f} -> {out['load_after']:.2f}")
    for line in top:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
