"""Where an extractive ask's time after retrieval goes, on first asks and again.

A copy of ``--docs`` is indexed in ``--work`` (or ``--template``, a saved
``.citeline`` of that folder with no unit vectors kept, is copied in: a first index
takes long on a busy box), then each question of ``--questions`` is asked three
times over, by where the vectors the scorer needs come from
(``core/answering/unit_vectors.py``): ``cold``, a fresh index (a first ask of each
evidence: what the run's earlier asks embedded comes from memory); ``kept``, the
index's kept vectors (a new process); ``memory``, the workspace's memory.  Each pass
gives the time after retrieval (wall and the process's CPU time, which counts every
thread and is less noisy under load: p50 / p95 / mean), the time and CPU of each
stage per ask (splitting into units, the features with the bridge, the heading
cosines, the answerability features, the choice), and the embedder's calls, texts
and tokens per ask by caller (``units``, ``bridge``: the vocabulary's words,
``headings``).  ``--answers`` writes every answer (grade, text, citations,
confidence) for comparing two versions; ``--save-template`` keeps the fresh index.

    .venv/bin/python benchmarks/ask_stages.py --docs eval/everyday/docs \\
        --questions eval/everyday/questions-tune.jsonl --work /tmp/stages [--answers A.jsonl]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import shutil
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from citeline.app import ModelPool, open_workspace
from citeline.core.answering import bridge, extractive, features, flow, scoring
from citeline.core.answering.unit_vectors import UnitVectors
from citeline.settings import load_settings

WALL: dict[str, float] = defaultdict(float)
CPU: dict[str, float] = defaultdict(float)
EMBEDDED: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # calls, texts, tokens


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            WALL[name] += time.perf_counter() - wall
            CPU[name] += time.process_time() - cpu

    return wrapper


def caller() -> str:
    """Which step of the scorer asked for vectors."""
    for frame in inspect.stack()[2:12]:
        if frame.function == "link":
            return "bridge"
        if frame.function == "heading_cosines":
            return "headings"
        if frame.function == "score":
            return "units"
    return "other"


def instrument() -> None:
    features.split_units = timed("split_units", features.split_units)
    bridge.Bridge.for_units = timed("bridge", bridge.Bridge.for_units)  # type: ignore[method-assign]
    scoring.UnitScorer.features = timed("features", scoring.UnitScorer.features)  # type: ignore[method-assign]
    scoring.UnitScorer.heading_cosines = timed(  # type: ignore[method-assign]
        "heading_cosines", scoring.UnitScorer.heading_cosines
    )
    scoring.UnitScorer.score = timed("score", scoring.UnitScorer.score)  # type: ignore[method-assign]
    scoring.missing_jargon = timed("missing_jargon", scoring.missing_jargon)
    scoring.question_features = timed("question_features", scoring.question_features)
    flow.select = timed("select", extractive.select)
    flow.distinct_evidence = timed("distinct_evidence", flow.distinct_evidence)


def save_template(index_dir: Path, template: Path) -> None:
    template.mkdir(parents=True, exist_ok=True)
    target = sqlite3.connect(template / "index.sqlite3")
    sqlite3.connect(index_dir / "index.sqlite3").backup(target)
    target.close()
    for path in index_dir.iterdir():
        if path.is_file() and not path.name.startswith("index.sqlite3") and path.name != "lock":
            shutil.copy2(path, template / path.name)


def share(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--template", type=Path, help="a saved .citeline of --docs")
    parser.add_argument("--save-template", type=Path)
    parser.add_argument("--answers", type=Path)
    parser.add_argument("--passes", default="cold,kept,memory")
    parser.add_argument("--tokens", action="store_true", help="count the tokens embedded")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    lines = args.questions.read_text("utf-8").splitlines()
    questions = [str(json.loads(line)["question"]) for line in lines if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    docs = args.work / "docs"
    shutil.rmtree(docs, ignore_errors=True)
    shutil.copytree(args.docs, docs, ignore=shutil.ignore_patterns(".citeline"))
    if args.template:
        shutil.copytree(args.template, docs / ".citeline")
    settings, _ = load_settings(docs)
    settings = dataclasses.replace(
        settings,
        answer=dataclasses.replace(settings.answer, mode="extractive"),
        records=dataclasses.replace(settings.records, asks=False),
    )
    ws = open_workspace(docs, settings, ModelPool())
    wall, cpu = time.perf_counter(), time.process_time()
    report = ws.update()
    out: dict[str, Any] = {
        "index": {
            "chunks": ws.counts().chunks,
            "embedded": report.embedded,
            "wall_s": round(time.perf_counter() - wall, 2),
            "cpu_s": round(time.process_time() - cpu, 2),
        },
        "questions": len(questions),
        "passes": {},
    }
    if args.save_template:
        save_template(ws.index_dir, args.save_template)
    instrument()
    embedder = ws.embedder
    embed = embedder.embed_documents

    def counted(texts: Sequence[str]) -> Any:
        row = EMBEDDED[caller()]
        row[0] += 1
        row[1] += len(texts)
        if args.tokens:
            row[2] += sum(embedder.count_tokens(t) + 2 for t in texts)
        return timed("embed:" + caller(), embed)(texts)

    searched: dict[str, float] = {}
    search = ws.search

    def search_then_mark(*a: Any, **k: Any) -> Any:
        hits = search(*a, **k)
        searched["cpu"] = time.process_time()
        return hits

    ws.search = search_then_mark  # type: ignore[method-assign]
    sink = args.answers.open("w", encoding="utf-8") if args.answers else None
    for source in args.passes.split(","):
        if source != "memory":  # a fresh memory
            ws._unit_vectors = UnitVectors(counted, embedder.dimension, ws.index.vectors_for_keys)
        WALL.clear(), CPU.clear(), EMBEDDED.clear()
        load = os.getloadavg()[0]
        after: list[float] = []
        cpu_after: list[float] = []
        for question in questions:
            answer = ws.ask(question)
            cpu_after.append(time.process_time() - searched["cpu"])
            after.append(
                float(answer.timings["total"] or 0) - float(answer.timings["retrieval"] or 0)
            )
            if sink is not None:
                row = {
                    "pass": source,
                    "question": question,
                    "grade": answer.grade,
                    "text": answer.text,
                    "cited": [[c.path, c.n] for c in answer.citations],
                    "confidence": answer.confidence,
                    "refusal": str(answer.refusal),
                }
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        ws.keep_unit_vectors()
        n = len(questions)
        out["passes"][source] = {
            "loadavg_1m": [round(load, 2), round(os.getloadavg()[0], 2)],
            "after_retrieval_s": [round(statistics.median(after), 3), share(after, 0.95)],
            "cpu_s": [
                round(statistics.median(cpu_after), 3),
                share(cpu_after, 0.95),
                round(sum(cpu_after) / n, 3),
            ],
            "stage_ms": {k: round(1000 * v / n, 1) for k, v in sorted(WALL.items())},
            "stage_cpu_ms": {k: round(1000 * v / n, 1) for k, v in sorted(CPU.items())},
            "embedded_per_ask": {k: [round(x / n, 1) for x in v] for k, v in EMBEDDED.items()},
        }
        print(json.dumps({source: out["passes"][source]}), flush=True)
    if sink is not None:
        sink.close()
    ws.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
