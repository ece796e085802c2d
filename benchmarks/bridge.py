"""The vocabulary bridge, replayed: how its threshold changes the answers of a question set.

Every question is asked once through the whole flow (extractive) and the evidence
its units were scored on is recorded (``UnitScorer.score``'s arguments: retrieval
and the evidence rules do not depend on the bridge).  Each variant (no bridge,
then the bridge at several cosine thresholds) scores the recorded evidence again
and selects as the flow does; its answers are measured as ``citeline eval
questions`` measures them: answerable questions whose answer contains a key fact,
that cite an expected source, graded ``answer``, refused as off the topic, and the
unanswerable ones graded ``answer``; with the scoring time per question and the
words embedded per question (the first variant with the bridge embeds the words;
the others find them kept).  Use tuning splits only.

    .venv/bin/python benchmarks/bridge.py eval/everyday/questions-tune.jsonl \\
        --docs eval/everyday/docs [--thresholds 0.5 0.6 0.7] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from citeline.core.answering import bridge as bridge_module
from citeline.core.answering import extractive
from citeline.core.answering.bridge import Bridge
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import UnitScorer
from citeline.evaluation import datasets
from citeline.evaluation.answers import contains_reference
from common import extractive_workspace


@dataclasses.dataclass
class Row:
    question: str
    relevant: set[str]
    answers: tuple[str, ...]
    call: tuple[UnitScorer, list[Evidence], bool, bool] | None  # None: refused before
    doc_ids: dict[str, str]  # chunk path -> the question set's document id


def record(questions: Path, docs: Path) -> tuple[list[Row], Any]:
    evalset = datasets.load_questions(questions)
    workspace = extractive_workspace(docs)
    workspace.unit_vectors.capacity = 1_000_000  # every word kept for the replays
    seen: list[tuple[UnitScorer, list[Evidence], bool, bool]] = []
    real = UnitScorer.score

    def spy(self: UnitScorer, question: str, evidence: Any, *, cjk: bool, use_dense: bool) -> Any:
        seen.append((self, list(evidence), cjk, use_dense))
        return real(self, question, evidence, cjk=cjk, use_dense=use_dense)

    UnitScorer.score = spy  # type: ignore[method-assign]
    thresholds = dict(bridge_module.THRESHOLDS)
    bridge_module.THRESHOLDS.clear()  # recorded without the bridge: its words embed later
    rows: list[Row] = []
    try:
        for query in evalset.queries:
            seen.clear()
            workspace.ask(query.text)
            call = seen[0] if seen else None
            paths = {e.hit.chunk.path for e in call[1]} if call else set()
            rows.append(
                Row(
                    query.text,
                    set(query.relevant),
                    tuple(query.answers),
                    call,
                    {p: evalset.doc_id(p) for p in paths},
                )
            )
    finally:
        UnitScorer.score = real  # type: ignore[method-assign]
        bridge_module.THRESHOLDS.update(thresholds)
    return rows, workspace


def measure(
    rows: list[Row], variant: tuple[float, bool, bool] | None, workspace: Any
) -> dict[str, float]:
    answerable = [r for r in rows if r.relevant]
    with_answers = [r for r in answerable if r.answers]
    unanswerable = [r for r in rows if not r.relevant]
    contains = cited = graded = refused = wrongly_graded = 0
    seconds: list[float] = []
    embedded: list[int] = []
    chars: list[int] = []
    for r in rows:
        if r.call is None:
            refused += bool(r.relevant)
            continue
        scorer, evidence, cjk, use_dense = r.call
        if variant is None:
            scorer.bridge = None
        else:
            threshold, units, every = variant
            scorer.bridge = Bridge(workspace.unit_vectors, threshold, units=units, every=every)
        before = workspace.unit_vectors.embedded
        start = time.perf_counter()
        scored = scorer.score(r.question, evidence, cjk=cjk, use_dense=use_dense)
        seconds.append(time.perf_counter() - start)
        embedded.append(workspace.unit_vectors.embedded - before)
        if scored.off_topic:
            refused += bool(r.relevant)
            continue
        extract, _ = extractive.renumber(extractive.select(scored))
        if not r.relevant:
            wrongly_graded += extract.answered
            continue
        graded += extract.answered
        text = extractive.compose(extract)
        chars.append(len(text))
        paths = {s.evidence.hit.chunk.path for s in extract.units}
        cited += any(r.doc_ids[p] in r.relevant for p in paths)
        contains += bool(r.answers) and contains_reference(text, r.answers)
    n = max(len(answerable), 1)
    return {
        "contains": round(contains / max(len(with_answers), 1), 3),
        "cited": round(cited / n, 3),
        "graded_answer": round(graded / n, 3),
        "refused": refused,
        "unanswerable_graded_answer": wrongly_graded,
        "unanswerable": len(unanswerable),
        "answerable": len(answerable),
        "mean_chars": round(statistics.fmean(chars), 1) if chars else 0.0,
        "score_ms_p50": round(1000 * statistics.median(seconds), 1) if seconds else 0.0,
        "score_ms_p95": round(1000 * _p95(seconds), 1) if seconds else 0.0,
        "embedded_per_question": round(statistics.fmean(embedded), 1) if embedded else 0.0,
    }


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions")
    parser.add_argument("--docs", required=True)
    parser.add_argument(
        "--thresholds", type=float, nargs="*", default=[0.5, 0.55, 0.6, 0.65, 0.7, 0.8]
    )
    parser.add_argument(
        "--shipped", action="store_true", help="only no bridge and the shipped bridge"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows, workspace = record(Path(args.questions), Path(args.docs))
    variants: dict[str, tuple[float, bool, bool] | None] = {"no bridge": None}
    # headings first (their words are embedded first), then with the units' words
    scopes = ((False, False), (False, True), (True, False), (True, True))
    if args.shipped:
        scopes = ((bridge_module.UNITS, bridge_module.EVERY),)
        args.thresholds = [bridge_module.THRESHOLD]
    for units, every in scopes:
        for t in args.thresholds:
            shipped = (t, units, every) == (
                bridge_module.THRESHOLD,
                bridge_module.UNITS,
                bridge_module.EVERY,
            )
            scope = ("units" if units else "headings") + (" every" if every else "")
            variants[f"{scope} {t}" + " (shipped)" * shipped] = (t, units, every)
    results = {name: measure(rows, t, workspace) for name, t in variants.items()}
    workspace.close()
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    for name, f in results.items():
        print(
            f"{name:22} contains {f['contains']:.3f}  cited {f['cited']:.3f}"
            f"  answer {f['graded_answer']:.3f}  refused {f['refused']}"
            f"  unanswerable answer {f['unanswerable_graded_answer']}/{f['unanswerable']}"
            f"  chars {f['mean_chars']:.0f}  score p50/p95 {f['score_ms_p50']:.0f}/"
            f"{f['score_ms_p95']:.0f} ms  embedded {f['embedded_per_question']:.1f}"
            f"  (n={f['answerable']})"
        )


if __name__ == "__main__":
    main()
