"""A BERT WordPiece vocabulary in the form llama.cpp's tokenizer expects.

llama.cpp's WPM tokenizer uses "phantom space" pieces: special tokens unchanged,
``##piece`` becomes ``piece``, and every word-initial token gets a ``\u2581``
prefix.  The vocabulary is read from ``tokenizer.json`` (or ``vocab.txt``) with the
special tokens named in the tokenizer's configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citeline.models import ModelError, read_json

_PHANTOM_SPACE = "\u2581"


class WordPieceVocab:
    """The vocab of a BERT WordPiece tokenizer, in llama.cpp's phantom-space form."""

    def __init__(
        self,
        tokens: list[str],
        token_types: list[int],
        special_ids: dict[str, int],
        lowercase: bool,
        strip_accents: bool,
    ) -> None:
        self.tokens = tokens
        self.token_types = token_types
        self.cls_id = special_ids["cls"]
        self.sep_id = special_ids["sep"]
        self.unk_id = special_ids["unk"]
        self.pad_id = special_ids["pad"]
        self.mask_id = special_ids["mask"]
        self.lowercase = lowercase
        self.strip_accents = strip_accents


def load_wordpiece_vocab(source: Path, vocab_size: int) -> WordPieceVocab:
    import gguf

    tokenizer_json = read_json(source / "tokenizer.json", required=False)
    tokenizer_config = read_json(source / "tokenizer_config.json", required=False)
    special_map = read_json(source / "special_tokens_map.json", required=False)

    model = tokenizer_json.get("model", {})
    prefix = "##"
    special_texts: set[str] = set()
    if model:
        if model.get("type") != "WordPiece":
            raise ModelError(f"{source.name}: tokenizer is {model.get('type')}, not WordPiece")
        prefix = str(model.get("continuing_subword_prefix", "##"))
        vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
        for added in tokenizer_json.get("added_tokens", []):
            vocab.setdefault(str(added["content"]), int(added["id"]))
            if added.get("special"):
                special_texts.add(str(added["content"]))
    else:
        vocab_txt = source / "vocab.txt"
        try:
            lines = vocab_txt.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelError(f"{source.name}: no tokenizer.json or vocab.txt ({exc})") from exc
        vocab = {line: i for i, line in enumerate(lines) if line}

    def special(kind: str, default: str) -> str:
        for mapping in (tokenizer_config, special_map):
            value = mapping.get(f"{kind}_token")
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                return value
        return default

    names = {
        "cls": special("cls", "[CLS]"),
        "sep": special("sep", "[SEP]"),
        "unk": str(model.get("unk_token") or special("unk", "[UNK]")),
        "pad": special("pad", "[PAD]"),
        "mask": special("mask", "[MASK]"),
    }
    special_ids: dict[str, int] = {}
    for kind, text in names.items():
        if text not in vocab:
            raise ModelError(f"{source.name}: special token {text!r} missing from the vocab")
        special_ids[kind] = vocab[text]
        special_texts.add(text)

    size = max(vocab_size, max(vocab.values()) + 1)
    by_id: dict[int, str] = {i: t for t, i in vocab.items()}
    tokens: list[str] = []
    token_types: list[int] = []
    for token_id in range(size):
        piece = by_id.get(token_id)
        if piece is None:
            tokens.append(f"[PAD{token_id}]")
            token_types.append(gguf.TokenType.UNUSED)
        elif token_id == special_ids["unk"]:
            tokens.append(piece)
            token_types.append(gguf.TokenType.UNKNOWN)
        elif piece in special_texts:
            tokens.append(piece)
            token_types.append(gguf.TokenType.CONTROL)
        elif piece.startswith(prefix):
            tokens.append(piece[len(prefix) :])
            token_types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(_PHANTOM_SPACE + piece)
            token_types.append(gguf.TokenType.NORMAL)
    if len(set(tokens)) != len(tokens):
        raise ModelError(f"{source.name}: vocab has duplicate tokens in phantom-space form")

    lowercase, strip_accents = _normalizer_options(tokenizer_json, tokenizer_config)
    return WordPieceVocab(tokens, token_types, special_ids, lowercase, strip_accents)


def _normalizer_options(
    tokenizer_json: dict[str, Any], tokenizer_config: dict[str, Any]
) -> tuple[bool, bool]:
    """(lowercase, strip_accents) as HF's BertNormalizer applies them."""
    normalizer = tokenizer_json.get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer":
        lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
    else:
        lowercase = bool(tokenizer_config.get("do_lower_case", True))
        strip = tokenizer_config.get("strip_accents")
    # HF: strip_accents=None means "strip when lowercasing".
    strip_accents = lowercase if strip is None else bool(strip)
    return lowercase, strip_accents
