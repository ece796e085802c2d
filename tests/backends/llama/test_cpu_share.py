"""Models running at once split the cores; a model running alone keeps them all."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from citeline.backends.llama.cpu_share import CPU, CpuShare, ExternalLoad, ThreadLimit
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator


class Quiet(ExternalLoad):
    """No other process on the machine."""

    def __init__(self, cores: float = 0.0) -> None:
        self.value = cores

    def cores(self) -> float:
        return self.value


def test_threads_are_split_between_the_busy_models() -> None:
    share = CpuShare(Quiet(), cpus=8)
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
    share = CpuShare(Quiet(), cpus=8)
    model, other = object(), object()
    with share.busy(model):
        with share.busy(model):
            assert share.threads(other, 4) == 2
        assert share.threads(other, 4) == 2  # still inside the outer block
    assert share.threads(other, 4) == 4


def test_cores_busy_with_other_processes_are_left_to_them() -> None:
    load = Quiet(1.0)
    share = CpuShare(load, cpus=2)
    model, other = object(), object()
    assert share.threads(model, 2) == 1  # one busy process: one thread, never waiting
    load.value = 2.6
    assert share.threads(model, 2) == 1  # never below one
    load.value = 0.3  # an editor idling, a clock ticking: not a busy core
    assert share.threads(model, 2) == 2
    with share.busy(other):
        assert share.threads(model, 2) == 1


def test_external_load_is_the_machine_time_this_process_did_not_use() -> None:
    samples = iter(
        [
            (0.0, 100.0, 10.0),
            (0.1, 100.2, 10.1),  # too soon: the previous estimate stands
            (0.5, 101.5, 10.5),  # 1.5 s of machine time in 0.5 s, 0.5 of it ours
            (1.0, 102.0, 11.0),  # only ours
        ]
    )
    load = ExternalLoad(interval=0.25, sample=lambda: next(samples))
    assert load.cores() == 0.0
    assert load.cores() == 2.0
    assert load.cores() == 0.0
    assert ExternalLoad(sample=lambda: None).cores() == 0.0  # no /proc: nothing known


def test_a_busy_process_is_seen_within_a_second() -> None:
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        load = ExternalLoad(interval=0.2)
        time.sleep(0.6)
        assert load.cores() >= 0.6
    finally:
        busy.kill()
        busy.wait()


def test_a_thread_limit_applies_only_changes() -> None:
    model, other = object(), object()
    applied: list[int] = []
    share = CpuShare(Quiet(), cpus=8)
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
    real_embedder: Embedder, real_generator: Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(real_embedder, LlamaEmbedder)
    monkeypatch.setattr(CPU, "load", Quiet())  # whatever else this machine is running
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
