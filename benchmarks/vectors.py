"""Benchmark the FAISS index kinds a folder's vector index can take (issue 14, goal 3).

For each size and kind: recall@10 against exact search, search latency (p50/p95, one
query at a time on one thread, as the daemon searches), memory (the saved base's
bytes, and the process's resident growth while building it) and build time.

Vectors are synthetic but shaped like text embeddings rather than uniform noise
(uniform noise in 384 dimensions has no near neighbours, which no index is built
for): unit vectors drawn around n/100 random centres; queries are other points
drawn the same way, not in the index.

    .venv/bin/python benchmarks/vectors.py [--sizes 100000 1000000]
        [--kinds flat flat-fp16 ivf-sq8 hnsw] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.backends.faiss import kinds

DIMENSION = 384  # all-MiniLM-L6-v2
K = 10
SPREAD = 1.0  # noise around a centre, as long as the centre: neighbours are not obvious


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def unit(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def clustered(
    rng: np.random.Generator, centres: npt.NDArray[np.float32], n: int
) -> npt.NDArray[np.float32]:
    out = np.empty((n, DIMENSION), dtype=np.float32)
    step = 50_000
    for start in range(0, n, step):
        m = min(step, n - start)
        picks = centres[rng.integers(0, len(centres), m)]
        noise = rng.standard_normal((m, DIMENSION), dtype=np.float32) * (
            SPREAD / np.sqrt(DIMENSION)
        )
        out[start : start + m] = unit(picks + noise)
    return out


def exact_top(
    vectors: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], k: int
) -> list[set[int]]:
    best: list[set[int]] = []
    for query in queries:
        scores = vectors @ query
        top = np.argpartition(-scores, k)[:k]
        best.append({int(i) for i in top})
    return best


def measure(
    kind: str,
    ids: npt.NDArray[np.int64],
    vectors: npt.NDArray[np.float32],
    queries: npt.NDArray[np.float32],
    truth: list[set[int]],
) -> dict[str, Any]:
    before = rss_mb()
    started = time.perf_counter()
    base = kinds.build_base(kind, ids, vectors, DIMENSION)
    build_s = time.perf_counter() - started
    grown = rss_mb() - before
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        kinds.write_base(base, Path(folder), "bench")
        on_disk = sum(p.stat().st_size for p in Path(folder).iterdir())
        opened = rss_mb()
        mapped = kinds.read_base(Path(folder), "bench", kind, DIMENSION)
        latencies, cpu, recalls = [], [], []
        for query, expected in zip(queries, truth, strict=True):
            q = query.reshape(1, -1)
            t, c = time.perf_counter(), time.thread_time()
            found = mapped.search(q, K, None)
            cpu.append(time.thread_time() - c)
            latencies.append(time.perf_counter() - t)
            recalls.append(len({i for i, _ in found} & expected) / K)
        searched = rss_mb() - opened  # the mapped pages the searches read
        del mapped
    ordered, cpu = sorted(latencies), sorted(cpu)
    return {
        "kind": kind,
        "vectors": len(ids),
        "recall_at_10": round(statistics.fmean(recalls), 4),
        "search_p50_ms": round(statistics.median(ordered) * 1000, 2),
        "search_p95_ms": round(ordered[round(0.95 * (len(ordered) - 1))] * 1000, 2),
        "search_cpu_p50_ms": round(statistics.median(cpu) * 1000, 2),
        "search_cpu_p95_ms": round(cpu[round(0.95 * (len(cpu) - 1))] * 1000, 2),
        "rss_searched_mb": round(searched, 1),
        "build_s": round(build_s, 1),
        "base_mb": round(on_disk / 2**20, 1),
        "rss_growth_mb": round(grown, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--kinds", nargs="+", default=list(kinds.KINDS), choices=kinds.KINDS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--vectors",
        type=Path,
        help="a .npy matrix of real vectors (e.g. a folder's vectors.npy) instead of"
        " synthetic ones: its last --queries rows are the queries, the rest the index",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args()
    rows = []
    print(f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    for size in args.sizes:
        if args.vectors is not None:
            given = np.load(args.vectors, mmap_mode="r")
            size = min(size, len(given) - args.queries)
            vectors = unit(np.array(given[:size], dtype=np.float32))
            queries = unit(np.array(given[-args.queries :], dtype=np.float32))
        else:
            rng = np.random.default_rng(size)
            centres = unit(rng.standard_normal((max(size // 100, 1), DIMENSION), dtype=np.float32))
            vectors = clustered(rng, centres, size)
            queries = clustered(rng, centres, args.queries)
        ids = np.arange(1, size + 1, dtype=np.int64)
        truth = [{int(i) + 1 for i in best} for best in exact_top(vectors, queries, K)]
        for kind in args.kinds:
            row = measure(kind, ids, vectors, queries, truth)
            rows.append(row)
            print(
                f"{size:>9,} {kind:<9} recall@10 {row['recall_at_10']:.3f}"
                f"  search p50 {row['search_p50_ms']:6.2f} ms p95 {row['search_p95_ms']:6.2f} ms"
                f" (CPU {row['search_cpu_p50_ms']:.2f} / {row['search_cpu_p95_ms']:.2f})"
                f"  build {row['build_s']:6.1f} s  base {row['base_mb']:7.1f} MB"
                f"  rss +{row['rss_growth_mb']:.0f} MB, searched +{row['rss_searched_mb']:.0f} MB"
                f"  (load {row['load_average']})",
                flush=True,
            )
        del vectors
    if args.json:
        print(json.dumps({"k": K, "dimension": DIMENSION, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
