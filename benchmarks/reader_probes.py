"""Probe whether a model can tell a passage that answers a question from one that is
only about it, measured the way the answer stage would use it.

The English refusal targets (docs/quality.md, "Deciding that the evidence does not
answer") need that distinction; the answerability model's lexical and retrieval
features do not make it well enough.  A probe scores each of the best
``DENSE_CANDIDATES`` units of every question on the English tuning split, in the
product's order, and is measured two ways:

- units: how often the unit holding the reference answer is the probe's first,
  or among its first three (against the product's own order);
- answerability: 5-fold cross-validation, grouped by question, of the
  answerability model over ``QUESTION_FEATURES`` alone and with the probe's best
  unit score added; each fold's threshold refuses at most 5% of its training
  folds' answerable questions, as ``tune_answers.py`` chooses it.

    .venv/bin/python benchmarks/reader_probes.py units OUT.json questions \\
        eval/manuals-en/questions-tune.jsonl --docs eval/manuals-en/docs
    .venv/bin/python benchmarks/reader_probes.py likelihood UNITS.json OUT.json
    .venv/bin/python benchmarks/reader_probes.py cv questions \\
        eval/manuals-en/questions-tune.jsonl --docs eval/manuals-en/docs \\
        --probe OUT.json:likelihood --probe SCORES.json:reader

``likelihood`` is the bundled generator (SmolLM2-135M) read as a reader: the
mean per-token log-probability of the unit after the question, less that after
no question.  ``benchmarks/faq_reader.py`` makes another probe, a cross-encoder
fine-tuned on FAQ question/answer pairs.  Use tuning splits only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import tune_answers
from citeline.core.answering import features, fitted, scoring
from citeline.core.answering.settings import AnswerSettings
from citeline.models.smollm import default_generator_model_path

FOLDS = 5
FALSE_REFUSALS = 0.05


def english_rows(args: argparse.Namespace) -> list[tune_answers.Row]:
    rows = tune_answers.rows_for(args)
    return [tune_answers.filtered(r, AnswerSettings()) for r in rows if not r.cjk]


def kind(row: tune_answers.Row) -> str:
    return "answerable" if row.answerable else "removed" if row.removed else "unanswerable"


def export_units(args: argparse.Namespace) -> None:
    out = []
    for row in english_rows(args):
        label = {id(u): lb for (u, _, _), lb in zip(row.units, row.labels, strict=True)}
        best = tune_answers.ranked(row, fitted.ENGLISH)[: scoring.DENSE_CANDIDATES]
        out.append(
            {
                "id": row.qid,
                "kind": kind(row),
                "question": row.question,
                "units": [
                    {
                        "text": s.unit.text,
                        "context": features.unit_context(s.unit, s.evidence),
                        "answer": label[id(s.unit)],
                    }
                    for s in best
                ],
            }
        )
    Path(args.out).write_text(json.dumps(out))
    print(f"{len(out)} questions, {sum(len(q['units']) for q in out)} units -> {args.out}")


def likelihood(args: argparse.Namespace) -> None:
    from llama_cpp import Llama

    model = Llama(
        str(default_generator_model_path()),
        n_ctx=512,
        logits_all=True,
        n_threads=args.threads,
        verbose=False,
    )

    def log_probability(prefix: str, text: str) -> tuple[float, int]:
        head = model.tokenize(prefix.encode(), add_bos=False, special=True)
        tail = model.tokenize(text.encode(), add_bos=False, special=False)[:60]
        model.reset()
        model.eval(head + tail)
        logits = np.asarray(model.scores[len(head) - 1 : len(head) + len(tail) - 1])
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        return float(logp[np.arange(len(tail)), tail].sum()), len(tail)

    def turn(question: str) -> str:
        return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"

    questions = json.loads(Path(args.units).read_text())
    started, tokens = time.perf_counter(), 0
    for done, q in enumerate(questions, start=1):
        for unit in q["units"]:
            given, n = log_probability(turn(q["question"]), unit["text"])
            alone, _ = log_probability(turn(""), unit["text"])
            unit["likelihood"] = (given - alone) / max(n, 1)
            tokens += 2 * n
        if done % 20 == 0:
            print(f"{done}/{len(questions)}", file=sys.stderr)
    Path(args.out).write_text(json.dumps(questions))
    rate = tokens / (time.perf_counter() - started)
    print(f"{len(questions)} questions -> {args.out}; {rate:.0f} unit tokens/s")


def answer_found(orders: Sequence[list[dict[str, Any]]]) -> tuple[float, float, int]:
    """Of the questions with the answer among their units, each given in some order:
    the share whose first unit holds it, the share whose first three do, and how many."""
    with_answer = [units for units in orders if any(u["answer"] for u in units)]
    n = max(len(with_answer), 1)
    first = sum(bool(units[0]["answer"]) for units in with_answer)
    three = sum(any(u["answer"] for u in units[:3]) for units in with_answer)
    return first / n, three / n, len(with_answer)


def cross_validate(
    x: np.ndarray, kinds: np.ndarray, groups: Sequence[str], has_units: np.ndarray
) -> dict[str, float]:
    """Refusal rates of the answerability model under grouped k-fold CV (mean of 5 seeds)."""
    y = (kinds == "answerable").astype(float)
    names = sorted(set(groups))
    runs = []
    for seed in range(5):
        random.Random(seed).shuffle(names)
        refused = np.zeros(len(y), dtype=bool)
        for fold in range(FOLDS):
            held = set(names[fold::FOLDS])
            test = np.array([g in held for g in groups])
            train = ~test & has_units
            weights = tune_answers.fit_logistic(x[train], y[train], l2=0.3)
            p = np.array([weights.probability(row) for row in x])
            allowed = np.sort(p[train & (kinds == "answerable")])
            threshold = allowed[int(FALSE_REFUSALS * len(allowed))] - 1e-9
            refused[test] = (p[test] < threshold) | ~has_units[test]
        right = refused[kinds == "unanswerable"].sum()
        wrong = refused[kinds == "answerable"].sum()
        runs.append(
            (
                refused[kinds == "answerable"].mean(),
                refused[kinds == "unanswerable"].mean(),
                right / max(right + wrong, 1),
                refused[kinds == "removed"].mean(),
            )
        )
    mean = np.mean(runs, axis=0)
    return dict(zip(("answerable", "recall", "precision", "removed"), mean, strict=True))


def cv(args: argparse.Namespace) -> None:
    rows = english_rows(args)
    x = np.array([tune_answers.scored(r, fitted.ENGLISH).question_features for r in rows])
    kinds = np.array([kind(r) for r in rows])
    groups = [r.qid for r in rows]
    has_units = np.array([bool(r.units) for r in rows])
    print("answerability, 5-fold CV on the tuning split (mean of 5 shuffles):")
    print("  features              answerable refused  unanswerable recall  precision  removed")

    def line(name: str, m: dict[str, float]) -> None:
        print(
            f"  {name:21} {m['answerable']:18.3f} {m['recall']:20.3f}"
            f" {m['precision']:10.3f} {m['removed']:8.3f}"
        )

    line("QUESTION_FEATURES", cross_validate(x, kinds, groups, has_units))
    for probe in args.probe:
        path, field = probe.rsplit(":", 1)
        questions = json.loads(Path(path).read_text())
        by_row = {(q["id"], q["kind"]): q for q in questions}
        best = np.array(
            [
                max((float(u[field]) for u in by_row[(r.qid, kind(r))]["units"]), default=0.0)
                for r in rows
            ]
        )
        line(
            f"+ best {field}",
            cross_validate(np.hstack([x, best[:, None]]), kinds, groups, has_units),
        )
        by_probe = [sorted(q["units"], key=lambda u: -float(u[field])) for q in questions]
        first, three, n = answer_found(by_probe)
        product = answer_found([q["units"] for q in questions])  # as exported: the product's
        print(
            f"    units ({n} questions with the answer among them): {field} first {first:.3f},"
            f" top 3 {three:.3f}; the product's order {product[0]:.3f} / {product[1]:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    units = commands.add_parser("units", help="export the best units of every question")
    units.add_argument("out")
    tune_answers.add_row_arguments(units)
    lik = commands.add_parser("likelihood", help="score exported units with SmolLM2-135M")
    lik.add_argument("units")
    lik.add_argument("out")
    lik.add_argument("--threads", type=int, default=2)
    check = commands.add_parser("cv", help="measure probes as the answer stage would use them")
    tune_answers.add_row_arguments(check)
    check.add_argument("--probe", action="append", default=[], help="FILE.json:FIELD")
    args = parser.parse_args()
    {"units": export_units, "likelihood": likelihood, "cv": cv}[args.command](args)


if __name__ == "__main__":
    main()
