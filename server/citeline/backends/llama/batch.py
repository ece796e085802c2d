"""How sequences are packed into ``llama_decode`` calls, and the batch they go in.

A context holds at most ``n_ctx`` tokens per decode, split between at most
``n_seq_max`` sequences, each with its own attention mask: packing changes speed,
not results.  :func:`decode_shape` sizes the context for a model,
:func:`pack_decodes` groups sequences into decodes, and :class:`PackedBatch` is
the ``llama_batch`` they are written into (numpy buffers, reused for every decode).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The context (and micro-batch) is at least this, or the training context if smaller;
#: MiniLM measured fastest with the context at its training length.
MIN_CONTEXT = 512
#: Sequences share a decode while their tokens total at most this; a longer sequence
#: gets a decode of its own.  llama.cpp attends over the whole packed micro-batch
#: (masking the other sequences out), so packing trades per-decode overhead for
#: quadratic attention work.  Measured with all-MiniLM-L6-v2 on 2 cores: packing up to
#: 512 tokens ran at 0.45-0.7x the speed of this budget, both for ~150-token chunks
#: and ~14-token texts.
DEFAULT_DECODE_TOKEN_BUDGET = 64


def decode_shape(
    max_tokens: int, n_ctx_train: int, max_parallel: int, budget: int | None = None
) -> tuple[int, int]:
    """``(n_ctx, n_seq_max)`` for sequences of at most ``max_tokens`` tokens.

    Each sequence must fit one micro-batch (non-causal attention needs the whole
    sequence at once); a context at the training length measured fastest.  llama.cpp
    aborts (GGML_ASSERT in its mean-pooling graph) when ``n_seq_max`` does not divide
    the micro-batch size, so it is the largest divisor of ``n_ctx`` it allows.

    ``budget``: the decode token budget (:func:`pack_decodes`).  A decode of shorter
    sequences holds at most that many (each has a token), so ``n_seq_max`` needs no
    more; and a context reserves, and clears, ``n_vocab`` floats of logits for each of
    its ``n_seq_max`` outputs when it is made, even for an embedding model: with
    multilingual-e5-small's 250,002 pieces, 244 MiB per lane at 256 sequences, 61 MiB
    at 64 (docs/performance.md, "The multilingual model's memory").
    """
    n_ctx = max(max_tokens, min(n_ctx_train, MIN_CONTEXT))
    n_ctx = -(-n_ctx // 64) * 64
    cap = min(n_ctx, max_parallel, budget or n_ctx)
    n_seq_max = max(d for d in range(1, cap + 1) if n_ctx % d == 0)
    return n_ctx, n_seq_max


def pack_decodes(lengths: Sequence[int], budget: int, max_group: int) -> list[list[int]]:
    """Indices of the sequences, grouped into decodes: longest first, each decode
    filled greedily while its tokens total at most ``budget`` (a longer sequence
    gets a decode of its own) and it holds at most ``max_group`` sequences."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    used = 0
    for index in order:
        size = lengths[index]
        if not groups or used + size > budget or len(groups[-1]) >= max_group:
            groups.append([])
            used = 0
        groups[-1].append(index)
        used += size
    return groups


class PackedBatch:
    """A ``llama_batch`` over numpy buffers owned by this object (never
    ``llama_batch_free``): ``n_ctx`` tokens, every one an output."""

    def __init__(self, llama_cpp: Any, n_ctx: int, n_seq_max: int) -> None:
        self.n_seq_max = n_seq_max  # sequences one decode can hold
        self._tokens = np.zeros(n_ctx, dtype=np.int32)
        self._positions = np.zeros(n_ctx, dtype=np.int32)
        self._n_seq_id = np.ones(n_ctx, dtype=np.int32)
        self._logits = np.ones(n_ctx, dtype=np.int8)
        self._seq_ids = np.arange(n_seq_max, dtype=np.int32)
        self._seq_id_ptrs = np.zeros(n_ctx, dtype=np.uintp)
        self._seq_ids_base = int(self._seq_ids.ctypes.data)
        batch = llama_cpp.llama_batch()
        batch.n_tokens = 0
        batch.token = self._tokens.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token))
        batch.embd = None
        batch.pos = self._positions.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_pos))
        batch.n_seq_id = self._n_seq_id.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        batch.seq_id = self._seq_id_ptrs.ctypes.data_as(
            ctypes.POINTER(ctypes.POINTER(llama_cpp.llama_seq_id))
        )
        batch.logits = self._logits.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))
        self.batch = batch

    def fill(self, sequences: Sequence[Sequence[int]]) -> list[int]:
        """Put ``sequences`` in the batch (sequence i gets id i); their lengths."""
        sizes = [len(tokens) for tokens in sequences]
        n = sum(sizes)
        self._tokens[:n] = np.fromiter(
            (t for tokens in sequences for t in tokens), dtype=np.int32, count=n
        )
        self._positions[:n] = np.concatenate([np.arange(size, dtype=np.int32) for size in sizes])
        seq_of_token = np.repeat(np.arange(len(sequences), dtype=np.uintp), sizes)
        self._seq_id_ptrs[:n] = self._seq_ids_base + seq_of_token * np.uintp(4)
        self.batch.n_tokens = n
        return sizes
