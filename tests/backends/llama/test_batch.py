"""Packing sequences into decodes, and the batch they are written into."""

from __future__ import annotations

import ctypes

import llama_cpp

from citeline.backends.llama.batch import PackedBatch, decode_shape, pack_decodes


def test_the_context_fits_the_longest_sequence_and_divides_into_sequences() -> None:
    assert decode_shape(256, 512, 256) == (512, 256)  # MiniLM: the training context
    n_ctx, n_seq_max = decode_shape(8192, 32768, 256)
    assert n_ctx == 8192 and n_ctx % n_seq_max == 0
    n_ctx, n_seq_max = decode_shape(300, 300, 7)
    assert n_ctx == 320 and n_ctx % n_seq_max == 0 and n_seq_max <= 7  # rounded up to 64
    # no more sequences than a decode of the token budget can hold
    assert decode_shape(256, 512, 256, budget=64) == (512, 64)
    n_ctx, n_seq_max = decode_shape(256, 512, 256, budget=100)
    assert n_seq_max == 64 and n_ctx % n_seq_max == 0


def test_decodes_are_filled_longest_first_up_to_the_budget() -> None:
    assert pack_decodes([10, 50, 30, 5], budget=64, max_group=8) == [[1], [2, 0, 3]]
    assert pack_decodes([100, 5], budget=64, max_group=8) == [[0], [1]]  # too long: alone
    assert pack_decodes([1, 1, 1], budget=64, max_group=2) == [[0, 1], [2]]
    assert pack_decodes([], budget=64, max_group=2) == []


def test_a_filled_batch_gives_each_sequence_its_id_and_positions() -> None:
    batch = PackedBatch(llama_cpp, n_ctx=16, n_seq_max=4)
    assert batch.fill([[7, 8, 9], [5, 6]]) == [3, 2]
    raw = batch.batch
    assert raw.n_tokens == 5
    assert [raw.token[i] for i in range(5)] == [7, 8, 9, 5, 6]
    assert [raw.pos[i] for i in range(5)] == [0, 1, 2, 0, 1]
    seq_ids = [ctypes.cast(raw.seq_id[i], ctypes.POINTER(ctypes.c_int32))[0] for i in range(5)]
    assert seq_ids == [0, 0, 0, 1, 1]
    assert all(raw.logits[i] == 1 for i in range(5))
