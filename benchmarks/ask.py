"""Answer speed and memory with the default models over the sample documents.

Prints, per question and on average: retrieval time, time to first token,
generation tokens per second and total time; then peak memory.

    .venv/bin/python benchmarks/ask.py [--work /tmp/citeline-bench-ask]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.generation import Generator
from citeline.settings import load_settings
from common import REPO, peak_rss_mb

QUESTIONS = [
    "Where does Citeline store its index?",
    "What happens when a PDF is encrypted?",
    "Does renaming a file embed it again?",
    "Which models does Citeline use by default?",
    "索引保存在哪里？",
]


class _Timed:
    """The real generator, stamping the time of every streamed token."""

    def __init__(self, inner: Generator, stamps: list[float]) -> None:
        self.inner = inner
        self.stamps = stamps
        self.name = inner.name
        self.context_size = inner.context_size
        self.count_tokens = inner.count_tokens

    def stream_chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        for piece in self.inner.stream_chat(messages, **kwargs):
            self.stamps.append(time.perf_counter())
            yield piece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/citeline-bench-ask")
    args = parser.parse_args()
    docs = Path(args.work) / "samples"
    if docs.exists():
        shutil.rmtree(docs)
    shutil.copytree(REPO / "samples", docs)
    settings, _ = load_settings(docs)
    models = ModelPool()
    workspace = open_workspace(docs, settings, models)
    workspace.update()
    started = time.perf_counter()
    generator = workspace.generator()
    print(f"generator load: {time.perf_counter() - started:.2f} s ({generator.name})")

    rows = []
    for question in QUESTIONS:
        stamps: list[float] = []

        def timed(inner: Generator = generator, stamps: list[float] = stamps) -> Generator:
            return _Timed(inner, stamps)

        answer = workspace.ask(question, generator=timed)
        timings = answer.timings
        total = float(timings["total"] or 0)
        first = timings["first_token"]
        # stream pieces are tokens: the rate is over the time after the first one
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
        rows.append((float(timings["retrieval"] or 0), first, rate, total))
        print(
            f"{question[:40]:40}  retrieval {1000 * rows[-1][0]:6.0f} ms"
            f"  first token {first if first is None else round(first, 2)} s"
            f"  {rate:5.1f} tok/s  total {total:5.2f} s"
            f"  {'refused' if answer.refused else f'{len(answer.citations)} citations'}"
        )
    firsts = [r[1] for r in rows if r[1] is not None]
    print(
        f"mean: retrieval {1000 * statistics.fmean(r[0] for r in rows):.0f} ms,"
        f" first token {statistics.fmean(firsts) if firsts else float('nan'):.2f} s,"
        f" {statistics.fmean(r[2] for r in rows if r[2]):.1f} tok/s,"
        f" total {statistics.fmean(r[3] for r in rows):.2f} s"
    )
    workspace.close()
    print(f"peak memory: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
