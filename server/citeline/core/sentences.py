"""Where a sentence ends: the one rule, for answers, hovers and page breaks.

In English a sentence ends after ``.``, ``!`` or ``?`` (closing quotes and brackets
included) followed by a space and a word that does not start in lower case, and
not after an abbreviation (``e.g.``, ``Dr.``), an initial (``J. Smith``) or inside a
number or a file name such as ``pg_hba.conf`` (no space follows).  In Chinese and
Japanese it ends after ``。！？；`` (no space needed; closing quotes included), or
after ASCII ``!``/``?`` followed by a CJK character; a terminator inside opening
quotes (“。”) is named, not used.

Used by the answer's units (``core/answering/units.py``), the check of generated
sentences, the PDF loader's page-break join (a quote never stops mid-sentence) and
the hover query (the sentence under the cursor).  The chunker cuts windows at
simpler points of its own (``core/chunking.py``): they are part of the index's
identity, so changing them re-chunks every index.
"""

from __future__ import annotations

import re

from citeline.core.scripts import CJK_CHAR

# Words after which a full stop does not end a sentence (lower case, no dot).
_ABBREVIATION_WORDS = """
e.g i.e eg ie vs cf al approx ca fig figs eq eqs no nos vol pp p ch sec mr mrs
ms dr prof sr jr st mt inc ltd co corp dept est jan feb mar apr jun jul aug sep
sept oct nov dec resp viz
"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_WORDS.split())
# A candidate end: terminal punctuation, closing quotes or brackets, then space.
_LATIN_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)")
# Chinese, Japanese: full-width terminators end a sentence without a space; so do
# ASCII ! and ? directly followed by a CJK character.
_CJK_END = re.compile(r"(?:[。！？；]+|[!?]+(?=" + CJK_CHAR + r"))[”’」』）)\]]*")
_OPENING_QUOTES = frozenset("“‘「『")
_WORD_BEFORE = re.compile(r"(\S+)$")
_NEXT_START = re.compile(r"\s*(\S)")


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the Latin terminator that closes at ``end`` ends a sentence."""
    head = text[:end].rstrip("\"'”’)]")
    if not head.endswith("."):
        return _next_starts_sentence(text, end)
    match = _WORD_BEFORE.search(head[:-1])
    word = match.group(1) if match else ""
    bare = word.lstrip("(\"'“‘[").lower()
    if bare in _ABBREVIATIONS:
        return False
    if len(bare) == 1 and bare.isalpha():  # an initial: "J. Smith"
        return False
    if "." in bare and all(len(part) <= 2 for part in bare.split(".")):  # "u.s", "a.m"
        return False
    return _next_starts_sentence(text, end)


def _next_starts_sentence(text: str, end: int) -> bool:
    match = _NEXT_START.match(text, end)
    if match is None:
        return True
    first = match.group(1)
    return not first.islower()


def _cuts(text: str) -> list[int]:
    """Where the sentences of one paragraph end (offsets just past each end)."""
    cuts: set[int] = set()
    for match in _LATIN_END.finditer(text):
        if _ends_sentence(text, match.end()):
            cuts.add(match.end())
    for match in _CJK_END.finditer(text):
        if text[match.start() - 1 : match.start()] not in _OPENING_QUOTES:
            cuts.add(match.end())  # (a quoted terminator, “。”, is named, not used)
    return sorted(cuts)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Each sentence of one paragraph as ``(start, end)`` offsets into ``text``,
    surrounding whitespace left out."""
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*_cuts(text), len(text)]:
        piece = text[start:cut]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + len(piece.rstrip())))
        start = cut
    return spans


def split_sentences(text: str) -> list[str]:
    """The sentences of one paragraph, verbatim, without surrounding whitespace."""
    return [text[start:end] for start, end in sentence_spans(text)]


def sentence_at(text: str, offset: int) -> str:
    """The sentence of ``text`` (one paragraph) that holds ``offset``: the one it is
    in, else the next one, else the last; '' for blank text."""
    spans = sentence_spans(text)
    for start, end in spans:
        if offset < end:
            return text[start:end]
    return text[spans[-1][0] : spans[-1][1]] if spans else ""


def first_sentence_end(text: str) -> int | None:
    """Where the first sentence of ``text`` ends, if one ends in it."""
    cuts = _cuts(text)
    return cuts[0] if cuts else None


# What a line that reads as a sentence ends with (else it is a term, a heading, a label).
_ENDS_LIKE_A_SENTENCE = re.compile(r"[.!?。！？；;:：)）\]\"'”’`]\s*$")


def ends_like_a_sentence(text: str) -> bool:
    return _ENDS_LIKE_A_SENTENCE.search(text) is not None
