"""A WordPiece vocabulary in llama.cpp's phantom-space form."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest

from citeline.models import ModelError
from citeline.models.wordpiece_vocab import load_wordpiece_vocab

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def vocab_dir(tmp_path: Path, pieces: list[str], config: dict[str, object] | None = None) -> Path:
    (tmp_path / "vocab.txt").write_text("\n".join(pieces) + "\n")
    if config is not None:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp_path


def test_word_starts_are_marked_and_continuations_are_not(tmp_path: Path) -> None:
    vocab = load_wordpiece_vocab(vocab_dir(tmp_path, [*SPECIAL, "hello", "##ing", "run"]), 9)
    assert vocab.tokens[:5] == SPECIAL  # special tokens unchanged
    assert vocab.tokens[5:8] == ["\u2581hello", "ing", "\u2581run"]
    assert vocab.tokens[8] == "[PAD8]"  # the declared size is filled with unused tokens
    assert vocab.token_types[1] == gguf.TokenType.UNKNOWN
    assert vocab.token_types[2] == gguf.TokenType.CONTROL
    assert vocab.token_types[8] == gguf.TokenType.UNUSED
    assert (vocab.cls_id, vocab.sep_id, vocab.unk_id) == (2, 3, 1)
    assert vocab.lowercase and vocab.strip_accents  # HF: strip when lowercasing


def test_normalisation_follows_the_tokenizer_config(tmp_path: Path) -> None:
    config = {"do_lower_case": False}
    vocab = load_wordpiece_vocab(vocab_dir(tmp_path, [*SPECIAL, "a"], config), 0)
    assert (vocab.lowercase, vocab.strip_accents) == (False, False)


def test_a_vocabulary_without_its_special_tokens_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"special token '\[CLS\]' missing"):
        load_wordpiece_vocab(vocab_dir(tmp_path, ["[PAD]", "[UNK]", "a"]), 0)
