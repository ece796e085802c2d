"""The reranker on a BERT cross-encoder converted to GGUF scores pairs as the original
weights do.

The cross-encoder is built by the tests (tests/conftest.py: MiniLM's encoder and
pooler plus a seeded classifier).  Its scores through llama.cpp's rank pooling are
compared with a numpy forward pass of the original safetensors
(tests/reference_bert.py), and its pair tokens with HF ``tokenizers``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.backends.llama.embedder import EmbeddingError, LlamaEmbedder
from citeline.backends.llama.reranker import LlamaReranker, RerankError
from citeline.models.minilm import default_embedding_model_path
from reference_bert import ReferenceBert

QUESTION = "How do I rebuild the index after changing the embedding model?"
PASSAGES = [
    "Delete the .citeline folder and run citeline index again; every chunk is re-embedded.",
    "Tomatoes need full sun and regular water.",
    "我想在苹果公司工作，因为那里的工程师很优秀。",
    "Run pip install --no-cache-dir -r requirements.txt inside the container.",
    "The café on Rue Saint-Honoré serves crème brûlée.",
    "Citeline keeps vectors keyed by a hash of the text, so unchanged text embeds nothing. " * 12,
    "",
]


@pytest.fixture(scope="module")
def reference(cross_encoder_dir: Path) -> ReferenceBert:
    return ReferenceBert(cross_encoder_dir, max_seq_length=512)


@pytest.fixture(scope="module")
def reranker(reranker_path: Path) -> LlamaReranker:
    return LlamaReranker(reranker_path, n_threads=1)


def hf_pair_ids(reference: ReferenceBert, query: str, passage: str) -> list[int]:
    return list(reference.tokenizer.encode(query, passage).ids)


def test_pair_tokens_are_hf_pair_encoding(
    reranker: LlamaReranker, reference: ReferenceBert
) -> None:
    for passage in PASSAGES[:5]:
        assert reranker.pair_tokens(QUESTION, passage) == hf_pair_ids(reference, QUESTION, passage)


def test_scores_match_the_reference_forward_pass(
    reranker: LlamaReranker, reference: ReferenceBert
) -> None:
    scores = reranker.score(QUESTION, PASSAGES)
    expected = reference.cross_encoder_scores(
        [reranker.pair_tokens(QUESTION, passage) for passage in PASSAGES]
    )
    assert scores.shape == (len(PASSAGES),) and scores.dtype == np.float32
    assert np.allclose(scores, expected, atol=2e-3), (scores, expected)
    # the seeded head spreads the scores, so the order check below means something
    assert float(np.ptp(expected)) > 0.5
    assert list(np.argsort(-scores)) == list(np.argsort(-expected))


def test_one_pair_at_a_time_equals_a_batch(reranker: LlamaReranker) -> None:
    together = reranker.score(QUESTION, PASSAGES)
    alone = np.array([reranker.score(QUESTION, [p])[0] for p in PASSAGES])
    assert np.allclose(together, alone, atol=1e-4)
    assert reranker.score(QUESTION, []).shape == (0,)


def test_long_pairs_are_cut_to_max_tokens_keeping_the_structure(
    reranker_path: Path, reference: ReferenceBert
) -> None:
    short = LlamaReranker(reranker_path, max_tokens=40, n_threads=1)
    long_passage = PASSAGES[5]
    ids = short.pair_tokens(QUESTION, long_passage)
    full = hf_pair_ids(reference, QUESTION, long_passage)
    assert len(ids) == 40 and ids[-1] == full[-1]  # ends with [SEP]
    question_part = hf_pair_ids(reference, QUESTION, "")[:-1]  # [CLS] q [SEP]
    assert ids[: len(question_part)] == question_part  # the question survives whole
    assert ids[:-1] == full[:39]
    # a question longer than the budget keeps at most half of it
    cut = short.pair_tokens(long_passage, QUESTION)
    assert len(cut) == 40 and cut.count(cut[-1]) == 2
    assert float(short.score(QUESTION, [long_passage])[0]) == pytest.approx(
        float(reference.cross_encoder_scores([ids])[0]), abs=2e-3
    )


def test_a_rerank_template_is_filled_in_and_cut_like_the_pair_encoding(
    reranker_path: Path, reference: ReferenceBert
) -> None:
    # A model's `tokenizer.chat_template.rerank` (Qwen3-Reranker carries one) with
    # special tokens written as text; here one that spells out BERT's pair encoding.
    templated = LlamaReranker(reranker_path, max_tokens=40, n_threads=1)
    templated._template = "[CLS]{query}[SEP]{document}[SEP]"
    plain = LlamaReranker(reranker_path, max_tokens=40, n_threads=1)
    for passage in (PASSAGES[0], PASSAGES[5]):
        ids = templated.pair_tokens(QUESTION, passage)
        assert ids == plain.pair_tokens(QUESTION, passage)
        assert len(ids) <= 40 and ids[-1] == hf_pair_ids(reference, QUESTION, passage)[-1]


def test_an_embedding_model_is_not_a_reranker_and_vice_versa(reranker_path: Path) -> None:
    with pytest.raises(RerankError, match="not a reranker"):
        LlamaReranker(default_embedding_model_path())
    with pytest.raises(EmbeddingError, match="is a reranker"):
        LlamaEmbedder(reranker_path)


def test_unusable_reranker_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(RerankError, match="does not exist"):
        LlamaReranker(tmp_path / "missing.gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    with pytest.raises(RerankError, match="not a GGUF file") as info:
        LlamaReranker(text)
    assert "\n" not in str(info.value)


def test_a_closed_model_is_an_error_not_a_crash(reranker_path: Path) -> None:
    reranker = LlamaReranker(reranker_path, n_threads=1)
    reranker.close()
    with pytest.raises(RerankError, match="is closed"):
        reranker.score(QUESTION, PASSAGES[:2])
    embedder = LlamaEmbedder(default_embedding_model_path(), n_threads=1)
    embedder.close()
    with pytest.raises(EmbeddingError, match="is closed"):
        embedder.embed_query(QUESTION)
