"""Unit order, replayed: how a reordering of the dense head changes the answers.

Reads the rows ``benchmarks/unit_choice.py`` records (``--cache``: every question
asked once through the whole flow, its scored units kept).  The English questions'
best ``scoring.DENSE_CANDIDATES`` units (the dense head, the ones with a cosine) are
reordered by an order model: the shipped dense model's logit as a fixed offset (the
scale the selection's cuts read stays) plus weighted ``ORDER_FEATURES`` candidates,
fitted out of fold (grouped by question, over every
cache given, ``FOLDS`` folds, ``SEEDS`` shuffles); the shipped selection then runs on
the reordered units and the answers are measured as ``unit_choice.measure`` does.
The grade and refusals are the recorded ones (a product step would reorder after the
grade has read the dense model's order).  Measured and not shipped (docs/quality.md).
Use tuning splits only.

    .venv/bin/python benchmarks/unit_order.py /tmp/ev.pkl /tmp/man.pkl
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import random
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from citeline.core.answering import extractive, fitted
from citeline.core.answering.features import ASKS_DEFAULT, ASKS_WHAT_IS, ASKS_WHY, asks_how
from citeline.core.answering.fitted import ENGLISH, FEATURES
from citeline.core.answering.other_blocks import heading_holds
from citeline.core.answering.scoring import Scored, ScoredUnit
from citeline.evaluation.answers import contains_reference
from unit_choice import Row, measure

#: Candidate features of the order model over the dense head (``order_features``).
ORDER_FEATURES = (
    "cosine_gap",
    "lexical_gap",
    "local_gap",
    "cosine_top",
    "heading_content",
    "opens",
    "section_share",
    "kind_how",
    "kind_default",
    "kind_why",
    "kind_what",
)
FOLDS = 5
SEEDS = 5
N_DENSE = len(fitted.DENSE_FEATURES)


def english(r: Row) -> bool:
    return r.scored is not None and r.scored.models.lexical == ENGLISH.lexical


def head(scored: Scored) -> list[ScoredUnit]:
    return [s for s in scored.units if len(s.features) == N_DENSE]


def matrix(r: Row, columns: Sequence[int]) -> np.ndarray:
    """The order model's inputs for the row's head: the shipped logit, then the
    chosen ``ORDER_FEATURES``."""
    assert r.scored is not None
    units = head(r.scored)
    extra = order_features(r.question, units, r.scored.terms)
    return np.array(
        [[s.logit, *(f[c] for c in columns)] for s, f in zip(units, extra, strict=True)]
    )


def reordered(r: Row, weights: fitted.Weights, columns: Sequence[int]) -> Scored:
    assert r.scored is not None
    units = head(r.scored)
    if not units:
        return r.scored
    x = matrix(r, columns)
    new = [
        ScoredUnit(s.unit, s.evidence, s.features, weights.logit(row))
        for s, row in zip(units, x, strict=True)
    ]
    new.sort(key=lambda s: -s.logit)
    return dataclasses.replace(r.scored, units=new + r.scored.units[len(units) :])


def fit(rows: Sequence[Row], columns: Sequence[int], l2: float) -> fitted.Weights:
    xs, ys = [], []
    for r in rows:
        if not (english(r) and r.relevant and r.answers):
            continue
        assert r.scored is not None
        units = head(r.scored)
        if not units:
            continue
        xs.append(matrix(r, columns))
        ys += [float(contains_reference(s.unit.display, r.answers)) for s in units]
    x, y = np.vstack(xs), np.array(ys)
    if x.shape[1] == 1:
        return fitted.Weights(0.0, (1.0,))
    return fit_offset(x[:, 1:], y, x[:, 0], l2)


def fit_offset(x: np.ndarray, y: np.ndarray, offset: np.ndarray, l2: float) -> fitted.Weights:
    """A logistic regression of ``y`` on ``x`` with the shipped logit as a fixed
    offset (weight 1, no bias): the order model moves units against the dense
    model's order without changing the scale the selection's cuts read."""
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(offset + x @ w, -50, 50)))
        grad = x.T @ (p - y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return fitted.Weights(0.0, (1.0, *(round(float(v), 3) for v in w)))


def order_features(
    question: str, head: Sequence[ScoredUnit], terms: Mapping[str, float]
) -> list[tuple[float, ...]]:
    """``ORDER_FEATURES`` of each unit of the dense head, against the rest of it."""
    if not head:
        return []
    n = len(FEATURES)
    lexical = FEATURES.index("lexical")
    local = FEATURES.index("local")
    kind = FEATURES.index("kind")
    top_cosine = max(s.features[n] for s in head)
    top_lexical = max(s.features[lexical] for s in head)
    top_local = max(s.features[local] for s in head)
    why = bool(ASKS_WHY.search(question))
    default = not why and bool(ASKS_DEFAULT.search(question))
    how = not why and not default and asks_how(question)
    what = not (why or default or how) and bool(ASKS_WHAT_IS.search(question.strip()))
    weights = dict(terms)
    out = []
    for s in head:
        fits = s.features[kind]
        out.append(
            (
                s.features[n] - top_cosine,
                s.features[lexical] - top_lexical,
                s.features[local] - top_local,
                1.0 if s.features[n] >= top_cosine else 0.0,
                heading_holds(s, weights),
                1.0 if s.unit.position == 0 else 0.0,
                sum(o.evidence.n == s.evidence.n for o in head) / len(head),
                fits * how,
                fits * default,
                fits * why,
                fits * what,
            )
        )
    return out


Select = Callable[[Scored], extractive.Extract]


def out_of_fold(
    sets: dict[str, list[Row]], columns: Sequence[int], l2: float
) -> dict[str, dict[str, float]]:
    """Each set's figures with every English question reordered by a model fitted
    without it (the mean over ``SEEDS`` shuffles)."""
    every = [r for rows in sets.values() for r in rows]
    names = sorted({r.question for r in every})
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in sets}
    for seed in range(SEEDS):
        random.Random(seed).shuffle(names)
        model: dict[str, fitted.Weights] = {}
        for fold in range(FOLDS):
            held = set(names[fold::FOLDS])
            w = fit([r for r in every if r.question not in held], columns, l2)
            model.update(dict.fromkeys(held, w))
        for name, rows in sets.items():
            replayed = [
                dataclasses.replace(r, scored=reordered(r, model[r.question], columns))
                if english(r)
                else r
                for r in rows
            ]
            figures[name].append(measure(replayed, extractive.select))
    return {
        name: {k: round(statistics.fmean(f[k] for f in runs), 3) for k in runs[0]}
        for name, runs in figures.items()
    }


def in_sample(
    sets: dict[str, list[Row]], weights: fitted.Weights, columns: Sequence[int]
) -> dict[str, dict[str, float]]:
    return {
        name: measure(
            [
                dataclasses.replace(r, scored=reordered(r, weights, columns)) if english(r) else r
                for r in rows
            ],
            extractive.select,
        )
        for name, rows in sets.items()
    }


def main() -> None:

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("caches", nargs="+", help="unit_choice.py --cache pickles")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument(
        "--set", action="append", default=[], help="comma-separated ORDER_FEATURES to try"
    )
    args = parser.parse_args()
    sets = {Path(c).stem: pickle.loads(Path(c).read_bytes()) for c in args.caches}
    print("shipped order:", {n: measure(rows, extractive.select) for n, rows in sets.items()})
    tries = [s.split(",") if s else [] for s in args.set] or [[]] + [
        [name] for name in ORDER_FEATURES
    ]
    for names in tries:
        columns = [ORDER_FEATURES.index(n) for n in names]
        oof = out_of_fold(sets, columns, args.l2)
        w = fit([r for rows in sets.values() for r in rows], columns, args.l2)
        line = " | ".join(
            f"{n} {f['contains']:.3f} / {f['cited']:.3f} / {f['mean_chars']:.0f}"
            for n, f in oof.items()
        )
        print(f"{'+'.join(names) or '(shipped logit only)':40} oof {line}  weights {w}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
