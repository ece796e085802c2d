"""What a hover searches with: the sentence under the cursor, else its line.

The sentence is the core's (``core/sentences.py``: the rule answers quote by),
found in the paragraph around the cursor (its non-blank neighbouring lines), then
read without the Markdown that starts a line (``#``, list markers, ``>``, ``|``).
A sentence of fewer than three words and eight characters is too little to
search: the cursor's line is searched instead (a heading, a short list item).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citeline.core.sentences import sentence_at

MAX_QUERY_CHARS = 1000
MAX_PARAGRAPH_LINES = 20  # each side of the cursor
_LINE_MARKUP = re.compile(r"^\s*(?:#{1,6}|[-*+>]|\d+[.)]|\|)\s*")


def _clean(text: str) -> str:
    return " ".join(_LINE_MARKUP.sub("", line) for line in text.split("\n")).strip()


def hover_query(lines: Sequence[str], line: int, column: int) -> str:
    """The sentence under the cursor, or its line when that is all there is; '' if blank."""
    if not 0 <= line < len(lines):
        return ""
    current = lines[line].rstrip("\r\n")
    if not current.strip():
        return ""
    first = line
    while first > 0 and lines[first - 1].strip() and line - first < MAX_PARAGRAPH_LINES:
        first -= 1
    last = line
    while last + 1 < len(lines) and lines[last + 1].strip() and last - line < MAX_PARAGRAPH_LINES:
        last += 1
    paragraph = [lines[i].rstrip("\r\n") for i in range(first, last + 1)]
    offset = sum(len(text) + 1 for text in paragraph[: line - first]) + min(
        max(column, 0), len(current)
    )
    sentence = _clean(sentence_at("\n".join(paragraph), offset))
    if len(sentence.split()) >= 3 or (sentence and len(sentence) >= 8):
        return sentence[:MAX_QUERY_CHARS]
    return _clean(current)[:MAX_QUERY_CHARS]
