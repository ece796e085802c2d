"""What ``benchmarks/tune_answers.py`` fits for the answer stage, and the fitted values.

Three logistic models per kind of question (English, or Chinese/Japanese/Korean):
the lexical model orders every unit (over ``FEATURES``), the dense model reorders
the best units with their cosine (``DENSE_FEATURES``), and the answerability model
judges the whole question (``QUESTION_FEATURES``).  The features are computed in
``features`` and ``scoring``; what each means is said there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

FEATURES = (
    "lexical",
    "context",
    "local",
    "local_characters",
    "previous",
    "rank",
    "length",
    "code",
    "how_code",
    "fragment",
    "number",
    "heading",
    "first",
    "kind",
)
DENSE_FEATURES = (*FEATURES, "dense")
QUESTION_FEATURES = (
    "best",
    "best_lexical",
    "covered",
    "rarest",
    "hit_dense",
    "hit_keyword",
    "unknown_identifier",
    "missing_jargon",
)


@dataclass(frozen=True)
class Weights:
    """A logistic model: log-odds = bias + Σ weight × feature."""

    bias: float
    weights: tuple[float, ...]

    def logit(self, features: Sequence[float]) -> float:
        return self.bias + sum(w * f for w, f in zip(self.weights, features, strict=True))

    def probability(self, features: Sequence[float]) -> float:
        return sigmoid(self.logit(features))


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


@dataclass(frozen=True)
class Models:
    """What is fitted for one kind of question (English, or CJK).

    ``threshold``: the evidence answers the question when ``answerable`` says at
    least this.  ``relative``: units after the first must reach this share of the
    first one's probability (up to four units).
    """

    lexical: Weights  # over FEATURES
    dense: Weights | None  # over DENSE_FEATURES; None: no dense reordering
    answerable: Weights  # over QUESTION_FEATURES
    threshold: float = 0.5
    relative: float = 0.2


# Fitted by benchmarks/tune_answers.py on the tuning splits (docs/quality.md): English
# on eval/manuals-en/questions-tune.jsonl (refusing at most 5% of its answerable
# questions), CJK on CMRC 2018 trial (at most 2%).
ENGLISH = Models(
    lexical=Weights(
        -4.098,
        (2.107, 0.777, 1.098, 0.0, 3.439, 1.086, 0.521, 1.023, 0.447, 0.074, 0.27, 0.0, 0.0, 0.0),
    ),
    dense=Weights(
        -4.986,
        (
            *(0.762, 1.249, 1.309, 0.0, 3.419, 1.036, 0.285, 0.992, 0.627, -0.214, 0.595),
            *(0.0, 0.0, 0.0, 2.222),
        ),
    ),
    answerable=Weights(-1.878, (4.116, 0.302, -1.288, -0.016, 1.807, 1.485, -1.746, -1.036)),
    threshold=0.31,
    relative=0.2,
)
CJK = Models(
    lexical=Weights(
        -6.856,
        (
            -5.604,
            -5.604,
            16.611,
            3.943,
            -0.348,
            2.773,
            0.241,
            0.0,
            0.0,
            -0.371,
            0.384,
            0.0,
            0.0,
            0.0,
        ),
    ),
    dense=None,
    answerable=Weights(-5.017, (8.429, -4.06, 2.325, -3.286, 0.0, 10.013, -0.162, 0.0)),
    threshold=0.202,
    relative=0.0,
)
