"""Embedding and generating at the same time, as the daemon does when an ask arrives
while a folder is indexing: with the CPU share (each model gets its part of the cores
while both compute) and without it (each model uses every core).

Prints, for each mode, generation tokens/s and embedding chunks/s, each alone and
while the other runs (median of ``--rounds``).

    .venv/bin/python benchmarks/contention.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

from citeline.app import make_embedder, make_generator
from citeline.backends.llama import cpu_share
from citeline.settings import EmbeddingSettings, GenerationSettings
from common import scientific_abstracts

MESSAGES = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Explain how a library catalogue helps readers find books."},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = [text for _, text in scientific_abstracts(100)]
    embedder = make_embedder(EmbeddingSettings())
    generator = make_generator(GenerationSettings())

    def embed_until(stop: threading.Event, out: list[float]) -> None:
        done, started = 0, time.perf_counter()
        while not stop.is_set():
            embedder.embed_documents(texts[done % 96 : done % 96 + 4])
            done += 4
        out.append(done / (time.perf_counter() - started))

    def generate() -> float:
        tokens, started = 0, time.perf_counter()
        for _ in generator.stream_chat(
            MESSAGES, max_tokens=96, temperature=0.0, should_stop=lambda: False
        ):
            tokens += 1
        return tokens / (time.perf_counter() - started)

    def one_round() -> tuple[float, float, float, float]:
        gen_alone = generate()
        stop, rates = threading.Event(), []
        worker = threading.Thread(target=embed_until, args=(stop, rates))
        worker.start()
        time.sleep(3)
        stop.set()
        worker.join()
        embed_alone = rates[0]
        stop, rates = threading.Event(), []
        worker = threading.Thread(target=embed_until, args=(stop, rates))
        worker.start()
        time.sleep(0.5)
        gen_together = generate()
        stop.set()
        worker.join()
        return gen_alone, embed_alone, gen_together, rates[0]

    shared_threads = cpu_share.CPU.threads
    every_core: Callable[[object, int], int] = lambda _model, maximum: maximum  # noqa: E731
    for label, threads in (("CPU share", shared_threads), ("every core", every_core)):
        cpu_share.CPU.threads = threads  # type: ignore[method-assign]
        rounds = [one_round() for _ in range(args.rounds)]
        gen_alone, embed_alone, gen_together, embed_together = (
            statistics.median(column) for column in zip(*rounds, strict=True)
        )
        print(
            f"{label:>10}: generation {gen_alone:5.1f} tok/s alone, {gen_together:5.1f} while"
            f" embedding; embedding {embed_alone:5.1f} chunks/s alone,"
            f" {embed_together:5.1f} while generating"
        )


if __name__ == "__main__":
    main()
