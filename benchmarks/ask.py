"""Answer speed with the default models over the sample documents, quiet and busy.

For each answer mode (extractive, generative) and each load (0, 1 and 2 other
processes spinning on the CPU, as an editor, a browser or a compiler would):
retrieval time, time to the first visible answer text, and total time per
question (medians over the questions); then the raw model figures under the same
loads: the generator's time to first token and tokens/s on a fixed prompt, and
the embedder's chunks/s.  ``--spin`` makes llama.cpp's threads spin while they
wait (``OMP_WAIT_POLICY=ACTIVE``, libgomp's default) instead of sleeping, for
comparison.

The extractive answer's time after retrieval (p50 / p95) is given three ways, by
where the answer units' vectors come from (``core/answering/unit_vectors.py``):
``cold``, every unit embedded (the first ask of new evidence); ``kept``, from the
index's kept vectors (a new process); ``memory``, from the workspace's memory (the
daemon asking again).  ``--docs`` and ``--questions`` (JSON lines with a
``question``) ask another folder, indexed in place, instead of the samples;
``--limit`` asks only the first questions.

    .venv/bin/python benchmarks/ask.py [--loads 0,1,2] [--spin] [--json]
        [--docs DIR --questions FILE.jsonl] [--limit N] [--extractive-only]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.unit_vectors import UnitVectors
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator
from citeline.service.workspace import Workspace
from citeline.settings import load_settings
from common import REPO, busy_processes, peak_rss_mb, scientific_abstracts

QUESTIONS = [
    "Where does Citeline store its index?",
    "What happens when a PDF is encrypted?",
    "Does renaming a file embed it again?",
    "Which models does Citeline use by default?",
    "How do I change the embedding model?",
    "索引保存在哪里？",
]
PROMPT = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Explain how a library catalogue helps readers find books."},
]


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else float("nan")


def generator_figures(generator: Generator, rounds: int = 3) -> dict[str, float]:
    firsts, rates = [], []
    for _ in range(rounds):
        stamps: list[float] = []
        started = time.perf_counter()
        for _piece in generator.stream_chat(
            PROMPT, max_tokens=48, temperature=0.0, should_stop=lambda: False
        ):
            stamps.append(time.perf_counter())
        firsts.append(stamps[0] - started)
        if len(stamps) > 1:
            rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return {"first_token_s": median(firsts), "tokens_per_s": median(rates)}


def embedder_figures(embedder: Embedder, texts: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return {"chunks_per_s": round(len(texts) / (time.perf_counter() - started), 2)}


def p95(values: list[float]) -> float:
    return round(sorted(values)[max(0, int(0.95 * len(values)) - 1)], 3)


def ask_figures(
    ws: Workspace, mode: str, questions: list[str], answers: list[dict[str, object]] | None = None
) -> dict[str, float]:
    ws.settings = dataclasses.replace(
        ws.settings, answer=dataclasses.replace(ws.settings.answer, mode=mode)
    )
    retrieval, first, total, after = [], [], [], []
    for question in questions:
        answer = ws.ask(question)
        t = answer.timings
        retrieval.append(float(t["retrieval"] or 0))
        if t.get("first_text") is not None:
            first.append(float(t["first_text"]))
        total.append(float(t["total"] or 0))
        after.append(total[-1] - retrieval[-1])
        if answers is not None:
            answers.append(
                {
                    "question": question,
                    "grade": answer.grade,
                    "text": answer.text,
                    "cited": [c.path for c in answer.citations],
                    "confidence": answer.confidence,
                }
            )
    return {
        "retrieval_s": median(retrieval),
        "first_text_s": median(first),
        "total_s": median(total),
        "total_p95_s": p95(total),
        "after_retrieval_s": median(after),
        "after_retrieval_p95_s": p95(after),
    }


def unit_vector_figures(
    ws: Workspace, questions: list[str], answers: dict[str, list[dict[str, object]]]
) -> dict[str, dict[str, float]]:
    """Extractive asks with the unit vectors cold, kept in the index, then in memory;
    ``answers`` gets each pass's answers."""
    out: dict[str, dict[str, float]] = {}
    for source in ("cold", "kept", "memory"):
        if source != "memory":  # a fresh memory; cold: nor the index's kept vectors
            lookup = ws.index.vectors_for_keys if source == "kept" else None
            ws._unit_vectors = UnitVectors(
                ws.embedder.embed_documents, ws.embedder.dimension, lookup
            )
        before = ws.unit_vectors.embedded
        out[source] = ask_figures(ws, "extractive", questions, answers.setdefault(source, []))
        out[source]["units_embedded_per_ask"] = round(
            (ws.unit_vectors.embedded - before) / len(questions), 1
        )
        ws.keep_unit_vectors()
    return out


