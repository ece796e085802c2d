"""Input rewritten so llama.cpp's BERT tokenizer gives HF's ids (pure text rules;
the ids themselves are checked against HF in test_tokenizer.py)."""

from __future__ import annotations

from citeline.backends.llama.wordpiece import _is_bert_chinese_char, wordpiece_compatible


def test_control_and_format_characters_are_deleted_and_tabs_kept() -> None:
    assert wordpiece_compatible("a\x0bb\x0cc\td\u200be", strip_accents=False) == "abc\tde"


def test_accents_are_stripped_as_hf_does_only_when_asked() -> None:
    assert wordpiece_compatible("café", strip_accents=True) == "cafe"
    assert wordpiece_compatible("café", strip_accents=False) == "café"
    # only nonspacing marks go: a Devanagari vowel sign (a spacing mark) stays
    assert "ा" in wordpiece_compatible("घर जा रहा", strip_accents=True)


def test_a_word_longer_than_100_characters_becomes_unk() -> None:
    word = "0123456789abcdef" * 8
    assert wordpiece_compatible(f"sha {word} end", strip_accents=True) == "sha  [UNK]  end"
    # punctuation splits words first, as HF's pre-tokenizer does
    assert wordpiece_compatible(f"{word[:60]}.{word[:60]}", strip_accents=True) == (
        f"{word[:60]}.{word[:60]}"
    )


def test_chinese_characters_follow_hfs_own_rule() -> None:
    assert _is_bert_chinese_char(ord("索"))
    assert _is_bert_chinese_char(0x20000)  # extension B, beyond Citeline's own CJK set
    assert not _is_bert_chinese_char(ord("ア"))  # kana are not split per character by HF
    assert not _is_bert_chinese_char(ord("한"))
