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
#: The best unit against the other evidence (``scoring.section_features``): its
#: block's retrieval rank (1 / rank), the best cosine of a unit with the question
#: (0 without the dense step), and the best cosine of the question with the own
#: heading of the best ``scoring.HEADED`` units' sections.
SECTION_FEATURES = ("best_rank", "best_cosine", "heading_cosine")
QUESTION_FEATURES = (
    "best",
    "best_lexical",
    "covered",
    "rarest",
    "hit_dense",
    "hit_keyword",
    "unknown_identifier",
    "missing_jargon",
    *SECTION_FEATURES,
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
    least this.  ``floor``: below this answerability the evidence is off the topic
    and the question is refused (0: never; the retrieval gate decides alone).  It is
    per model because each answerability model is fitted on its own evidence: the
    CJK gate lets in any passage sharing a few bigrams, so for Chinese the scorer is
    the off-topic gate.  ``relative``: units after the first must reach this share of
    the first one's probability (up to ``extractive.MAX_UNITS`` units).
    ``opening_brings_next``: a chosen sentence that opens its passage brings the unit
    after it (``extractive.select``).
    """

    lexical: Weights  # over FEATURES
    dense: Weights | None  # over DENSE_FEATURES; None: no dense reordering
    answerable: Weights  # over QUESTION_FEATURES
    threshold: float = 0.5
    relative: float = 0.2
    opening_brings_next: bool = False
    floor: float = 0.0
    other_blocks_add: bool = False  # ``extractive.joins_from_another_block``


# Fitted by benchmarks/tune_answers.py on the tuning splits (docs/quality.md): English
# on eval/manuals-en/questions-tune.jsonl and eval/everyday/questions-tune.jsonl, the
# answerability model refitted over the shipped unit models (``--keep-lexical``) on
# the current feature definitions (with ``SECTION_FEATURES``), its threshold the
# grade's least expected cost out of fold (at most 20% of the sets' own unanswerable
# questions graded "answer", ``tune_answers.cv_threshold``); CJK on CMRC 2018 trial
# (the refit with the heading and kind features did not help there: they keep weight
# 0, as ``SECTION_FEATURES`` do (not fitted for CJK: the CJK models have no dense
# step), and the threshold grades 2.8% of answerable trial questions "closest").
ENGLISH = Models(
    lexical=Weights(
        -4.322,
        (
            2.721,
            0.164,
            -0.462,
            0.0,
            1.413,
            1.367,
            0.608,
            0.728,
            0.056,
            0.135,
            0.5,
            -0.263,
            -0.564,
            0.935,
        ),
    ),
    dense=Weights(
        -4.807,
        (
            0.355,
            -0.22,
            1.234,
            0.0,
            1.075,
            1.13,
            0.271,
            0.936,
            -0.229,
            0.255,
            0.376,
            -0.289,
            -0.055,
            0.719,
            3.154,
        ),
    ),
    answerable=Weights(
        -5.179, (3.392, 0.906, 0.317, -0.439, -0.203, 0.221, -1.908, -1.646, 2.98, 3.368, 0.773)
    ),
    threshold=0.66,
    relative=0.2,
    opening_brings_next=True,
    other_blocks_add=True,
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
    answerable=Weights(
        -5.017, (8.429, -4.06, 2.325, -3.286, 0.0, 10.013, -0.162, 0.0, 0.0, 0.0, 0.0)
    ),
    threshold=0.202,
    relative=0.0,
    # Read by keywords alone (the bundled English embedder does not read Chinese):
    # general-knowledge questions score 0.02-0.07 on the everyday tune split; with
    # the rule for CJK terms no document contains (``UnitScorer.missing_terms``)
    # refusing most of them, 0.04 is enough (docs/quality.md, "Refusal").
    floor=0.04,
)
# CJK questions when multilingual-e5-small serves the folder: the same lexical model,
# and the answerability model refitted over that model's fused evidence on CMRC 2018
# trial (``tune_answers.py … --keep-lexical``): the best hit's dense score, noise with
# MiniLM (weight 0 above), now tells answerable from relevant-removed questions
# (weight 11.9; answerable graded "closest" 3.0% -> 1.4%, relevant-removed graded
# "answer" 8.1% -> 7.5%, docs/quality.md).
CJK_MULTILINGUAL = Models(
    lexical=CJK.lexical,
    dense=None,
    answerable=Weights(
        -9.095, (7.178, -0.438, 1.501, -3.156, 11.915, 5.161, -0.312, 0.0, 0.0, 0.0, 0.0)
    ),
    threshold=0.24,
    relative=0.0,
    # e5 lets a Chinese general-knowledge question past the gate on any Chinese
    # corpus (its hits' keyword scores pass 0.1 and its cosines 0.3-0.4); on CMRC 2018
    # trial those score 0.01-0.26 here, and 0.8% of answerable questions below 0.1
    # (docs/quality.md, "Refusal").
    floor=0.1,
)

#: The CJK models fitted for a bundled embedding model's scores, by its name (the
#: others: ``CJK``, fitted with keyword evidence alone).
CJK_BY_EMBEDDING_MODEL = {"multilingual-e5-small": CJK_MULTILINGUAL}


def cjk_models(embedding_model: str | None) -> Models:
    """The CJK models for the folder's bundled embedding model (None: a model of the
    user's)."""
    return CJK_BY_EMBEDDING_MODEL.get(embedding_model or "", CJK)
