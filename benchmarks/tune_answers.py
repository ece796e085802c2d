"""Choose how extractive answers are scored and when they refuse, on a tuning split.

For each question the corpus is searched as an ask does (8 hits; the evidence
is the hits that clear the retrieval thresholds), every unit of the evidence is
scored with the real scorer's features (``core/answering/extractive.py``), and a
unit is labelled positive when it contains a reference answer.  Then, offline:

1. a logistic model is fitted on those features (printed as weights to paste
   into ``extractive.py``), beside single-feature baselines, reporting the share
   of answerable questions whose reference is in the top 1/3/5 units;
2. the selection settings are swept (units kept, relative cut-off) for "the
   answer contains the reference" against answer length;
3. the refusal threshold is swept on questions that have no answer in the
   documents: the set's own unanswerable questions, and each answerable one again
   with its relevant documents taken out of the hits ("relevant removed").

Features are cached (``--cache``), so refits are instant.  Use tuning splits only.

    .venv/bin/python benchmarks/tune_answers.py squad ../shared/eval/cmrc2018/cmrc2018_trial.json
    .venv/bin/python benchmarks/tune_answers.py questions eval/manuals-en/questions-tune.jsonl \
        --docs eval/manuals-en/docs
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import pickle
import re
import statistics
import sys
from pathlib import Path

import numpy as np

from citeline.app import ModelPool, open_workspace
from citeline.core import keywords
from citeline.core.answering import extractive
from citeline.core.answering.evidence import distinct_evidence, is_evidence
from citeline.core.answering.settings import AnswerSettings
from citeline.evaluation import datasets, runner
from citeline.settings import load_settings

_MARKER = re.compile(r"\[\d+\]")


def normalise(text: str) -> str:
    return "".join(ch.lower() for ch in _MARKER.sub("", text) if ch.isalnum())


@dataclasses.dataclass
class Row:
    qid: str
    question: str
    cjk: bool
    answerable: bool
    removed: bool  # the relevant documents were taken out of the hits
    answers: list[str]
    units: list[extractive.ScoredUnit]
    labels: list[bool]


def collect(args: argparse.Namespace) -> list[Row]:
    if args.kind == "squad":
        evalset = datasets.load_squad(Path(args.path))
        docs = runner.corpus_folder(Path(args.work), evalset)
        runner.write_corpus(evalset, docs)
    else:
        evalset = datasets.load_questions(Path(args.path))
        docs = Path(args.docs)
    if args.limit:
        evalset.queries = evalset.queries[: args.limit]
    settings, _ = load_settings(docs)
    workspace = open_workspace(docs, settings, ModelPool())
    report = workspace.update()
    print(f"index: {report.files} files, {report.chunks} chunks", file=sys.stderr)
    embedder = workspace.embedder
    scorer = extractive.UnitScorer(
        workspace.retriever.term_weights, embedder.embed_documents, embedder.embed_query
    )
    answer = settings.answer
    rows: list[Row] = []
    for done, query in enumerate(evalset.queries, start=1):
        cjk = keywords.is_cjk(query.text)
        use_dense = settings.retrieval.dense_for_cjk or not cjk
        hits = workspace.retriever.search(query.text, k=3 * answer.candidates)
        variants = [(hits[: answer.candidates], False)]
        if query.relevant:
            others = [h for h in hits if evalset.doc_id(h.chunk.path) not in query.relevant]
            variants.append((others[: answer.candidates], True))
        for variant, removed in variants:
            # every distinct hit, evidence or not: thresholds are swept offline
            evidence = distinct_evidence(variant, answer)
            units = scorer.score(query.text, evidence, cjk=cjk, use_dense=use_dense)
            answers = [normalise(a) for a in query.answers if normalise(a)]
            labels = [
                not removed and any(a in normalise(u.unit.display) for a in answers) for u in units
            ]
            rows.append(
                Row(
                    query.id,
                    query.text,
                    cjk,
                    bool(query.relevant) and not removed,
                    removed,
                    answers,
                    units,
                    labels,
                )
            )
        if done % 50 == 0:
            print(f"{done}/{len(evalset.queries)}", file=sys.stderr)
    workspace.close()
    return rows


# -- fitting ---------------------------------------------------------------------


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 3000) -> np.ndarray:
    """Weights (bias first) of an L2-regularised logistic regression, by Newton steps."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + l2 * np.r_[0, w[1:]]
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def top_k_hit(rows: list[Row], scores: list[np.ndarray], k: int) -> float:
    hits = n = 0
    for row, s in zip(rows, scores, strict=True):
        if not row.answerable or not any(row.labels):
            continue
        n += 1
        order = np.argsort(-s)[:k]
        hits += any(row.labels[i] for i in order)
    return hits / max(n, 1)


