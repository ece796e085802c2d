"""How the answer stage behaves: thresholds, budgets, the answer mode."""

from __future__ import annotations

from dataclasses import dataclass

from citeline.core.answering.results import AnswerMode

EXTRACTIVE = AnswerMode.EXTRACTIVE
GENERATIVE = AnswerMode.GENERATIVE
ANSWER_MODES = ("auto", EXTRACTIVE, GENERATIVE)


@dataclass(frozen=True)
class AnswerSettings:
    # "extractive": the answer is the evidence's own sentences that answer the
    # question, each cited; "generative": the generator writes it and every
    # sentence is checked against the evidence it cites; "auto": extractive with
    # the bundled generator (too small to follow citation rules), generative with
    # a model the user configures.
    mode: str = "auto"
    candidates: int = 8  # hits retrieved before filtering
    # A hit counts as evidence when its cosine similarity reaches min_score or its
    # normalised BM25 score reaches min_keyword_score (see citeline.core.documents.Hit).
    # Calibrated on SciFact train and CMRC 2018 trial (docs/quality.md).  CJK
    # questions are cut into character bigrams, many of which (question words,
    # bigrams across word boundaries) never occur in the answer, so their
    # normalised keyword scores run lower; the answer scorer (answering.scoring)
    # then decides whether the passages answer the question, so this threshold
    # only has to keep the passages worth scoring.
    min_score: float = 0.4
    min_keyword_score: float = 0.7
    min_keyword_score_cjk: float = 0.1
    # When no hit reaches those, the documents are still on the topic when the
    # hits reach both of these (``evidence.evidence_hits``): a short everyday
    # question ("Can I use it from Neovim?") shares few words and little meaning
    # with any one passage, yet its hits score moderately on both, which no
    # off-topic question's do (docs/quality.md, "Refusal").
    min_joint_score: float = 0.3
    min_joint_keyword_score: float = 0.45
    min_joint_total: float = 0.85  # and the best cosine + the best keyword score
    max_evidence: int = 4
    max_answer_tokens: int = 256
    temperature: float = 0.1
    timeout_seconds: float = 60.0
    overlap: float = 0.6  # share of a block's word trigrams found in a better one
