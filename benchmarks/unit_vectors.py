"""What embedding every chunk's answer units at index time would cost.

An extractive ask embeds the best units of its evidence (``core/answering``); their
vectors are kept by content key once computed (``unit_vectors.py``).  The other
way, embedding every unit of every chunk while indexing, makes no ask embed a
unit, at this cost: for chunks of an indexed folder (the first ``--chunks`` by
id), the units per chunk, the tokens of their embedding inputs against the
chunks' own, and the seconds to embed each set with the folder's bundled model
(the two interleaved over ``--rounds``, medians), so the ratio holds under load.

    .venv/bin/python benchmarks/unit_vectors.py --docs DIR [--chunks 200] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.features import embedding_input, repeats_heading
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import split_units
from citeline.core.chunking import embedding_text
from citeline.core.documents import Hit
from citeline.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, required=True, help="an indexed folder")
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings, _ = load_settings(args.docs)
    workspace = open_workspace(args.docs, settings, ModelPool())
    embedder = workspace.embedder
    chunks = list(workspace.index.chunks_by_id(range(1, args.chunks + 1)).values())
    chunk_texts = [embedding_text(c, settings.chunking) for c in chunks]
    unit_texts = []
    for chunk in chunks:
        evidence = Evidence(1, Hit(0, 1, 0.0, chunk))
        unit_texts += [
            embedding_input(u, evidence)
            for u in split_units(chunk.text)
            if not repeats_heading(u, evidence)
        ]
    seconds: dict[str, list[float]] = {"chunks": [], "units": []}
    load = [round(os.getloadavg()[0], 2)]
    for _ in range(args.rounds):
        for name, texts in (("chunks", chunk_texts), ("units", unit_texts)):
            started = time.perf_counter()
            embedder.embed_documents(texts)
            seconds[name].append(time.perf_counter() - started)
    load.append(round(os.getloadavg()[0], 2))
    chunk_s, unit_s = (statistics.median(seconds[k]) for k in ("chunks", "units"))
    tokens = {
        "chunks": sum(embedder.count_tokens(t) for t in chunk_texts),
        "units": sum(embedder.count_tokens(t) for t in unit_texts),
    }
    out = {
        "model": embedder.name,
        "chunks": len(chunks),
        "units": len(unit_texts),
        "units_per_chunk": round(len(unit_texts) / max(1, len(chunks)), 2),
        "tokens": tokens,
        "chunks_s": round(chunk_s, 3),
        "units_s": round(unit_s, 3),
        "units_over_chunks": round(unit_s / chunk_s, 2),
        "loadavg_1m": load,
    }
    workspace.close()
    if args.json:
        print(json.dumps(out))
        return
    print(
        f"{out['chunks']} chunks, {out['units']} units ({out['units_per_chunk']} per chunk),"
        f" tokens {tokens['units']} against {tokens['chunks']}"
    )
    print(
        f"embedding (median of {args.rounds}): chunks {chunk_s:.2f} s, their units {unit_s:.2f} s"
        f" = {out['units_over_chunks']}x the chunks' embedding work (load average {load})"
    )


if __name__ == "__main__":
    main()
