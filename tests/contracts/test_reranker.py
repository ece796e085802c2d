"""The Reranker contract, run against every implementation: the llama.cpp reranker
(on the tests' own GGUF cross-encoder) and the word-overlap reranker.

The test cross-encoder has a seeded random classifier, so relevance itself is not
part of the contract test; shape, stability and independence from the batch are.
"""

from __future__ import annotations

import numpy as np
import pytest

from citeline.backends.llama.reranker import LlamaReranker
from citeline.core.reranking import Reranker
from memory import OverlapReranker

QUESTION = "How often must the coffee machine be descaled?"
PASSAGES = [
    "The coffee machine is descaled every 30 days.",
    "Tomatoes need six hours of direct sun.",
    "Descale it monthly; the kettle too.",
]


@pytest.fixture(params=["llama", "overlap"])
def reranker(request: pytest.FixtureRequest) -> Reranker:
    if request.param == "llama":
        real: Reranker = request.getfixturevalue("real_reranker")
        assert isinstance(real, LlamaReranker)  # the implementation the product uses
        return real
    return OverlapReranker()


def test_one_float32_score_per_passage(reranker: Reranker) -> None:
    assert reranker.name
    scores = reranker.score(QUESTION, PASSAGES)
    assert scores.dtype == np.float32 and scores.shape == (3,)
    assert np.all(np.isfinite(scores))
    assert reranker.score(QUESTION, []).shape == (0,)


def test_a_passage_scores_the_same_alone_or_in_a_batch(reranker: Reranker) -> None:
    batch = reranker.score(QUESTION, PASSAGES)
    alone = [float(reranker.score(QUESTION, [p])[0]) for p in PASSAGES]
    assert [float(s) for s in batch] == pytest.approx(alone, abs=1e-3)
    assert [float(s) for s in reranker.score(QUESTION, PASSAGES[::-1])] == pytest.approx(
        alone[::-1], abs=1e-3
    )
