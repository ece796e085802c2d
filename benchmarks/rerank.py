"""What reranking costs: search latency with and without a GGUF reranker.

Indexes 200 scientific abstracts plus the samples with the default embedding model,
then runs 20 questions through hybrid search alone and through hybrid search with
the reranker reordering the best N hits, for several N.  Prints p50/p95 latency,
pairs scored per second, tokens per pair and peak memory.

Without ``--reranker`` it measures a MiniLM-L6 cross-encoder the tests build
(tests/conftest.py: the shape and speed of an ms-marco MiniLM-L6 reranker, with an
untrained classifier, so only its speed means something here).

    .venv/bin/python benchmarks/rerank.py [--reranker model.gguf] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.backends.llama.reranker import LlamaReranker
from citeline.core.chunking import embedding_text
from citeline.models.bert_gguf import convert_bert_to_gguf
from citeline.settings import load_settings
from common import REPO, peak_rss_mb, scientific_abstracts, write_corpus

QUESTIONS = [
    "Where does Citeline store its index?",
    "What happens when a PDF is encrypted?",
    "Does renaming a file embed it again?",
    "Which models does Citeline use by default?",
    "How are citations built from the evidence?",
    "vitamin D deficiency and bone fractures in elderly people",
    "gene expression changes in tumour cells after chemotherapy",
    "effect of exercise on blood pressure",
    "antibiotic resistance in hospital infections",
    "sleep duration and cognitive decline",
    "protein folding in neurodegenerative disease",
    "vaccine efficacy against influenza",
    "obesity and type 2 diabetes risk",
    "smoking and lung cancer incidence",
    "stem cell therapy for heart failure",
    "air pollution and asthma in children",
    "gut microbiome and immune response",
    "insulin signalling in the liver",
    "malaria parasite drug resistance",
    "DNA repair mechanisms and ageing",
]


def stand_in_reranker(work: Path) -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import build_cross_encoder

    target = work / "tiny-cross-encoder.f16.gguf"
    if not target.is_file():
        source = build_cross_encoder(work / "tiny-cross-encoder")
        convert_bert_to_gguf(source, target, f16=True)
    return target


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/citeline-bench-rerank")
    parser.add_argument("--reranker", help="GGUF reranker (default: the tests' MiniLM one)")
    parser.add_argument("--threads", type=int, default=0, help="reranker threads (0 = all)")
    parser.add_argument("--candidates", default="10,20,40")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    reranker_path = Path(args.reranker) if args.reranker else stand_in_reranker(work)

    docs = work / "docs"
    if not (docs / ".citeline").is_dir():
        write_corpus(docs, scientific_abstracts(200))
    settings, _ = load_settings(docs)
    models = ModelPool()
    workspace = open_workspace(docs, settings, models)
    report = workspace.update()
    print(f"corpus: {report.files} files, {report.chunks} chunks")

    started = time.perf_counter()
    reranker = LlamaReranker(reranker_path, n_threads=args.threads or None)
    print(f"reranker load: {time.perf_counter() - started:.2f} s ({reranker.name})")
    retriever = workspace.retriever
    retriever.reranker = lambda: reranker
    chunking = workspace.index.identity.chunking

    def run(candidates: int, rerank: bool) -> list[float]:
        retriever.rerank_candidates = candidates
        times = []
        for question in QUESTIONS:
            began = time.perf_counter()
            retriever.search(question, k=8, rerank=rerank)
            times.append(time.perf_counter() - began)
        return times

    run(10, rerank=False)  # warm the caches
    base = run(10, rerank=False)
    print(
        f"{'hybrid only':>16}  p50 {1000 * statistics.median(base):7.1f} ms"
        f"  p95 {1000 * percentile(base, 0.95):7.1f} ms"
    )
    for candidates in (int(n) for n in args.candidates.split(",")):
        times = run(candidates, rerank=True)
        hits = [retriever.search(q, k=candidates, rerank=False) for q in QUESTIONS[:5]]
        texts = [embedding_text(h.chunk, chunking) for found in hits for h in found]
        tokens = statistics.mean(len(reranker.pair_tokens(QUESTIONS[0], t)) for t in texts)
        extra = statistics.median(times) - statistics.median(base)
        print(
            f"{'rerank ' + str(candidates):>16}  p50 {1000 * statistics.median(times):7.1f} ms"
            f"  p95 {1000 * percentile(times, 0.95):7.1f} ms"
            f"  {candidates / extra if extra > 0 else float('inf'):6.1f} pairs/s"
            f"  {tokens:5.0f} tokens/pair"
        )
    print(f"peak memory: {peak_rss_mb():.0f} MiB")
    workspace.close()


if __name__ == "__main__":
    main()
