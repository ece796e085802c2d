"""Citation markers in generated text, filtered as they stream."""

from __future__ import annotations

import re


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
