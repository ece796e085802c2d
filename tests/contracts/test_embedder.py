"""The Embedder contract, run against every implementation: the default llama.cpp
model (loaded once per session) and the hashing embedder."""

from __future__ import annotations

import numpy as np
import pytest

from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.embedding import Embedder
from memory import HashingEmbedder

DOCUMENTS = [
    "Tomatoes need six hours of direct sun every day.",
    "Knead the bread dough for ten minutes, then let it rise.",
    "索引保存在文档文件夹里。",
]


@pytest.fixture(params=["llama", "hashing"])
def embedder(request: pytest.FixtureRequest) -> Embedder:
    if request.param == "llama":
        real: Embedder = request.getfixturevalue("real_embedder")
        assert isinstance(real, LlamaEmbedder)  # the implementation the product uses
        return real
    return HashingEmbedder()


def test_it_names_itself_and_its_vectors(embedder: Embedder) -> None:
    assert embedder.name and embedder.fingerprint and embedder.dimension > 0
    assert embedder.fingerprint == embedder.fingerprint  # stable: the index's identity


def test_documents_become_unit_float32_rows(embedder: Embedder) -> None:
    vectors = embedder.embed_documents(DOCUMENTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, embedder.dimension)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    assert embedder.embed_documents([]).shape == (0, embedder.dimension)


def test_equal_text_gives_an_equal_vector_in_any_batch(embedder: Embedder) -> None:
    alone = embedder.embed_documents(DOCUMENTS[:1])[0]
    batched = embedder.embed_documents(DOCUMENTS)[0]
    assert float(np.dot(alone, batched)) >= 0.9999  # packing may round differently


def test_a_query_is_one_unit_vector_nearest_its_topic(embedder: Embedder) -> None:
    query = embedder.embed_query("How many hours of sun do tomatoes need?")
    assert query.dtype == np.float32 and query.shape == (embedder.dimension,)
    assert float(np.linalg.norm(query)) == pytest.approx(1.0, abs=1e-4)
    cosines = embedder.embed_documents(DOCUMENTS[:2]) @ query
    assert cosines[0] > cosines[1]


def test_tokens_are_counted_without_special_tokens(embedder: Embedder) -> None:
    assert embedder.count_tokens("") == 0
    short, longer = embedder.count_tokens("sun"), embedder.count_tokens("sun and rain")
    assert 0 < short < longer
