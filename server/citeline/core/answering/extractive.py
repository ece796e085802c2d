"""Extractive answers: the few units of the evidence that answer the question.

The units (``units``), best first as ``scoring`` orders them, are chosen and
written out verbatim, in a readable order, each followed by the [n] of its block.
No model writes a word of it, so every sentence is supported by the block it cites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citeline.core.answering.other_blocks import (
    NEAR_BEST,
    NEW_INFORMATION,
    heading_holds,
    joins_from_another_block,
)
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import Scored, ScoredUnit
from citeline.core.answering.units import is_fragment
from citeline.core.scripts import CJK_RUN

# Units chosen on their own score (those they bring come along beyond it): the fifth
# raised "fact contained" on both English tune splits and cited more expected
# sources, for about 130 characters more per answer (docs/quality.md).
MAX_UNITS = 5
# A lead-in that ends with a colon brings its whole list, up to this many items.
LIST_MAX_ITEMS = 12
# A line of a list written without markers is at most this long; so is a heading or
# label line (a fragment) that takes none of the ``MAX_UNITS`` slots.
LINE_ITEM_MAX_CHARS = 200
# Near-duplicate units (share of word trigrams) are chosen once.
REDUNDANCY = 0.6


@dataclass(frozen=True)
class Extract:
    """The chosen units, in answer order, and how sure the scorer is."""

    units: list[ScoredUnit]
    scored: list[ScoredUnit]  # every unit, best first
    answerable: float  # the probability that the evidence answers the question
    answered: bool

    @property
    def cited(self) -> list[int]:
        """The evidence numbers the answer cites, in order of first use."""
        return list(dict.fromkeys(s.evidence.n for s in self.units))


# -- choosing and writing -------------------------------------------------------

_WORD = re.compile(r"\w+")
# A unit that opens like this leans on the sentence before it.
_DEPENDENT_START = re.compile(
    r"^(?:it|its|this|that|these|those|they|their|them|such|however|also|then|"
    r"therefore|thus|otherwise|instead|here|there|he|she|both|either|neither|"
    r"in (?:this|that|addition|contrast)|for (?:example|instance)|as a result)\b"
    r"|^(?:它|它们|这|那|该|此|其|但|但是|因此|所以|而且|另外|此外|同时|他|她)",
    re.IGNORECASE,
)


def _trigrams(text: str) -> set[tuple[str, ...]]:
    if CJK_RUN.search(text):
        chars = [c for c in text if not c.isspace()]
        return {tuple(chars[i : i + 3]) for i in range(max(len(chars) - 2, 1))}
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + 3]) for i in range(max(len(words) - 2, 1))}


def _redundant(a: str, b: str, threshold: float) -> bool:
    ta, tb = _trigrams(a), _trigrams(b)
    small = min(len(ta), len(tb))
    return small > 0 and len(ta & tb) / small >= threshold


_CONTINUES = re.compile(r"[:：;；,，]\s*$")
# A short sentence after a chosen one that carries its value: "The default is 6700."
_CARRIES_VALUE = re.compile(r"^(?:the )?defaults?\b|^by default\b|^(?:it|this) defaults\b", re.I)
_TERM_MAX_CHARS = 80
_VALUE_MAX_CHARS = 160


def _lists_after(unit: ScoredUnit) -> bool:
    """A lead-in whose list a page writes as lines of their own (an HTML list's items
    are paragraphs without a marker): a Latin-script sentence ending with a colon."""
    text = unit.unit.text
    return unit.unit.kind == "sentence" and text.rstrip().endswith(":") and not CJK_RUN.search(text)


_SENTENCE_END = re.compile(r"[.!?。！？][\"'”’)\]]*\s*$")


def _is_line_item(unit: ScoredUnit) -> bool:
    """A line of such a list: a short unit with no full stop at its end ("0 when the
    backup was successful (snapshot … created)")."""
    text = unit.unit.text
    return (
        unit.unit.kind in ("sentence", "item")
        and len(text) <= LINE_ITEM_MAX_CHARS
        and not _SENTENCE_END.search(text)
    )


def select(
    result: Scored,
    max_units: int = MAX_UNITS,
    *,
    new_information: float = NEW_INFORMATION,
    near_best: float = NEAR_BEST,
    heading_joins: float | None = None,
    line_lists: bool = True,
    code_brings_lead: bool = True,
    heading_first: float = 2.0,
    fragments_free: int = LINE_ITEM_MAX_CHARS,
) -> Extract:
    """The best units (1 to ``max_units``), with the units they lean on.

    Units after the first must reach the ``relative`` share of its probability
    that the question's models set, unless the question asks two things (each
    part's unit scores lower than a one-part question's would).

    A chosen sentence that opens with a pronoun or connective brings the sentence
    before it; one that ends with a colon or semicolon brings what follows, up
    to the end of the sentence or list (at most ``LIST_MAX_ITEMS`` more); one
    that opens a block right after a short term (a definition list's term, an
    option's name) brings the term; a short sentence after it that states a
    default comes along; with ``opening_brings_next`` (English), a sentence that
    opens its passage (a section's first words often set the question up, and
    the next give the answer) brings the unit after it.  With ``other_blocks_add``, a
    unit of a block not cited yet must pass ``joins_from_another_block``.

    With ``line_lists``, a Latin-script lead-in ending with a colon also brings the
    lines after it that read as a list's items (short, no full stop at the end: an
    HTML list's items are paragraphs of their own, without a marker); with
    ``code_brings_lead``, a chosen code block brings the sentence ending with a colon
    just before it ("… the dump command, like this:").  Measured and left off
    (docs/quality.md): ``heading_first`` (below 1), the best unit bringing its
    passage's first unit when its heading holds that share of the question.  A
    chosen fragment (a line not ending like a sentence: a heading, a label, a list's
    line) of at most ``fragments_free`` characters takes none of the ``max_units``
    slots: it states no answer alone.  ``heading_joins`` None: the models' own.
    """
    scored = result.units
    if not scored:
        return Extract([], [], result.answerable, False)
    relative = result.models.relative if result.parts == 1 else 0.0
    at = {(s.evidence.n, s.unit.position): s for s in scored}
    opening: dict[int, int] = {}  # each passage's first unit
    for n, position in sorted(at):
        opening.setdefault(n, position)
    best = scored[0].probability
    joins = result.models.heading_joins if heading_joins is None else heading_joins
    chosen: list[ScoredUnit] = []

    def add(unit: ScoredUnit) -> None:
        if unit not in chosen:
            chosen.append(unit)

    def left_out(unit: ScoredUnit) -> bool:
        return result.models.other_blocks_add and not joins_from_another_block(
            unit, chosen, best, result.terms, new_information=new_information,
            near_best=near_best, heading_joins=joins,
        )  # fmt: skip

    picked, queue, deferred = 0, list(scored), list[ScoredUnit]()
    while queue:
        candidate = queue.pop(0)
        if picked >= max_units or (picked and candidate.probability < relative * best):
            break
        if candidate in chosen or any(
            _redundant(candidate.unit.text, c.unit.text, REDUNDANCY) for c in chosen
        ):
            continue
        if left_out(candidate):
            deferred.append(candidate)
            continue
        picked += not (is_fragment(candidate.unit) and len(candidate.unit.text) <= fragments_free)
        n, position = candidate.evidence.n, candidate.unit.position
        before = at.get((n, position - 1))
        if (
            code_brings_lead
            and before is not None
            and candidate.unit.kind == "code"
            and _lists_after(before)
        ):
            add(before)  # "… the dump command, like this:" before its example
        elif before is not None and before.unit.block == candidate.unit.block:
            if candidate.unit.kind == "sentence" and _DEPENDENT_START.match(candidate.unit.text):
                add(before)
        elif (
            before is not None
            and is_fragment(before.unit)
            and len(before.unit.text) <= _TERM_MAX_CHARS
        ):
            add(before)
        first = at.get((n, opening[n]))
        if (
            picked == 1
            and first is not None
            and first is not candidate
            and not is_fragment(first.unit)
            and heading_holds(candidate, result.terms) >= heading_first
        ):
            add(first)  # what a section whose heading the question names says first
        add(candidate)
        after = at.get((n, position + 1))
        opens = candidate.unit.kind == "sentence" and opening[n] == position
        if after is not None and (
            (result.models.opening_brings_next and opens)
            or (
                after.unit.block == candidate.unit.block
                and len(after.unit.text) <= _VALUE_MAX_CHARS
                and _CARRIES_VALUE.match(after.unit.text)
            )
        ):
            add(after)
        current = candidate
        line_list = line_lists and _lists_after(candidate)
        for _ in range(LIST_MAX_ITEMS):
            following = at.get((n, current.unit.position + 1))
            if following is None:
                break
            its_list = following.unit.kind == "item" and following.unit.lead == candidate.unit.text
            its_line = line_list and _is_line_item(following)
            if not (its_list or its_line or _CONTINUES.search(current.unit.text)):
                break
            add(following)
            current = following
        # Units the rule left out that join now (their block or section is in the
        # answer) come next, in their order: they outscore the units still queued.
        back = {id(d) for d in deferred if not left_out(d)}
        queue[:0], deferred = (
            [d for d in deferred if id(d) in back],
            [d for d in deferred if id(d) not in back],
        )
    # Reading order: blocks by their best unit, units of a block as written.
    first_seen: dict[int, int] = {}
    for rank, s in enumerate(chosen):
        first_seen.setdefault(s.evidence.n, rank)
    ordered = sorted(chosen, key=lambda s: (first_seen[s.evidence.n], s.unit.position))
    return Extract(ordered, list(scored), result.answerable, result.answered)


def renumber(extract: Extract) -> tuple[Extract, list[Evidence]]:
    """Blocks numbered in the order the answer cites them, the uncited ones after.

    Returns the extract with its units pointing at the renumbered blocks, and
    every block the units came from, in the new order.
    """
    blocks: dict[int, Evidence] = {}
    for s in extract.scored:
        blocks.setdefault(s.evidence.n, s.evidence)
    order = extract.cited + sorted(n for n in blocks if n not in extract.cited)
    new = {old: Evidence(n, blocks[old].hit) for n, old in enumerate(order, start=1)}

    def moved(units: Sequence[ScoredUnit]) -> list[ScoredUnit]:
        return [ScoredUnit(s.unit, new[s.evidence.n], s.features, s.logit) for s in units]

    renumbered = Extract(
        moved(extract.units), moved(extract.scored), extract.answerable, extract.answered
    )
    return renumbered, [new[old] for old in order]


def compose(extract: Extract) -> str:
    """The answer text: each unit verbatim, then the [n] of its block.

    Sentences of one paragraph run on in one line; list items, table rows and
    code blocks start lines of their own.  A list's lead-in and a table's header
    are shown once, before the first of their items or rows.
    """
    lines: list[str] = []
    shown: set[tuple[int, str]] = set()  # (block, text) already in the answer
    previous: ScoredUnit | None = None
    for s in extract.units:
        unit, n = s.unit, s.evidence.n
        lead_shown = (n, unit.lead) in shown
        if unit.kind == "code":
            marked = f"{unit.text}\n[{n}]"
        elif unit.kind == "row" and not lead_shown:
            marked = f"{unit.display} [{n}]"
        else:
            marked = f"{unit.text} [{n}]"
        runs_on = (
            previous is not None
            and unit.kind == "sentence"
            and previous.unit.kind == "sentence"
            and previous.evidence.n == n
            and previous.unit.block == unit.block
        )
        if runs_on:
            lines[-1] += " " + marked
        else:
            if unit.kind == "item" and unit.lead and not lead_shown:
                lines.append(f"{unit.lead} [{n}]")
            lines.append(marked)
        shown.add((n, unit.text))
        if unit.lead:
            shown.add((n, unit.lead))
        previous = s
    return "\n".join(lines)
