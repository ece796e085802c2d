"""An embedding model's resident memory, step by step, as a daemon uses it.

Loads a bundled model as the server does (``app.make_embedder``) and prints the
process's resident memory (VmRSS) after: the imports, the load (one lane), a query,
twelve short answer units (the second lane made: a 2-core machine embeds on two),
twelve ~240-token passages, and one ~400-token passage; then the peak and the load
time.  Each llama.cpp context keeps a host output buffer of ``n_vocab`` floats for
each output it has room for, cleared when made and grown by the longest decode, so
the model's vocabulary (multilingual-e5-small: 250,002 pieces; MiniLM: 30,522) and
the context's ``n_seq_max`` show here.

    .venv/bin/python benchmarks/embedder_memory.py [--model multilingual-e5-small] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from citeline.app import make_embedder
from citeline.settings import E5, EmbeddingSettings
from common import load_average, peak_rss_mb

SHORT = "第{}段：长江是中国最长的河流，全长约六千三百公里。"


def rss_mb() -> float:
    """Resident memory of this process now, in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def measure(model: str) -> dict[str, Any]:
    steps: dict[str, float] = {"imports": rss_mb()}
    started = time.perf_counter()
    embedder = make_embedder(EmbeddingSettings(model=model))
    load_s = time.perf_counter() - started
    steps["loaded"] = rss_mb()
    embedder.embed_query("How long is the Yangtze river?")
    steps["query"] = rss_mb()
    units = [SHORT.format(i) for i in range(12)]
    embedder.embed_documents(units)
    steps["12 short units"] = rss_mb()
    embedder.embed_documents([u * 12 for u in units])
    steps["12 passages"] = rss_mb()
    embedder.embed_documents([units[0] * 20])
    steps["one long passage"] = rss_mb()
    return {
        "model": embedder.name,
        "load_s": round(load_s, 3),
        "passage_tokens": embedder.count_tokens(units[0] * 12),
        "long_tokens": embedder.count_tokens(units[0] * 20),
        "rss_mb": {k: round(v, 1) for k, v in steps.items()},
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=E5, help="a bundled model's name (default: e5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    before = load_average()
    result = measure(args.model)
    result["load_average"] = {"before": before, "after": load_average()}
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['model']}: loaded in {result['load_s']:.2f} s")
    for step, mib in result["rss_mb"].items():
        print(f"  after {step:18s} {mib:8.1f} MiB")
    print(f"  peak {result['peak_rss_mb']:.1f} MiB; load average {result['load_average']}")


if __name__ == "__main__":
    main()
