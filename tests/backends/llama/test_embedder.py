"""The embedder on the converted all-MiniLM-L6-v2 computes what the original model
computes: against a numpy forward pass of the original weights
(tests/reference_bert.py), sentence by sentence; packing several texts into one
decode gives the vectors of one-at-a-time decoding; and its one-line errors.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citeline.backends.llama.embedder import EmbeddingError, LlamaEmbedder
from citeline.models import bert_gguf
from citeline.models.bert_gguf import convert_bert_to_gguf
from citeline.models.smollm import default_generator_model_path
from reference_bert import COMPAT_SENTENCES, LONG_PARAGRAPH, SENTENCES, ReferenceBert


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------- (a)


def test_embeddings_match_reference_forward_pass(
    converted: LlamaEmbedder, reference: ReferenceBert
) -> None:
    # The long paragraph really is longer than the 256-token window.
    assert len(reference.untruncated_token_ids(LONG_PARAGRAPH)) > 300
    assert len(reference.token_ids(LONG_PARAGRAPH)) == 256

    texts = SENTENCES + COMPAT_SENTENCES
    vectors = converted.embed_documents(texts)
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    expected = reference.embed_many(texts)
    similarities = {
        text[:40]: cosine(vector, want)
        for text, vector, want in zip(texts, vectors, expected, strict=True)
    }
    worst = min(similarities, key=similarities.__getitem__)
    # The brief asks for >= 0.99; F16 matmul weights measured >= 0.99999 on every text.
    assert similarities[worst] >= 0.999, f"{worst!r}: {similarities[worst]:.6f}"
    assert float(np.mean(list(similarities.values()))) >= 0.9999


def test_reference_agrees_with_published_similarities(reference: ReferenceBert) -> None:
    # Guards the reference itself: related sentences are close, unrelated ones are not.
    food, bread, baby = reference.embed_many(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
        ]
    )
    assert 0.70 < float(food @ bread) < 0.80
    assert float(food @ baby) < 0.1


def test_truncation_keeps_the_final_separator(
    converted: LlamaEmbedder, reference: ReferenceBert
) -> None:
    ids = converted.tokenize(LONG_PARAGRAPH)
    assert len(ids) > 256 and ids[0] == 101 and ids[-1] == 102
    truncated = [*ids[:255], 102]
    assert truncated == reference.token_ids(LONG_PARAGRAPH)
    assert converted.max_tokens == 256
    # The long paragraph embeds like its first 254 word pieces, not like the whole text.
    want, whole = reference.embed_id_lists(
        [truncated, reference.untruncated_token_ids(LONG_PARAGRAPH)]
    )
    vector = converted.embed_query(LONG_PARAGRAPH)
    assert cosine(vector, want) >= 0.999
    assert cosine(vector, whole) < 0.99


# ---------------------------------------------------------------------------- (b)


def test_count_tokens_excludes_special_tokens(converted: LlamaEmbedder) -> None:
    assert converted.count_tokens("") == 0
    assert converted.count_tokens("Hello world") == 2
    assert converted.count_tokens("pg_hba.conf") == len(converted.tokenize("pg_hba.conf")) - 2
    assert converted.document_token_budget == 254


# ---------------------------------------------------------------------------- (c)


def test_packed_batches_equal_one_at_a_time(
    gguf_path: Path, converted: LlamaEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    singles = np.stack([converted.embed_documents([text])[0] for text in SENTENCES])
    # The default budget packs short texts; a 512-token budget packs as many as fit.
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1, decode_token_budget=512) as greedy:
        for model, most in ((converted, 2), (greedy, 6)):
            decodes: list[int] = []
            original: Callable[..., None] = model._decode

            def spy(
                lane: Any,
                group: list[int],
                *args: Any,
                decodes: list[int] = decodes,
                original: Callable[..., None] = original,
            ) -> None:
                decodes.append(len(group))
                original(lane, group, *args)

            monkeypatch.setattr(model, "_decode", spy)
            batch = model.embed_documents(SENTENCES)
            # Several sequences really shared decodes ...
            assert len(decodes) < len(SENTENCES) and max(decodes) >= most
            assert sum(decodes) == len(SENTENCES)
            # ... and no attention leaked between them.
            for text, a, b in zip(SENTENCES, batch, singles, strict=True):
                assert cosine(a, b) >= 0.9999, text[:40]


class Others:
    """A fixed reading of other processes' runnable tasks (cpu_free.FreeCpu's place)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def others(self) -> int:
        return self.count


