"""Checking a generated answer sentence by sentence against the evidence it cites.

A generated sentence is kept only if the evidence supports it.  A block supports
a sentence when one of its units, or a pair of adjacent units (a claim may join
two sentences), holds enough of the sentence's content terms (stemmed words,
identifiers, CJK bigrams): a token-overlap "K-precision" check; and enough of
its consecutive term pairs, so that the words of the evidence recombined into a
new claim do not pass.  Then:

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
from citeline.core.answering.units import split_units
from citeline.core.sentences import split_sentences

_MARKER = re.compile(r"\[(\d{1,3})\]")


@dataclass(frozen=True)
class VerifySettings:
    # A sentence is supported when this share of its content terms is in the evidence…
    support: float = 0.7
    # …and this share of its consecutive term pairs.
    order: float = 0.4
    # A sentence without a marker is attributed only when support is at least this.
    unmarked_support: float = 0.85
    # A sentence with fewer content terms than this is kept only if every term is in
    # the evidence (a share is meaningless for two words).
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


def _pairs(terms: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(terms))


@dataclass(frozen=True)
class _Span:
    terms: set[str]
    pairs: set[tuple[str, str]]


def block_spans(evidence: Evidence) -> list[_Span]:
    """Each unit of a block, and each pair of adjacent units."""
    units = [keywords.terms(u.display) for u in split_units(evidence.hit.chunk.text)]
    spans = [_Span(set(t), _pairs(t)) for t in units]
    joined = [_Span(set(a + b), _pairs(a + b)) for a, b in itertools.pairwise(units)]
    return spans + joined


def support(terms: Sequence[str], spans: Sequence[_Span]) -> tuple[float, float]:
    """The largest share of ``terms`` (a sentence's, in order) found in one span, and
    of their consecutive pairs."""
    distinct = set(terms)
    if not distinct:
        return 0.0, 0.0
    pairs = list(itertools.pairwise(terms))
    best = (0.0, 0.0)
    for span in spans:
        share = len(distinct & span.terms) / len(distinct)
        order = sum(p in span.pairs for p in pairs) / len(pairs) if pairs else share
        best = max(best, (share, order))
    return best


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


def _holds(score: tuple[float, float], floor: float, settings: VerifySettings) -> bool:
    share, order = score
    return share >= floor and order >= settings.order


def _flat(text: str) -> str:
    return " ".join(text.split())


def verify(text: str, evidence: Sequence[Evidence], settings: VerifySettings) -> Verified:
    by_n = {e.n: block_spans(e) for e in evidence}
    texts = {e.n: _flat(e.hit.chunk.text) for e in evidence}
    result = Verified()
    for sentence, markers in generated_sentences(text):
        terms = keywords.terms(sentence)
        cited = [n for n in dict.fromkeys(markers) if n in by_n]
        quoting = [n for n in cited if _flat(sentence) in texts[n]]
        if quoting:  # the cited block's own words, however short
            result.sentences.append(CheckedSentence(sentence, tuple(quoting), 1.0, True))
            continue
        if len(set(terms)) < 2:
            result.sentences.append(CheckedSentence(sentence, (), 0.0, False, "no claim"))
            continue
        needed = settings.support if len(set(terms)) >= settings.min_terms else 1.0
        scores = {n: support(terms, spans) for n, spans in by_n.items()}
        supporting = [n for n in cited if _holds(scores[n], needed, settings)]
        if supporting:
            best = max(scores[n][0] for n in supporting)
            result.sentences.append(CheckedSentence(sentence, tuple(supporting), best, True))
            continue
        if not scores:
            result.sentences.append(CheckedSentence(sentence, (), 0.0, False, "no evidence"))
            continue
        best_n = max(scores, key=lambda n: scores[n])
        if _holds(scores[best_n], max(needed, settings.unmarked_support), settings):
            result.sentences.append(CheckedSentence(sentence, (best_n,), scores[best_n][0], True))
            continue
        reason = "cites evidence that does not support it" if cited else "cites nothing"
        top = max(share for share, _ in scores.values())
        result.sentences.append(CheckedSentence(sentence, (), top, False, reason))
    return result
