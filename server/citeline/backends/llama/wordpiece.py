"""Making llama.cpp's BERT (WPM) tokenizer produce HF BertTokenizer's ids.

llama.cpp matches HF on lowercasing, punctuation and Chinese-character splitting,
but not on deleting control and format characters, on accent stripping, or on
words longer than 100 characters; :func:`wordpiece_compatible` rewrites the input
so those match too.  The rules here follow HF's code, not Citeline's own script
rules (``citeline.core.scripts``): the ids must be HF's, code point for code point.
"""

from __future__ import annotations

import re
import unicodedata

# HF's WordPiece turns any word longer than this (in characters) into [UNK].
_WORDPIECE_MAX_WORD_CHARS = 100
_LONG_RUN = re.compile(rf"\S{{{_WORDPIECE_MAX_WORD_CHARS + 1},}}")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_KEEP_CONTROLS = frozenset("\t\n\r")
# HF's clean_text deletes control, format, private-use (and surrogate) characters;
# unassigned code points (Cn) stay and become [UNK].
_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})


def _is_bert_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_bert_chinese_char(code: int) -> bool:
    """HF BasicTokenizer's ``_is_chinese_char``, code point for code point.

    Deliberately not ``citeline.core.scripts``: WordPiece ids must match HF's, so this
    follows HF's definition (CJK Unified Ideographs and extensions only; kana and
    Hangul are not split per character), whatever Citeline's own script rules are.
    """
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B920 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _unk_long_words(run: str, unk: str) -> str:
    """Replace each BERT word of ``run`` (no whitespace) longer than 100 chars by ``unk``."""
    parts: list[str] = []
    word: list[str] = []
    length = 0

    def flush() -> None:
        nonlocal length
        if word:
            too_long = length > _WORDPIECE_MAX_WORD_CHARS
            parts.append(f" {unk} " if too_long else "".join(word))
            word.clear()
            length = 0

    for char in run:
        if _is_bert_punctuation(char) or _is_bert_chinese_char(ord(char)):
            flush()
            parts.append(char)
        else:
            word.append(char)
            length += 1
    flush()
    return "".join(parts)


def wordpiece_compatible(text: str, *, strip_accents: bool, unk: str = "[UNK]") -> str:
    """Rewrite ``text`` so llama.cpp's WPM tokenizer produces HF BertTokenizer's ids.

    This applies the parts of HF's BertNormalizer and WordPiece that llama.cpp gets
    wrong: deleting control, format and private-use characters (llama.cpp treats some
    as spaces); with ``strip_accents``, NFD then deleting nonspacing marks (Mn) only
    (llama.cpp's NFD leaves Hangul syllables whole, and it also deletes spacing and
    enclosing marks such as Devanagari vowel signs); and mapping words longer than 100
    characters to [UNK] (llama.cpp splits them).  Lowercasing, punctuation and CJK
    splitting are left to llama.cpp, which matches HF there.  The embedder loads BERT
    models with llama.cpp's own accent stripping switched off, since it is done here.
    """
    if text.isascii():
        text = _ASCII_CONTROL.sub("", text)
    else:
        if strip_accents:
            text = unicodedata.normalize("NFD", text)
        removed = _REMOVED_CATEGORIES | {"Mn"} if strip_accents else _REMOVED_CATEGORIES
        text = "".join(
            char
            for char in text
            if char in _KEEP_CONTROLS
            or (unicodedata.category(char) not in removed and char != "\ufffd")
        )
    if _LONG_RUN.search(text):
        text = _LONG_RUN.sub(lambda match: _unk_long_words(match.group(0), unk), text)
    return text
