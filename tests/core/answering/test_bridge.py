"""The vocabulary bridge: a question's words linked to the evidence's by their vectors.

A fake embedder stands in for the model (pure logic): each word is a fixed vector,
so the cosines are known; the real model is exercised by the samples' end-to-end
test (``tests/e2e/test_sample_questions.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from citeline.core.answering.bridge import (
    THRESHOLD,
    Bridge,
    bridge_for,
    bridged_coverage,
    bridged_local_weights,
    link,
    words,
)
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import UnitScorer
from citeline.core.documents import Chunk, Hit

# "type" is near "format" (cosine 0.8), "ignore" near "exclude" (0.7), "slow" far from all.
VECTORS = {
    "types": [1.0, 0.0, 0.0],
    "formats": [0.8, 0.6, 0.0],
    "ignore": [0.0, 0.0, 1.0],
    "exclude": [0.0, 0.714, 0.7],
    "slow": [0.0, -1.0, 0.0],
}


class Embedder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([VECTORS.get(t, [0.0, 0.0, 0.0]) for t in texts], np.float32)


def test_words_are_the_plain_words_by_their_keyword_term() -> None:
    assert words("Which file Types are supported by `core.sshCommand` and .envrc?") == {
        "file": "file",
        "type": "types",
        "support": "supported",
    }
    found = words("How do I make it ignore a folder? ls id")
    assert found == {"ignor": "ignore", "folder": "folder"}  # no question word, nor "ls"


def test_a_missing_question_term_links_to_its_nearest_evidence_terms() -> None:
    embed = Embedder()
    links = link({"type": "types", "slow": "slow"}, {"format": "formats"}, embed, 0.6)
    assert links == {"type": {"format": pytest.approx(0.8, abs=1e-6)}}  # "slow": nothing near
    assert embed.calls == [["types", "slow", "formats"]]  # one batch


def test_a_term_the_evidence_holds_is_not_bridged() -> None:
    embed = Embedder()
    assert link({"format": "formats"}, {"format": "formats"}, embed) == {}
    assert embed.calls == []  # nothing to embed


def test_the_threshold_and_the_number_of_links() -> None:
    vocabulary = {"format": "formats", "exclud": "exclude"}
    assert link({"ignor": "ignore"}, vocabulary, Embedder(), 0.75) == {}
    assert set(link({"ignor": "ignore"}, vocabulary, Embedder(), 0.6)["ignor"]) == {"exclud"}
    both = link({"type": "types"}, vocabulary, Embedder(), 0.0, per_term=2)
    assert list(both["type"]) == ["format", "exclud"]  # nearest first
    assert len(link({"type": "types"}, vocabulary, Embedder(), 0.0, per_term=1)["type"]) == 1


def test_bridged_coverage_counts_a_linked_term_by_its_cosine() -> None:
    weights = {"file": 1.0, "type": 3.0}
    links = {"type": {"format": 0.8}}
    assert bridged_coverage(weights, {"file", "format"}, links) == pytest.approx(
        (1.0 + 3.0 * 0.8) / 4.0
    )
    assert bridged_coverage(weights, {"file", "type", "format"}, links) == 1.0  # whole
    assert bridged_coverage(weights, {"file"}, links) == pytest.approx(0.25)
    assert bridged_coverage(weights, {"file", "format"}, {}) == pytest.approx(0.25)
    assert bridged_coverage({}, {"file"}, links) == 0.0


def test_a_bridge_only_for_the_models_it_was_fitted_for() -> None:
    embed = Embedder()
    bridge = bridge_for("all-MiniLM-L6-v2", embed)
    assert bridge is not None and bridge.threshold == THRESHOLD
    assert bridge_for("multilingual-e5-small", embed) is None
    assert bridge_for(None, embed) is None


def _evidence(n: int, heading: str, text: str) -> Evidence:
    chunk = Chunk(f"{n}.md", "Guide", ("Guide", heading), text, 1, 3, None, 0)
    return Evidence(n, Hit(n, n, 0.9, chunk, dense=0.6, keyword=0.9))


def test_the_scorer_counts_bridged_terms_in_the_unit_and_heading_overlap() -> None:
    evidence = [
        _evidence(1, "Supported formats", "Markdown, HTML and PDF files are read."),
        _evidence(2, "Why", "Some types of answers are short."),
    ]
    idf = lambda terms: dict.fromkeys(terms, 2.0)  # noqa: E731
    question = "Which file types are supported?"
    plain = UnitScorer(idf).features(question, evidence, cjk=False, bridged=True)
    embed = Embedder()
    scorer = UnitScorer(idf, bridge=Bridge(embed, 0.6))
    bridged = scorer.features(question, evidence, cjk=False, bridged=True)
    # "type" is in the evidence (unit 2): nothing to bridge, the features are unchanged
    assert [f for *_, f in bridged] == [f for *_, f in plain]
    question = "What file types does it support?"
    evidence = evidence[:1]
    before = UnitScorer(idf).features(question, evidence, cjk=False)[0][2]
    after = scorer.features(question, evidence, cjk=False, bridged=True)[0][2]
    heading = 11  # fitted.FEATURES.index("heading")
    assert after[heading] > before[heading]  # "Supported formats" holds "types" at 0.8
    assert after[0] == before[0]  # the unit itself says "files", not "formats"
    # not bridged: CJK questions, or when the embedder does not read the question
    calls = len(embed.calls)
    assert scorer.features(question, evidence, cjk=False)[0][2] == before
    cjk = scorer.features(question, evidence, cjk=True, bridged=True)[0][2]
    assert cjk[heading] == before[heading]
    assert len(embed.calls) == calls


def test_every_links_a_term_the_vocabulary_holds_too() -> None:
    vocabulary = {"type": "types", "format": "formats"}
    assert link({"type": "types"}, vocabulary, Embedder(), 0.6) == {}
    every = link({"type": "types"}, vocabulary, Embedder(), 0.6, every=True)
    assert set(every["type"]) == {"format"}  # never itself


def test_a_bridged_term_is_as_rare_as_the_units_holding_it_or_its_links() -> None:
    units = [{"fast", "prompt"}, {"prompt"}, {"prompt", "shell"}]
    plain = bridged_local_weights(["slow", "prompt"], units, {})
    bridged = bridged_local_weights(["slow", "prompt"], units, {"slow": {"fast": 0.75}})
    assert plain["slow"] == pytest.approx(math.log(4 / 0.5))  # held by none
    assert bridged["slow"] == pytest.approx(math.log(4 / 1.5))  # one unit holds "fast"
    assert bridged["prompt"] == plain["prompt"] == pytest.approx(math.log(4 / 3.5))
    # the unit saying "fast" now holds most of what "is it slow on every prompt" asks
    first = bridged_coverage(bridged, units[0], {"slow": {"fast": 0.75}})
    assert first > bridged_coverage(bridged, units[1], {"slow": {"fast": 0.75}})
