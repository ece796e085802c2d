"""History at its bound: listing, searching, showing and deleting in a full ask log.

One real ask on a copy of the samples, its record copied to fill the log to the
bound (1,000 asks, each with its own id), then the time of what a client does:
list the newest page (50), search it (a case-insensitive substring), show the
oldest entry (comparing its cited files with the disk), delete one entry.
Medians over ``--runs``; the log's size and the load average are printed with
the figures (on a busy machine they are upper bounds).

    .venv/bin/python benchmarks/history.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeline.app import open_workspace
from citeline.service.history import FolderHistory, page
from citeline.settings import load_settings
from common import REPO

QUESTION = "Where does Citeline store its index?"
RECORDS = 1000


def timed(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="citeline-history-bench-") as work:
        docs = Path(work) / "samples"
        shutil.copytree(REPO / "samples", docs, ignore=shutil.ignore_patterns(".citeline"))
        settings, _ = load_settings(docs)
        workspace = open_workspace(docs, settings)
        try:
            workspace.update()
            workspace.ask(QUESTION)
        finally:
            workspace.close()
        log = settings.index_dir(docs) / "asks.jsonl"
        record = json.loads(log.read_text("utf-8").splitlines()[-1])
        with log.open("w", encoding="utf-8") as handle:
            for _ in range(RECORDS):
                record["id"] = uuid.uuid4().hex[:16]
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        history = FolderHistory.of(docs, settings)
        oldest = page([history], None, 1, RECORDS - 1).entries[0].id
        out = {
            "records": RECORDS,
            "log_mb": round(log.stat().st_size / 1e6, 2),
            "list_ms": timed(lambda: page([history], None, 50, 0), runs),
            "search_ms": timed(lambda: page([history], "STORE ITS", 50, 0), runs),
            "show_ms": timed(lambda: history.entry(oldest), runs),
        }
        ids = [e.id for e in page([history], None, runs, 0).entries]
        out["delete_ms"] = timed(lambda: history.delete(ids.pop()), runs)
    out["runs"] = runs
    out["loadavg"] = os.getloadavg()[0]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    out = measure(max(args.runs, 1))
    if args.json:
        print(json.dumps(out))
        return 0
    print(
        f"history of {out['records']} asks ({out['log_mb']} MB log), load {out['loadavg']:.2f},"
        f" medians of {out['runs']}:"
    )
    print(f"  list the newest 50   {out['list_ms']:7.1f} ms")
    print(f"  search (substring)   {out['search_ms']:7.1f} ms")
    print(f"  show the oldest      {out['show_ms']:7.1f} ms")
    print(f"  delete one           {out['delete_ms']:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