def filtered(row: Row, answer: AnswerSettings) -> Row:
    """The row with only the units of hits that clear the evidence thresholds."""
    keep = [i for i, u in enumerate(row.units) if is_evidence(u.evidence.hit, answer, row.cjk)]
    return dataclasses.replace(
        row, units=[row.units[i] for i in keep], labels=[row.labels[i] for i in keep]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["squad", "questions"])
    parser.add_argument("path")
    parser.add_argument("--docs")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--work", default=os.path.expanduser("~/.cache/citeline/eval"))
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/citeline/tune-answers"))
    parser.add_argument("--refresh", action="store_true", help="recompute the features")
    parser.add_argument("--min-score", type=float, default=AnswerSettings.min_score)
    parser.add_argument("--min-keyword", type=float, default=AnswerSettings.min_keyword_score)
    parser.add_argument(
        "--min-keyword-cjk", type=float, default=AnswerSettings.min_keyword_score_cjk
    )
    args = parser.parse_args()

    key = hashlib.sha256(f"{args.kind}:{Path(args.path).resolve()}:{args.limit}".encode())
    cache = Path(args.cache) / f"{key.hexdigest()[:16]}.pickle"
    if cache.exists() and not args.refresh:
        rows = pickle.loads(cache.read_bytes())
    else:
        rows = collect(args)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(rows))
    answer = AnswerSettings(
        min_score=args.min_score,
        min_keyword_score=args.min_keyword,
        min_keyword_score_cjk=args.min_keyword_cjk,
    )
    rows = [filtered(r, answer) for r in rows]

    names = extractive.FEATURES
    for group, cjk in (("english", False), ("cjk", True)):
        part = [r for r in rows if r.cjk == cjk]
        train = [r for r in part if r.answerable]
        if len(train) < 10:
            continue
        in_unit = sum(any(r.labels) for r in train)
        in_block = sum(
            any(
                a in normalise(" ".join(u.evidence.hit.chunk.text for u in r.units))
                for a in r.answers
            )
            for r in train
        )
        no_evidence = sum(not r.units for r in train)
        print(
            f"\n== {group}: {len(train)} answerable, {len(part) - len(train)} without answer;"
            f" reference in a unit {in_unit / len(train):.3f}, in an evidence block"
            f" {in_block / len(train):.3f}, no evidence {no_evidence / len(train):.3f}"
        )
        x = np.array([u.features for r in train for u in r.units])
        y = np.array([float(lbl) for r in train for lbl in r.labels])
        for i, name in enumerate(names):
            scores = [np.array([u.features[i] for u in r.units]) for r in train]
            print(
                f"  {name:11} alone: top1 {top_k_hit(train, scores, 1):.3f}"
                f" top3 {top_k_hit(train, scores, 3):.3f} top5 {top_k_hit(train, scores, 5):.3f}"
            )
        w = fit_logistic(x, y)
        print("  fitted: Weights(" + f"{w[0]:.3f}, (" + ", ".join(f"{v:.3f}" for v in w[1:]) + "))")
        model = extractive.Weights(float(w[0]), tuple(float(v) for v in w[1:]))
        scores = [np.array([model.logit(u.features) for u in r.units]) for r in train]
        print(
            f"  logistic:  top1 {top_k_hit(train, scores, 1):.3f}"
            f" top3 {top_k_hit(train, scores, 3):.3f} top5 {top_k_hit(train, scores, 5):.3f}"
        )
        sweep(part, model)


def sweep(rows: list[Row], model: extractive.Weights) -> None:
    """Answer contains the reference, answer length and refusal, over selection settings."""
    rescored: list[tuple[Row, list[extractive.ScoredUnit]]] = []
    for row in rows:
        units = [dataclasses.replace(u, logit=model.logit(u.features)) for u in row.units]
        units.sort(key=lambda s: -s.logit)
        rescored.append((row, units))
    print("  max relative minimum: contains  units  chars(median)")
    grid = [
        (max_units, relative, minimum)
        for max_units in (1, 2, 3, 4)
        for relative in (0.0, 0.1, 0.3, 0.5)
        for minimum in (0.0, 0.05, 0.1, 0.2)
    ]
    for max_units, relative, minimum in grid:
        settings = extractive.SelectionSettings(
            max_units=max_units, relative=relative, minimum=minimum
        )
        contains, lengths, sizes = 0, [], []
        n = 0
        for row, units in rescored:
            if not row.answerable:
                continue
            n += 1
            extract = extractive.select(units, settings)
            text = extractive.compose(extract)
            contains += any(a in normalise(text) for a in row.answers)
            lengths.append(len(text))
            sizes.append(len(extract.units))
        print(
            f"  {max_units:3} {relative:8.2f} {minimum:7.2f}:"
            f" {contains / max(n, 1):8.3f} {statistics.fmean(sizes):6.2f}"
            f" {statistics.median(lengths):6.0f}"
        )
    best = [(row, units[0].probability if units else 0.0) for row, units in rescored]
    print("  refusal threshold: answerable refused / no-answer refused (own, removed)")
    for threshold in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        ans = [p for r, p in best if r.answerable]
        own = [p for r, p in best if not r.answerable and not r.removed]
        rem = [p for r, p in best if r.removed]

        def refused(ps: list[float], t: float = threshold) -> str:
            return f"{sum(p < t for p in ps) / len(ps):.3f}" if ps else "  -  "

        print(f"  {threshold:4.2f}: {refused(ans)} / {refused(own)}, {refused(rem)}")


if __name__ == "__main__":
    main()
