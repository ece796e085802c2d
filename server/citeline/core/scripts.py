"""Writing systems: which characters are Chinese, Japanese or Korean, and which
language a question is in.

One home for these rules: keyword terms, chunk sizes, answer units and the
answer's language all ask the same questions of text.
"""

from __future__ import annotations

import re

_CJK_RANGES = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"

#: Han (with extension A and compatibility ideographs), kana and Hangul syllables:
#: the characters that carry a word's worth of meaning each and are written
#: without spaces between words.  Keyword terms (CJK bigrams), answer units and
#: language detection use this set.
CJK_CHAR = f"[{_CJK_RANGES}]"
CJK_RUN = re.compile(CJK_CHAR + "+")

#: :data:`CJK_CHAR` plus the halfwidth and fullwidth forms (U+FF00-FFEF: fullwidth
#: Latin letters, digits and punctuation, halfwidth kana): characters set in a
#: CJK-width cell.  Chunk sizes count each as one embedding token (the chunk cost,
#: part of the index identity), and a PDF line break between two of them is
#: joined without a space.
WIDE_CHAR = re.compile(rf"[{_CJK_RANGES}\uff00-\uffef]")

#: CJK symbols and punctuation (U+3000-303F: 。、「」 and the ideographic space).
CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f]")

#: The rule HF's BERT tokenizer uses for "Chinese characters" (CJK Unified
#: Ideographs and their extensions, no kana or Hangul) lives with the WordPiece
#: normalisation (``citeline.backends.llama.wordpiece``): it must match HF's
#: definition exactly, code point for code point, whatever Citeline's own rules say.
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")

CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})


def cjk_count(text: str) -> int:
    return sum(len(run) for run in CJK_RUN.findall(text))


def is_cjk(text: str) -> bool:
    """Mostly Chinese, Japanese or Korean.

    A CJK character carries about as much as a short Latin word, so a text counts
    as CJK when its CJK characters are at least a third as many as its Latin
    letters: "Stam1na的主唱是谁？" is Chinese, "What does 索引 mean?" is not.
    """
    cjk = cjk_count(text)
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return cjk > 0 and 3 * cjk >= latin


def detect_language(text: str) -> str:
    """ "zh", "ja", "ko" or "en": enough to answer and refuse in the asker's language."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    return "zh" if is_cjk(text) else "en"


def is_cjk_question(question: str) -> bool:
    """Whether a question is asked in Chinese, Japanese or Korean: the one rule the ask
    flow, retrieval and the evaluation decide it by (its language is one of them)."""
    return detect_language(question) in CJK_LANGUAGES
