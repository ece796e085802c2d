"""The fitted models match the features they are over."""

from __future__ import annotations

from citeline.core.answering.fitted import (
    CJK,
    DENSE_FEATURES,
    ENGLISH,
    FEATURES,
    QUESTION_FEATURES,
    Weights,
    sigmoid,
)


def test_every_model_has_a_weight_per_feature() -> None:
    for models in (ENGLISH, CJK):
        assert len(models.lexical.weights) == len(FEATURES)
        assert len(models.answerable.weights) == len(QUESTION_FEATURES)
        assert 0.0 < models.threshold < 1.0 and 0.0 <= models.relative < 1.0
    assert ENGLISH.dense is not None and len(ENGLISH.dense.weights) == len(DENSE_FEATURES)
    assert CJK.dense is None  # the bundled embedder does not read Chinese


def test_a_logistic_model() -> None:
    model = Weights(-1.0, (2.0, 0.5))
    assert model.logit((1.0, 2.0)) == 2.0
    assert model.probability((0.5, 0.0)) == 0.5
    assert sigmoid(1e6) == 1.0 - sigmoid(-1e6)