def print_row(load: int, row: dict[str, Any]) -> None:
    start, end = row["loadavg_1m"]
    print(
        f"== {load} busy process(es) beside (load average {start} at the start, {end} at the end)"
    )
    print(f"  the same answers whatever the unit vectors' source: {row['same_answers']}")
    for source, f in row["unit_vectors"].items():
        print(
            f"  extractive, unit vectors {source:6}  after retrieval {f['after_retrieval_s']:.3f} s"
            f" (p95 {f['after_retrieval_p95_s']:.3f} s), {f['units_embedded_per_ask']} units"
            " embedded per ask"
        )
    for mode in ("extractive", "generative"):
        if mode in row:
            f = row[mode]
            print(
                f"  {mode:10}  retrieval {f['retrieval_s']:.3f} s  first text"
                f" {f['first_text_s']:.3f} s  total {f['total_s']:.3f} s"
                f" (p95 {f['total_p95_s']:.3f} s)"
            )
    if "generator" in row:
        g, e = row["generator"], row["embedder"]
        print(
            f"  generator   first token {g['first_token_s']:.3f} s,"
            f" {g['tokens_per_s']:.1f} tokens/s;  embedder {e['chunks_per_s']:.1f} chunks/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/citeline-bench-ask")
    parser.add_argument("--loads", default="0,1,2", help="busy processes to run beside")
    parser.add_argument("--spin", action="store_true", help="OMP_WAIT_POLICY=ACTIVE")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--docs", type=Path, help="a folder to ask instead of the samples")
    parser.add_argument("--questions", type=Path, help="JSON lines with a question each")
    parser.add_argument("--limit", type=int, default=0, help="ask the first N questions")
    parser.add_argument(
        "--answers", type=Path, help="write each extractive pass's answers here (JSON lines)"
    )
    parser.add_argument(
        "--extractive-only", action="store_true", help="no generative or raw model figures"
    )
    args = parser.parse_args()
    if args.spin:  # read when llama.cpp loads, which is below
        os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
    questions = QUESTIONS
    if args.questions:
        lines = args.questions.read_text("utf-8").splitlines()
        questions = [str(json.loads(line)["question"]) for line in lines if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    docs = args.docs or Path(args.work) / "samples"
    if args.docs is None and not (docs / ".citeline").exists():
        shutil.rmtree(docs, ignore_errors=True)
        shutil.copytree(REPO / "samples", docs)
    settings, _ = load_settings(docs)
    models = ModelPool()
    workspace = open_workspace(docs, settings, models)
    workspace.update()
    texts = [text for _, text in scientific_abstracts(64)]
    embedder = workspace.embedder
    ask_figures(workspace, "extractive", QUESTIONS[:2])  # warm up: first-call costs

    loads: dict[str, dict[str, object]] = {}
    out: dict[str, object] = {
        "cpus": len(os.sched_getaffinity(0)),
        "omp_wait_policy": "ACTIVE" if args.spin else "PASSIVE",
        "loads": loads,
    }
    for load in [int(x) for x in args.loads.split(",")]:
        with busy_processes(load):
            start_load = round(os.getloadavg()[0], 2)
            answers: dict[str, list[dict[str, object]]] = {}
            row: dict[str, object] = {
                "unit_vectors": unit_vector_figures(workspace, questions, answers)
            }
            same = all(answers[k] == answers["cold"] for k in answers)
            row["same_answers"] = same
            if args.answers:
                with args.answers.open("a", encoding="utf-8") as sink:
                    for source, rows in answers.items():
                        for item in rows:
                            line = {"load": load, "unit_vectors": source, **item}
                            sink.write(json.dumps(line, ensure_ascii=False) + "\n")
            if not args.extractive_only:
                row["extractive"] = ask_figures(workspace, "extractive", questions)
                row["generative"] = ask_figures(workspace, "generative", questions)
                row["generator"] = generator_figures(workspace.generator())
                row["embedder"] = embedder_figures(embedder, texts)
            row["loadavg_1m"] = [start_load, round(os.getloadavg()[0], 2)]
        loads[str(load)] = row
        if not args.json:
            print_row(load, row)
    workspace.close()
    out["peak_rss_mb"] = round(peak_rss_mb())
    if args.json:
        print(json.dumps(out))
    else:
        print(f"peak memory: {out['peak_rss_mb']} MiB")


if __name__ == "__main__":
    main()
