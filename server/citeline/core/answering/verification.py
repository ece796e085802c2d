"""Checking a generated answer sentence by sentence against the evidence it cites.

A generated sentence is kept only if the evidence supports it:

- its support by a block is the best, over the block's units and pairs of
  adjacent units (a claim may join two sentences), of the share of the
  sentence's content terms (stemmed words, identifiers, CJK bigrams) that the
  unit holds: a token-overlap "K-precision" check;
- a sentence that cites blocks is kept when the blocks it cites support it;
- a sentence without a marker gets the block that supports it best when that
  support is strong, and is dropped otherwise;
- markers to blocks that do not support the sentence are removed from it.

What is dropped is returned with the reason, for the ask record; the answer
shows only what survived.  Thresholds: ``VerifySettings`` (docs/quality.md).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from citeline.core import keywords
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import split_sentences, split_units

_MARKER = re.compile(r"\[(\d{1,3})\]")


@dataclass(frozen=True)
class VerifySettings:
    # A sentence is supported when this share of its content terms is in the evidence.
    support: float = 0.7
    # A sentence without a marker is attributed only when support is at least this.
    unmarked_support: float = 0.85
    # A sentence with fewer content terms than this is kept only if every term is in
    # the evidence (a share is meaningless for one or two words).
    min_terms: int = 3


@dataclass(frozen=True)
class CheckedSentence:
    text: str  # without markers
    cited: tuple[int, ...]  # the markers that survived
    support: float
    kept: bool
    reason: str = ""  # why it was dropped


@dataclass
class Verified:
    sentences: list[CheckedSentence] = field(default_factory=list)

    @property
    def kept(self) -> list[CheckedSentence]:
        return [s for s in self.sentences if s.kept]

    @property
    def dropped(self) -> list[CheckedSentence]:
        return [s for s in self.sentences if not s.kept]

    def text(self) -> str:
        return " ".join(s.text + "".join(f" [{n}]" for n in s.cited) for s in self.kept).strip()

    @property
    def cited(self) -> list[int]:
        return list(dict.fromkeys(n for s in self.kept for n in s.cited))


def _terms(text: str) -> list[str]:
    return list(dict.fromkeys(keywords.terms(text)))


def _spans(evidence: Evidence) -> list[set[str]]:
    """Term sets of each unit of a block and of each pair of adjacent units."""
    units = [set(keywords.terms(u.display)) for u in split_units(evidence.hit.chunk.text)]
    pairs = [a | b for a, b in itertools.pairwise(units)]
    return units + pairs


def support(terms: Sequence[str], spans: Sequence[set[str]]) -> float:
    """The largest share of ``terms`` found together in one span."""
    if not terms:
        return 0.0
    return max((sum(t in span for t in terms) / len(terms) for span in spans), default=0.0)


_MARKERS = re.compile(r"(?:\s*\[\d{1,3}\])+")


def _at_markers(sentence: str) -> list[tuple[str, tuple[int, ...]]]:
    """A sentence cut after each run of markers: ("text", markers) pieces."""
    pieces: list[tuple[str, tuple[int, ...]]] = []
    start = 0
    for run in _MARKERS.finditer(sentence):
        markers = tuple(int(m) for m in _MARKER.findall(run.group(0)))
        pieces.append((sentence[start : run.start()].strip(), markers))
        start = run.end()
    rest = sentence[start:].strip()
    if rest:
        pieces.append((rest, ()))
    return pieces


def generated_sentences(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """(sentence without markers, the markers it carries) for each sentence of a text.

    The text is cut as evidence is (``units``: a code block, a list item or a table
    row is one piece), then into sentences, and after each run of markers.  A
    marker belongs to the sentence it follows; markers opening a line or a text go
    with the sentence before them.
    """
    out: list[tuple[str, tuple[int, ...]]] = []
    for unit in split_units(text):
        sentences = [unit.text] if unit.kind in ("code", "row") else split_sentences(unit.text)
        for sentence in sentences:
            for bare, markers in _at_markers(sentence):
                if not re.search(r"\w", bare):  # markers or a full stop after them:
                    if out:  # they belong to the sentence before
                        previous, cited = out[-1]
                        out[-1] = (previous + bare, cited + markers)
                else:
                    out.append((bare, markers))
    return out


def verify(text: str, evidence: Sequence[Evidence], settings: VerifySettings) -> Verified:
    by_n = {e.n: _spans(e) for e in evidence}
    result = Verified()
    for sentence, markers in generated_sentences(text):
        terms = _terms(sentence)
        cited = [n for n in dict.fromkeys(markers) if n in by_n]
        if not terms:
            result.sentences.append(CheckedSentence(sentence, (), 0.0, False, "no content"))
            continue
        needed = settings.support if len(terms) >= settings.min_terms else 1.0
        scores = {n: support(terms, spans) for n, spans in by_n.items()}
        supporting = [n for n in cited if scores[n] >= needed]
        if supporting:
            best = max(scores[n] for n in supporting)
            result.sentences.append(CheckedSentence(sentence, tuple(supporting), best, True))
            continue
        if not scores:
            result.sentences.append(CheckedSentence(sentence, (), 0.0, False, "no evidence"))
            continue
        best_n = max(scores, key=lambda n: scores[n])
        if scores[best_n] >= max(needed, settings.unmarked_support):
            result.sentences.append(CheckedSentence(sentence, (best_n,), scores[best_n], True))
            continue
        reason = "cites evidence that does not support it" if cited else "cites nothing"
        result.sentences.append(CheckedSentence(sentence, (), max(scores.values()), False, reason))
    return result
