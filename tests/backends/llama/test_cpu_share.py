"""Models running at once split the cores; a model running alone keeps them all."""

from __future__ import annotations

import numpy as np

from citeline.backends.llama.cpu_share import CpuShare, ThreadLimit
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator


def test_threads_are_split_between_the_busy_models() -> None:
    share = CpuShare()
    embedder, generator, reranker = object(), object(), object()
    assert share.threads(embedder, 8) == 8  # alone
    with share.busy(generator):
        assert share.threads(embedder, 8) == 4
        assert share.threads(generator, 8) == 8  # only others count
        with share.busy(reranker), share.busy(embedder):
            assert share.threads(embedder, 8) == 2  # 8 // 3
            assert share.threads(embedder, 2) == 1  # never below one
    assert share.threads(embedder, 8) == 8


def test_nested_busy_blocks_count_a_model_once() -> None:
    share = CpuShare()
    model, other = object(), object()
    with share.busy(model):
        with share.busy(model):
            assert share.threads(other, 4) == 2
        assert share.threads(other, 4) == 2  # still inside the outer block
    assert share.threads(other, 4) == 4


def test_a_thread_limit_applies_only_changes() -> None:
    model, other = object(), object()
    applied: list[int] = []
    share = CpuShare()
    limit = ThreadLimit(model, 4, applied.append, share)
    limit.fit()
    assert applied == [] and limit.current == 4  # alone: already at the maximum
    with share.busy(other):
        limit.fit()
        limit.fit()
    assert applied == [2] and limit.current == 2
    limit.fit()
    assert applied == [2, 4] and limit.current == 4


def test_the_embedder_takes_half_the_cores_while_the_generator_runs(
    real_embedder: Embedder, real_generator: Generator
) -> None:
    assert isinstance(real_embedder, LlamaEmbedder)
    texts = ["Tomatoes need six hours of sun.", "索引保存在文档文件夹里。"]
    alone = real_embedder.embed_documents(texts)
    full = real_embedder.threads
    seen: dict[str, object] = {}

    def embed_between_tokens() -> bool:  # called while the generator is computing
        seen["vectors"] = real_embedder.embed_documents(texts)
        seen["threads"] = real_embedder.threads
        return True  # one token is enough

    messages = [{"role": "user", "content": "Say hello."}]
    stream = real_generator.stream_chat(
        messages, max_tokens=4, temperature=0.0, should_stop=embed_between_tokens
    )
    assert list(stream) == []  # stopped before the first piece was passed on
    assert seen["threads"] == max(1, full // 2)
    assert np.allclose(seen["vectors"], alone, atol=1e-4)  # fewer threads, same vectors
    real_embedder.embed_documents(texts)
    assert real_embedder.threads == full  # alone again: every core
