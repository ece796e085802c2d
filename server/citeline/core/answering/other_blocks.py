"""Whether a unit of another block belongs in an extractive answer.

The answer's first unit fixes the block it starts from; a unit of a block no chosen
unit comes from often repeats the question's words about a neighbouring topic
("Where does Citeline store its index?" next to § Hover to search, which says
*where* a topic is discussed).  With ``Models.other_blocks_add`` (English and CJK)
such a unit joins only when it adds to the answer (``joins_from_another_block``); the
choice of units is ``extractive.select`` (docs/quality.md, "Other blocks must add
to the answer", and "… to a Chinese answer too").
"""

from __future__ import annotations

from collections.abc import Sequence

from citeline.core import keywords
from citeline.core.answering.features import is_function_term, meaning, own_heading, unit_context
from citeline.core.answering.scoring import ScoredUnit

# A unit of a block no chosen unit comes from joins only when it reaches
# ``NEAR_BEST`` of the best unit's probability, is in the same section of the same
# file as a chosen unit, its section's heading holds more than ``HEADING_JOINS`` of
# the question's information (IDF weight, question words left out), or it brings at
# least ``NEW_INFORMATION`` of it that the chosen units and their headings lack.
NEW_INFORMATION = 0.1
NEAR_BEST = 0.8
HEADING_JOINS = 0.0


def _unit_terms(s: ScoredUnit) -> set[str]:
    return set(keywords.terms(meaning(s.unit))) | set(
        keywords.terms(unit_context(s.unit, s.evidence))
    )


def _section(s: ScoredUnit) -> tuple[str, tuple[str, ...]]:
    chunk = s.evidence.hit.chunk
    return chunk.path, chunk.heading_path


def _content(weights: dict[str, float]) -> dict[str, float]:
    return {t: w for t, w in weights.items() if not is_function_term(t)}


def heading_holds(unit: ScoredUnit, weights: dict[str, float]) -> float:
    """The share of the question's information (less its question words) that the
    heading of ``unit``'s own section holds."""
    weights = _content(weights)
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    present = set(keywords.terms(own_heading(unit.evidence)))
    return sum(w for t, w in weights.items() if t in present) / total


def adds_to(
    candidate: ScoredUnit, chosen: Sequence[ScoredUnit], weights: dict[str, float]
) -> float:
    """The share of the question's information (``weights``: its terms' IDF) that
    ``candidate`` (with its heading) holds and none of ``chosen`` (with theirs) does."""
    weights = _content(weights)
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    covered: set[str] = set()
    for c in chosen:
        covered |= _unit_terms(c)
    new = _unit_terms(candidate) - covered
    return sum(w for t, w in weights.items() if t in new) / total


def joins_from_another_block(
    candidate: ScoredUnit,
    chosen: Sequence[ScoredUnit],
    best: float,
    weights: dict[str, float],
    *,
    new_information: float = NEW_INFORMATION,
    near_best: float = NEAR_BEST,
    heading_joins: float = HEADING_JOINS,
) -> bool:
    """Whether a unit of a block the answer does not cite yet belongs in it: it is
    near the best unit in score, or in the same section as a chosen unit (a section
    cut into two passages), or its section's heading names what the question asks
    about (``heading_joins``: the heading is strong evidence), or it brings a part
    of the question the chosen units and their headings do not (a question about
    two things).  A block that only repeats words of the question the answer
    already holds, under a heading about something else, is a neighbouring topic
    ("Where does Citeline store its index?" next to § Hover to search).
    ``heading_joins`` 1 or more: headings never let a block in."""
    if not chosen or any(c.evidence.n == candidate.evidence.n for c in chosen):
        return True
    if candidate.probability >= near_best * best:
        return True
    if any(_section(c) == _section(candidate) for c in chosen):
        return True
    if heading_joins < 1 and heading_holds(candidate, weights) > heading_joins:
        return True
    return adds_to(candidate, chosen, weights) >= new_information
