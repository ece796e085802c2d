"""The embedded keyword index's search at 100k and 1M chunks, in process.

    .venv/bin/python benchmarks/keywords.py [--sizes 100000,1000000] [--queries 100] [--json]

For each size a postings index (``backends/postings``) is built from synthetic chunks
of SciFact's abstracts (``common.synthetic_terms``: about 80 near-copies of each
abstract piece at 1M), written and memory-mapped as the daemon holds it, then searched
for SciFact's claims (the retriever's pool, k = 50): p50/p95 in wall time and in this
thread's CPU time (less bent by a busy machine).  The load average is printed before
and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from citeline.backends.postings.index import PostingsKeywordIndex
from citeline.core.keywords import query_terms
from citeline.settings import BUNDLED_MODEL_RETRIEVAL
from common import REPO, abstract_pieces, load_average, peak_rss_mb, synthetic_terms

QUERIES = REPO.parent / "shared" / "eval" / "scifact" / "queries.jsonl"
FIXTURE_QUERIES = REPO / "tests" / "fixtures" / "eval" / "scifact-slice" / "queries.jsonl"


def log(message: str) -> None:
    print(f"[keywords] {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def claims(limit: int) -> list[list[str]]:
    source = QUERIES if QUERIES.is_file() else FIXTURE_QUERIES
    rows = [json.loads(line) for line in source.read_text("utf-8").splitlines()]
    return [query_terms(str(r["text"])) for r in rows[:limit]]


def percentiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50_ms": round(1000 * statistics.median(ordered), 2), "p95_ms": round(1000 * p95, 2)}


def measure(size: int, queries: list[list[str]], k: int) -> dict[str, Any]:
    started = time.perf_counter()
    rows = synthetic_terms(abstract_pieces(), size)
    built = PostingsKeywordIndex.build((i, next(rows)) for i in range(1, size + 1))
    build_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="citeline-keywords-") as folder:
        path = Path(folder) / "keywords.postings"
        built._compact(path)  # a base written and mapped, as the daemon opens it
        del built
        index = PostingsKeywordIndex.load(path)
        log(f"{size:,} chunks built in {build_s:.0f} s; searching")
        for query in queries[:5]:  # warm the pages
            index.search(query, k)
        wall, cpu = [], []
        for query in queries:
            started, used = time.perf_counter(), time.thread_time()
            index.search(query, k)
            wall.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - used)
    return {"build_s": round(build_s, 1), "search": percentiles(wall), "cpu": percentiles(cpu)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    queries = claims(args.queries)
    k = BUNDLED_MODEL_RETRIEVAL.candidates
    report: dict[str, Any] = {"k": k, "queries": len(queries), "sizes": {}}
    for size in (int(s) for s in args.sizes.split(",") if s):
        before = load_average()
        entry = measure(size, queries, k)
        entry["load_before"], entry["load_after"] = before, load_average()
        entry["peak_rss_mb"] = round(peak_rss_mb())
        report["sizes"][str(size)] = entry
        if not args.json:
            print(
                f"{size:,} chunks (load {before[0]} before, {entry['load_after'][0]} after):"
                f" search p50 {entry['search']['p50_ms']} / p95 {entry['search']['p95_ms']} ms,"
                f" CPU p50 {entry['cpu']['p50_ms']} / p95 {entry['cpu']['p95_ms']} ms,"
                f" build {entry['build_s']} s"
            )
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
