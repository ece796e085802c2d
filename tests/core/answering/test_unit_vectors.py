"""Unit vectors by content key: memory, then the index's kept vectors, then the embedder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from citeline.core.answering.unit_vectors import UnitVectors, Vectors
from citeline.core.chunking import embedding_key


class Recording:
    """A deterministic embedding of pure logic: each text's length and first letter."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def test_texts_seen_before_are_not_embedded_again() -> None:
    embed = Recording()
    vectors = UnitVectors(embed, 2)
    first = vectors(["alpha", "beta"])
    again = vectors(["beta", "alpha", "gamma"])
    assert embed.calls == [["alpha", "beta"], ["gamma"]]
    assert np.array_equal(again[:2], first[::-1])
    assert vectors.embedded == 3


def test_a_text_twice_in_one_call_is_embedded_once() -> None:
    embed = Recording()
    out = UnitVectors(embed, 2)(["same", "other", "same"])
    assert embed.calls == [["same", "other"]]
    assert np.array_equal(out[0], out[2]) and out.shape == (3, 2)


def test_no_texts_give_an_empty_matrix_without_a_model_call() -> None:
    embed = Recording()
    out = UnitVectors(embed, 2)([])
    assert out.shape == (0, 2) and out.dtype == np.float32 and embed.calls == []


def test_the_index_is_asked_only_for_what_memory_lacks_and_its_vectors_are_used() -> None:
    embed = Recording()
    kept = {embedding_key("stored"): np.array([9.0, 9.0], dtype=np.float32)}
    asked: list[list[str]] = []

    def lookup(keys: list[str]) -> Mapping[str, Vectors]:
        asked.append(keys)
        return {k: kept[k] for k in keys if k in kept}

    vectors = UnitVectors(embed, 2, lookup=lookup)
    vectors(["fresh"])
    out = vectors(["fresh", "stored"])
    assert asked == [[embedding_key("fresh")], [embedding_key("stored")]]
    assert embed.calls == [["fresh"]]
    assert out[1].tolist() == [9.0, 9.0]


def test_what_was_embedded_or_used_again_is_taken_once_for_keeping() -> None:
    kept = {embedding_key("stored"): np.array([9.0, 9.0], dtype=np.float32)}
    vectors = UnitVectors(
        Recording(), 2, lookup=lambda keys: {k: kept[k] for k in keys if k in kept}
    )
    vectors(["fresh", "stored"])
    unkept = vectors.take_unkept()
    assert set(unkept) == {embedding_key("fresh"), embedding_key("stored")}
    assert unkept[embedding_key("fresh")].tolist() == [5.0, ord("f")]
    assert vectors.take_unkept() == {}
    vectors(["fresh"])  # from memory: nothing new to keep
    assert vectors.take_unkept() == {}


def test_memory_holds_the_newest_vectors_up_to_its_capacity() -> None:
    embed = Recording()
    vectors = UnitVectors(embed, 2, capacity=2)
    vectors(["a1"])
    vectors(["b22"])
    vectors(["a1"])  # used: now the newest
    vectors(["c333"])  # evicts b22, the oldest
    vectors(["a1", "b22"])
    assert embed.calls == [["a1"], ["b22"], ["c333"], ["b22"]]
    assert len(vectors.take_unkept()) == 2  # what waits to be kept is bounded too
