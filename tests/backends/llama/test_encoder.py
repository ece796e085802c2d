"""What the embedder and the reranker share: sizing the context for the model,
argument checks, the closed state, threads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from citeline.backends.llama.embedder import EmbeddingError, LlamaEmbedder
from citeline.backends.llama.encoder import LlamaEncoder, LlamaModelError


def test_the_context_follows_the_models_training_length(gguf_path: Path) -> None:
    with LlamaEmbedder(gguf_path, n_threads=1) as model:  # no max_tokens: the model's 512
        assert model.max_tokens == 512 and model.context_size == 512 and model.threads == 1


def test_max_tokens_beyond_training_are_capped_with_a_warning(
    gguf_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), LlamaEmbedder(gguf_path, max_tokens=4096) as model:
        assert model.max_tokens == 512
    assert "exceeds the training context" in caplog.text


def test_nonsense_arguments_are_refused_before_loading(gguf_path: Path) -> None:
    for kwargs in ({"max_tokens": 0}, {"max_sequences_per_decode": 0}, {"decode_token_budget": 0}):
        with pytest.raises(ValueError):
            LlamaEmbedder(gguf_path, **kwargs)  # type: ignore[arg-type]


def test_a_closed_encoder_raises_its_own_error(gguf_path: Path) -> None:
    model = LlamaEmbedder(gguf_path, n_threads=1)
    model.close()
    model.close()  # twice is fine
    with pytest.raises(EmbeddingError, match="is closed"):
        model.embed_documents(["x"])
    assert issubclass(EmbeddingError, LlamaModelError)
    assert LlamaEncoder.role == "model"
