"""The fitted models match the features they are over."""

from __future__ import annotations

from citeline.core.answering.fitted import (
    CJK,
    CJK_MULTILINGUAL,
    DENSE_FEATURES,
    ENGLISH,
    FEATURES,
    QUESTION_FEATURES,
    SECTION_FEATURES,
    Weights,
    cjk_models,
    sigmoid,
)


def test_every_model_has_a_weight_per_feature() -> None:
    for models in (ENGLISH, CJK, CJK_MULTILINGUAL):
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


def test_chinese_questions_get_the_models_fitted_on_their_embedding_models_evidence() -> None:
    e5 = cjk_models("multilingual-e5-small")
    assert e5 is CJK_MULTILINGUAL and e5.lexical == CJK.lexical  # only the grade refitted
    hit_dense = QUESTION_FEATURES.index("hit_dense")
    assert CJK.answerable.weights[hit_dense] == 0.0  # MiniLM's CJK cosines are noise
    assert e5.answerable.weights[hit_dense] > 0.0  # e5's carry signal
    for other in ("all-MiniLM-L6-v2", None):
        assert cjk_models(other) is CJK


def test_only_the_cjk_models_have_an_off_topic_floor() -> None:
    # the English gate is retrieval's; for CJK questions (a low keyword gate) the
    # answerability below the floor is off the topic, per embedding model
    assert ENGLISH.floor == 0.0
    assert 0.0 < CJK.floor < CJK.threshold
    assert 0.0 < CJK_MULTILINGUAL.floor < CJK_MULTILINGUAL.threshold


def test_the_section_features_weigh_only_for_english() -> None:
    # fitted on the English tune splits; the CJK grades are as fitted before them
    for name in SECTION_FEATURES:
        i = QUESTION_FEATURES.index(name)
        assert ENGLISH.answerable.weights[i] > 0.0
        assert CJK.answerable.weights[i] == CJK_MULTILINGUAL.answerable.weights[i] == 0.0
