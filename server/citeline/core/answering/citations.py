"""Citation markers in generated text: filtered as they stream, read when done."""

from __future__ import annotations

import re

_MARKER = re.compile(r"\[(\d{1,3})\]")
_REFUSAL_PATTERNS = re.compile(
    r"(do(es)? not contain the answer|cannot answer|can't answer|unable to answer|"
    r"no information|not (mentioned|provided|specified) in the evidence|"
    r"没有.{0,6}答案|无法回答|不能回答|没有提到|未提及|没有相关)",
    re.IGNORECASE,
)


class CitationFilter:
    """Passes streamed text through, dropping [n] markers that point at no evidence.

    A "[" followed by digits is held back until it is known to be a marker.
    """

    def __init__(self, valid: set[int]) -> None:
        self.valid = valid
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        out: list[str] = []
        i = 0
        while i < len(text):
            start = text.find("[", i)
            if start == -1:
                out.append(text[i:])
                break
            out.append(text[i:start])
            match = re.match(r"\[(\d{0,3})(\]?)", text[start:])
            assert match is not None
            digits, closed = match.group(1), match.group(2)
            end = start + match.end()
            if end == len(text) and not closed:  # might be a marker still arriving
                self._held = text[start:]
                break
            if closed and digits:
                if int(digits) in self.valid:
                    out.append(text[start:end])
                # else: dropped
                i = end
            else:
                out.append(text[start:end])
                i = end
        return "".join(out)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def clean_answer_text(text: str) -> str:
    """Tidy spaces left where markers were dropped."""
    text = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def cited_numbers(text: str) -> list[int]:
    seen: list[int] = []
    for match in _MARKER.finditer(text):
        n = int(match.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def is_refusal(text: str) -> bool:
    """The model said the evidence does not hold the answer (and said little else)."""
    head = text.strip()[:200]
    return bool(_REFUSAL_PATTERNS.search(head)) and not _MARKER.search(head)
