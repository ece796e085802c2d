"""Embedding throughput at a forced lane count, quiet and beside one busy process.

For each of 1, 2 and 3 lanes (the encoder's count forced, whatever ``cpu_free``
reads): chunks/s and the cores the process used over 128 chunks (``--chunks``),
with nothing added, beside a busy process in this benchmark's own session (the
scheduler's per-thread fairness) and beside one in a session of its own (as from
another terminal: grouped apart under autogroup).  It decides ``cpu_free.BEYOND``.

    .venv/bin/python benchmarks/lanes_load.py [--rounds 1] [--chunks 128] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from citeline.app import ModelPool
from citeline.core.chunking import chunk_document, embedding_text
from citeline.core.loaders import load_document
from citeline.settings import load_settings
from common import others_now, scientific_abstracts, write_corpus

SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"


class NobodyElse:
    """``cpu_free.FreeCpu``'s place: the lane count stays the one forced."""

    last = 0

    def others(self) -> int:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--chunks", type=int, default=128)
    parser.add_argument("--work", default="/tmp/citeline-bench-lanes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"load_average_before": os.getloadavg(), "others_before": others_now()}
    docs = write_corpus(Path(args.work) / "docs", scientific_abstracts(400))
    settings, _ = load_settings(docs)
    embedder: Any = ModelPool().embedder(settings.embedding)
    texts: list[str] = []
    for path in sorted(docs.glob("papers-*.md"))[:40]:
        document = load_document(path, path.name)
        chunks = chunk_document(document, settings.chunking)
        texts += [embedding_text(c, settings.chunking) for c in chunks]
    texts = texts[: args.chunks]
    embedder.embed_documents(texts[:16])
    embedder._free_cpu = NobodyElse()
    figures: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for beside in ("nothing", "same session", "own session"):
            spinners = []
            if beside != "nothing":
                own = beside == "own session"
                spinners = [subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=own)]
                time.sleep(0.3)
            try:
                for lanes in (1, 2, 3):
                    embedder._thread_limit.maximum = embedder._thread_limit.current = lanes
                    started, cpu = time.perf_counter(), time.process_time()
                    embedder.embed_documents(texts)
                    wall = time.perf_counter() - started
                    cores = (time.process_time() - cpu) / wall
                    rate = len(texts) / wall
                    figures.setdefault(f"{beside}/{lanes}", []).append((rate, cores))
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
    result["chunks"] = len(texts)
    result["median"] = {
        key: {
            "chunks_per_s": round(statistics.median(r for r, _ in values), 1),
            "cores": round(statistics.median(c for _, c in values), 2),
        }
        for key, values in figures.items()
    }
    result["load_average_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result["median"].items():
        print(f"{key:<16} {value['chunks_per_s']:6.1f} chunks/s  {value['cores']:.2f} cores")
    before, after = result["load_average_before"][0], result["load_average_after"][0]
    print(f"load average {before:.2f} -> {after:.2f}")


if __name__ == "__main__":
    main()
