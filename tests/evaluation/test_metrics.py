"""Metrics against values computed by hand."""

import math

import pytest

from citeline.evaluation.metrics import hit_at, mrr_at, ndcg_at, recall_at


def test_hit_recall_mrr() -> None:
    ranked = ["d3", "d1", "d7", "d2"]
    relevant = {"d1": 1, "d2": 1}
    assert hit_at(ranked, relevant, 1) == 0.0
    assert hit_at(ranked, relevant, 2) == 1.0
    assert recall_at(ranked, relevant, 2) == 0.5
    assert recall_at(ranked, relevant, 4) == 1.0
    assert mrr_at(ranked, relevant, 10) == 0.5
    assert mrr_at(ranked, {"d9": 1}, 10) == 0.0


def test_ndcg_by_hand() -> None:
    ranked = ["a", "b", "c"]
    relevant = {"b": 1, "c": 2}
    # DCG = 1/log2(3) + 2/log2(4) = 0.63093 + 1.0; IDCG = 2/log2(2) + 1/log2(3) = 2 + 0.63093
    expected = (1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3))
    assert ndcg_at(ranked, relevant, 10) == pytest.approx(expected)
    assert ndcg_at(["c", "b"], relevant, 10) == pytest.approx(1.0)
    assert ndcg_at(["x"], relevant, 10) == 0.0
    # cut-off: a relevant doc below k does not count
    assert ndcg_at(["x", "c"], relevant, 1) == 0.0
