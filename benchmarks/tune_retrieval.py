"""Choose retrieval defaults on a tuning split: fusion weights, RRF k, refusal thresholds.

Runs dense and keyword retrieval once per query through the normal pipeline
(the corpus is indexed like `citeline eval` does, in the same cache), then
fuses the two ranked lists offline for every combination in a grid, and sweeps
the evidence thresholds over the hybrid hits.  Use only tuning splits (SciFact
train, CMRC 2018 trial).

    .venv/bin/python benchmarks/tune_retrieval.py beir ../shared/eval/scifact --split train
    .venv/bin/python benchmarks/tune_retrieval.py squad ../shared/eval/cmrc2018/cmrc2018_trial.json
    [--max-cost 1000 --overlap-cost 150]   chunk sizes to index with
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.evidence import is_evidence
from citeline.core.answering.settings import AnswerSettings
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Hit
from citeline.core.retrieval import rrf
from citeline.core.scripts import is_cjk
from citeline.evaluation import datasets, runner
from citeline.evaluation.metrics import METRICS, average
from citeline.evaluation.off_topic import OFF_TOPIC_QUESTIONS
from citeline.settings import load_settings

DEPTH = 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["beir", "squad"])
    parser.add_argument("path")
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--max-cost", type=int, default=ChunkSettings.max_cost)
    parser.add_argument("--overlap-cost", type=int, default=ChunkSettings.overlap_cost)
    parser.add_argument("--work", default=os.path.expanduser("~/.cache/citeline/eval"))
    args = parser.parse_args()

    if args.kind == "beir":
        evalset = datasets.load_beir(Path(args.path), args.split)
    else:
        evalset = datasets.load_squad(Path(args.path))
    if args.limit:
        evalset.queries = evalset.queries[: args.limit]
    docs = runner.corpus_folder(Path(args.work), evalset)
    runner.write_corpus(evalset, docs)
    chunking = ChunkSettings(max_cost=args.max_cost, overlap_cost=args.overlap_cost)
    settings, _ = load_settings(docs)
    settings = dataclasses.replace(settings, chunking=chunking)
    if chunking != ChunkSettings():  # other chunk sizes get their own index
        index_dir = docs.parent / f"index-{args.max_cost}-{args.overlap_cost}"
        settings = dataclasses.replace(
            settings, index=dataclasses.replace(settings.index, path=str(index_dir))
        )
    workspace = open_workspace(docs, settings, ModelPool())
    report = workspace.update(
        progress=lambda d, t, p: print(f"\rindexing {d}/{t}", end="", file=sys.stderr)
    )
    print(f"\n{evalset.name}: {report.files} docs, {report.chunks} chunks", file=sys.stderr)

    retriever = workspace.retriever
    dense: dict[str, list[int]] = {}
    keyword: dict[str, list[int]] = {}
    started = time.perf_counter()
    for n, query in enumerate(evalset.queries, start=1):
        _, dense_list = retriever.dense(query.text, DEPTH)
        dense[query.id] = [cid for cid, _ in dense_list]
        keyword[query.id] = [cid for cid, _ in retriever.keyword(query.text, DEPTH)]
        if n % 50 == 0:
            print(f"\rquerying {n}/{len(evalset.queries)}", end="", file=sys.stderr)
    print(f"\nqueries: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    all_ids = {cid for ids in (*dense.values(), *keyword.values()) for cid in ids}
    paths = {cid: c.path for cid, c in workspace.index.chunks_by_id(list(all_ids)).items()}

    def to_docs(ids: list[int]) -> list[str]:
        ranked: list[str] = []
        for cid in ids:
            doc = evalset.doc_id(paths[cid])
            if doc not in ranked:
                ranked.append(doc)
        return ranked

    def score(lists: dict[str, list[int]]) -> dict[str, float]:
        rows = [
            {name: fn(to_docs(lists[q.id]), q.relevant) for name, fn in METRICS.items()}
            for q in evalset.queries
        ]
        return {k: round(v, 4) for k, v in average(rows).items()}

    results: dict[str, object] = {
        "dataset": evalset.name,
        "chunking": chunking.fingerprint(),
        "chunks": report.chunks,
        "dense": score(dense),
        "keyword": score(keyword),
    }
    grid = []
    for k, weight in itertools.product((10, 30, 60, 100), (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)):
        fused = {
            q.id: [cid for cid, _ in rrf([dense[q.id], keyword[q.id]], [1.0, weight], k)]
            for q in evalset.queries
        }
        grid.append({"rrf_k": k, "keyword_weight": weight, **score(fused)})
    grid.sort(key=lambda row: -float(row["ndcg@10"]))
    results["fusion_top"] = grid[:8]
    results["fusion_equal_k60"] = next(
        r for r in grid if r["rrf_k"] == 60 and r["keyword_weight"] == 1.0
    )

    # Refusal: the evidence strength of each query's hits, with and without its
    # relevant documents, and of off-topic questions.
    hits = {q.id: retriever.search(q.text, k=30) for q in evalset.queries}
    off = [retriever.search(text, k=8) for text in OFF_TOPIC_QUESTIONS]

    def refused(top: list[Hit], settings: AnswerSettings, question: str) -> bool:
        cjk = is_cjk(question)
        return not any(is_evidence(h, settings, cjk) for h in top[:8])

    sweep = []
    for min_score, min_kw in itertools.product(
        (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5), (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 9.0)
    ):
        s = AnswerSettings(
            min_score=min_score, min_keyword_score=min_kw, min_keyword_score_cjk=min_kw
        )
        answerable = sum(refused(hits[q.id], s, q.text) for q in evalset.queries)
        removed = sum(
            refused(
                [h for h in hits[q.id] if evalset.doc_id(h.chunk.path) not in q.relevant],
                s,
                q.text,
            )
            for q in evalset.queries
        )
        off_topic = sum(refused(h, s, t) for h, t in zip(off, OFF_TOPIC_QUESTIONS, strict=True))
        n = len(evalset.queries)
        sweep.append(
            {
                "min_score": min_score,
                "min_keyword_score": min_kw,
                "answerable_refused": round(answerable / n, 4),
                "relevant_removed_refused": round(removed / n, 4),
                "off_topic_refused": round(off_topic / len(off), 4),
            }
        )
    results["refusal_sweep"] = sweep
    workspace.close()
    print(json.dumps(results, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
