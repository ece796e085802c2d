"""The tokenizer gives HF ``tokenizers``' WordPiece ids, id for id: llama.cpp's own
BERT tokenizer where it agrees, and with its input rewritten where it does not."""

from __future__ import annotations

from pathlib import Path

from citeline.backends.llama.embedder import LlamaEmbedder
from reference_bert import COMPAT_SENTENCES, SENTENCES, ReferenceBert


def test_gguf_tokenizer_matches_hf_wordpiece(
    gguf_path: Path, reference: ReferenceBert, converted: LlamaEmbedder
) -> None:
    from llama_cpp import Llama

    vocab_only = Llama(str(gguf_path), vocab_only=True, verbose=False)
    try:
        mismatches = []
        for text in SENTENCES:
            expected = reference.untruncated_token_ids(text)
            got = vocab_only.tokenize(text.encode("utf-8"), add_bos=True, special=True)
            if got != expected or converted.tokenize(text) != expected:
                mismatches.append((text, expected, got))
        assert not mismatches
    finally:
        vocab_only.close()


def test_embedder_tokenizer_matches_hf_where_llama_cpp_differs(
    converted: LlamaEmbedder, reference: ReferenceBert
) -> None:
    for text in COMPAT_SENTENCES:
        assert converted.tokenize(text) == reference.untruncated_token_ids(text), text
    long_word = reference.untruncated_token_ids(COMPAT_SENTENCES[-1])
    assert long_word.count(100) == 1  # the 128-character word is a single [UNK]
