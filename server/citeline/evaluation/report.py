"""``citeline eval``'s report: index the set, search every query with each method,
score, and measure refusal (and, if asked, answers).

:func:`evaluate` builds the report that ``--json`` prints as is;
:func:`summary_lines` is its human-readable form.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from citeline.core.ingest import ProgressCallback
from citeline.evaluation import runner
from citeline.evaluation.answers import MODES, run_answers
from citeline.evaluation.datasets import EvalSet
from citeline.evaluation.off_topic import OFF_TOPIC_QUESTIONS
from citeline.service.errors import ServiceError
from citeline.service.workspace import Workspace

Progress = Callable[[str], AbstractContextManager[ProgressCallback | None]]
"""Gives a progress callback (or None) for a labelled stage, for its duration."""

SUMMARY_METRICS = ("ndcg@10", "recall@5", "recall@10", "mrr@10", "hit@1", "hit@5", "hit@10")


def evaluate(
    workspace: Workspace,
    evalset: EvalSet,
    *,
    answers: int = 0,
    modes: Sequence[str] = MODES,
    progress: Progress,
) -> dict[str, Any]:
    """The whole evaluation of ``evalset`` over ``workspace``'s folder, as one object;
    with ``answers``, the first that many questions are answered in each of ``modes``."""
    unknown = [m for m in modes if m not in MODES]
    if answers and (unknown or not modes):
        raise ServiceError(f"--modes: use {' and/or '.join(MODES)}, not {','.join(modes)!r}")
    with progress("indexing") as bar:
        report = workspace.update(progress=bar)
    with progress("querying") as bar:
        methods = runner.methods(workspace)
        results = runner.run_retrieval(workspace, evalset, methods, progress=bar)
    out: dict[str, Any] = {
        "dataset": evalset.name,
        "queries": len(evalset.queries),
        "documents": report.files,
        "chunks": report.chunks,
        "index_seconds": round(report.seconds, 2),
        "embedded": report.embedded,
    }
    for method, result in results.items():
        block: dict[str, Any] = {k: round(v, 4) for k, v in result.metrics(evalset.queries).items()}
        block["latency"] = result.latency()
        block["per_query_ms"] = result.per_query_ms()
        out[method] = block
    answer_settings = workspace.settings.answer
    out["refusal"] = {
        # what the answer stage sees: reranked hits when a reranker is configured
        **runner.refusal_rates(evalset, results[methods[-1]], answer_settings),
        "off_topic_refused": runner.off_topic_refused(
            workspace, OFF_TOPIC_QUESTIONS, answer_settings
        ),
        "min_score": answer_settings.min_score,
        "min_keyword_score": answer_settings.min_keyword_score,
        "min_keyword_score_cjk": answer_settings.min_keyword_score_cjk,
    }
    if answers:
        with progress("answering") as bar:
            out["answers"] = run_answers(workspace, evalset, answers, modes, bar)
    return out


def summary_lines(out: dict[str, Any]) -> list[str]:
    """The report as a few lines: sizes, a row of metrics per method, refusal rates."""
    lines = [
        f"{out['dataset']}: {out['queries']} queries, {out['documents']} documents,"
        f" {out['chunks']} chunks (indexed in {out['index_seconds']}s)",
        f"{'method':8} "
        + " ".join(f"{n:>9}" for n in SUMMARY_METRICS)
        + f" {'p50 ms':>8} {'p95 ms':>8}",
    ]
    for method in (*runner.METHODS, runner.RERANKED):
        row = out.get(method)
        if row is None:
            continue
        latency = row["latency"]
        lines.append(
            f"{method:8} "
            + " ".join(f"{row[n]:>9.4f}" for n in SUMMARY_METRICS)
            + f" {latency['p50_ms']:>8.1f} {latency['p95_ms']:>8.1f}"
        )
    refusal = out["refusal"]
    lines.append(
        f"refusal: answerable refused {refusal['answerable_refused']:.1%},"
        f" relevant-removed refused {refusal['relevant_removed_refused']:.1%},"
        f" off-topic refused {refusal['off_topic_refused']:.1%}"
    )
    for mode, figures in (out.get("answers") or {}).items():
        lines.extend(answer_lines(mode, figures))
    return lines


def _share(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, float) else "–"


def _figure(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "–"


def answer_lines(mode: str, f: dict[str, Any]) -> list[str]:
    """One mode's answer figures: answerable and unanswerable questions, then times."""
    seconds = f["seconds"]
    lines = [
        f"answers ({mode}), {f['answerable']} answerable: refused"
        f" {_share(f['answerable_refused'])}, graded answer"
        f" {_share(f['answerable_graded_answer'])}, expected source cited"
        f" {_figure(f['citation_accuracy'])}, fact contained"
        f" {_figure(f['answer_contains_reference'])}",
    ]
    if f["unanswerable"]:
        lines.append(
            f"  {f['unanswerable']} unanswerable: graded answer"
            f" {_share(f['unanswerable_graded_answer'])}, closest"
            f" {_share(f['unanswerable_graded_closest'])}, refused"
            f" {_share(f['unanswerable_refused'])}"
        )
    lines.append(
        f"  off-topic refused {_share(f['off_topic_refused'])};"
        f" seconds p50 {seconds['p50']:.2f}, p95 {seconds['p95']:.2f}"
        f" (after retrieval {seconds['after_retrieval_p50']:.3f} /"
        f" {seconds['after_retrieval_p95']:.3f})"
    )
    lines.append(f"  all figures: {json.dumps(f)}")
    return lines