def test_two_lanes_embed_as_one_does(gguf_path: Path, converted: LlamaEmbedder) -> None:
    texts = [f"{text} ({i})" for i, text in enumerate(SENTENCES * 4)]
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=2) as two:
        two._free_cpu = Others(0)  # type: ignore[assignment]  # whatever else runs here
        assert two.threads == 2 and len(two._lanes or ()) == 1  # a lane made when needed
        query = two.embed_query("where is the index kept")
        assert len(two._lanes or ()) == 1  # one decode: the first lane alone
        rows = two.embed_documents(texts)
        assert len(two._lanes or ()) == 2
    alone = converted.embed_documents(texts)
    for a, b in zip(rows, alone, strict=True):
        assert cosine(a, b) >= 0.99999
    assert cosine(query, converted.embed_query("where is the index kept")) >= 0.99999


def test_lanes_chosen_by_the_free_cores_embed_the_same_vectors(
    gguf_path: Path, converted: LlamaEmbedder
) -> None:
    texts = [f"{text} [{i}]" for i, text in enumerate(SENTENCES * 12)]
    alone = converted.embed_documents(texts)
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=2) as model:
        model._cores = 2
        # Nothing else: both lanes; one busy process: a third lane beside the free
        # core; more busy processes than cores: two; the reading is taken per batch.
        for others, lanes in ((0, 2), (1, 3), (4, 2), (0, 2)):
            model._free_cpu = Others(others)  # type: ignore[assignment]
            rows = model.embed_documents(texts)
            assert model.last_lanes == lanes, others
            for a, b in zip(rows, alone, strict=True):
                assert cosine(a, b) >= 0.99999
        # A query is one decode: no reading, the first lane.
        model._free_cpu = Others(-1)  # type: ignore[assignment]
        model.embed_query("where is the index kept")
        assert model.last_lanes == 1


def test_embedder_basics(converted: LlamaEmbedder) -> None:
    empty = converted.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    assert converted.dimension == 384
    assert converted.pooling == "mean"
    assert converted.context_size == 512
    rows = converted.embed_documents(["alpha", "beta gamma", "alpha"])
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert cosine(rows[0], rows[2]) > 0.99999  # same text, different slot in the batch
    query = converted.embed_query("alpha")
    assert query.shape == (384,) and query.dtype == np.float32
    assert cosine(query, rows[0]) > 0.9999


def test_fingerprint_tracks_what_changes_vectors(gguf_path: Path, converted: LlamaEmbedder) -> None:
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1) as same:
        assert same.fingerprint == converted.fingerprint  # threads do not change vectors
        assert same.name == gguf_path.name
    with LlamaEmbedder(gguf_path, max_tokens=128, n_threads=1) as shorter:
        assert shorter.fingerprint != converted.fingerprint
    with LlamaEmbedder(gguf_path, max_tokens=256, document_prefix="passage: ") as prefixed:
        assert prefixed.fingerprint != converted.fingerprint
        plain = converted.embed_documents(["the moon"])[0]
        assert cosine(prefixed.embed_documents(["the moon"])[0], plain) < 0.999
        assert cosine(prefixed.embed_query("the moon"), converted.embed_query("the moon")) > 0.9999


def test_pooling_none_falls_back_to_mean(
    source_dir: Path, converted: LlamaEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bert_gguf, "_pooling_type", lambda source: 0)  # NONE
    unpooled = tmp_path / "unpooled.gguf"
    convert_bert_to_gguf(source_dir, unpooled)
    texts = ["pooling happens here", "Edit pg_hba.conf", LONG_PARAGRAPH]
    with LlamaEmbedder(unpooled, max_tokens=256, n_threads=1) as model:
        assert model.pooling == "none"
        assert model.fingerprint != converted.fingerprint
        for a, b in zip(
            model.embed_documents(texts), converted.embed_documents(texts), strict=True
        ):
            assert cosine(a, b) >= 0.9999


# ---------------------------------------------------------------------------- errors


def test_clear_errors_for_unusable_models(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="does not exist"):
        LlamaEmbedder(tmp_path / "missing.gguf")
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello")
    with pytest.raises(EmbeddingError, match="not a GGUF file"):
        LlamaEmbedder(not_gguf)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(EmbeddingError, match=r"cannot load embedding model .*truncated\.gguf"):
        LlamaEmbedder(truncated)
    with pytest.raises(EmbeddingError, match="not an embedding model"):
        LlamaEmbedder(default_generator_model_path())
