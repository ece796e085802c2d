"""Extractive answers: the few units of the evidence that answer the question.

Every unit of every evidence block (sentences, list items, table rows, code
blocks: see ``units``) is scored against the question; the best ones are kept
verbatim, in a readable order, each followed by the [n] of its block.  No model
writes a word of it, so every sentence is supported by the block it cites.

Scoring (weights fitted on the tuning splits, see docs/quality.md):

- ``lexical``: the share of the question's information (keyword terms:
  stemmed English words, identifiers, CJK bigrams, weighted by their IDF in the
  index) found in the unit;
- ``context``: the same over the unit with its title, section heading and
  lead-in, which often name what the unit is about;
- ``local``: the same with terms weighted by how rare they are among the
  candidate units themselves: a term every unit shares (the topic, often named
  only in the first sentence) says little about which unit answers;
- ``local_characters``: for Chinese, Japanese and Korean, the same over the
  question's content characters (the CMRC 2018 scorer's unit);
- ``dense``: cosine of the question and the unit (with its heading) under the
  embedding model, when the model understands the question's language;
- ``rank``: the retrieval rank of the unit's block;
- ``length``: the unit's length (short units say little);
- ``code``: the unit is a code block (it answers "how do I run…", rarely more);
- ``fragment``: the unit does not end like a sentence (a heading or a caption
  that a PDF's text layer carries in its lines);
- ``number``: the question asks for a quantity or a time and the unit holds a
  number.

A unit that only repeats a heading of its block is never chosen.

The fused score is a logistic model's log-odds that the unit holds the answer;
its probability drives both the choice of units and the decision that the
evidence does not answer the question at all (``Extract.answered``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from citeline.core import keywords
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import Unit, split_units
from citeline.core.documents import SECTION_SEPARATOR
from citeline.core.scripts import CJK_RUN

Vectors = npt.NDArray[np.float32]
EmbedTexts = Callable[[Sequence[str]], Vectors]
TermWeights = Callable[[Sequence[str]], dict[str, float]]

FEATURES = (
    "lexical",
    "context",
    "local",
    "local_characters",
    "dense",
    "rank",
    "length",
    "code",
    "fragment",
    "number",
)


@dataclass(frozen=True)
class Weights:
    """A logistic model over ``FEATURES``: log-odds = bias + Σ weight × feature."""

    bias: float
    weights: tuple[float, ...]

    def logit(self, features: Sequence[float]) -> float:
        return self.bias + sum(w * f for w, f in zip(self.weights, features, strict=True))


# Fitted by benchmarks/tune_answers.py on the tuning splits (docs/quality.md).
ENGLISH_WEIGHTS = Weights(-7.0, (2.0, 1.0, 3.0, 0.0, 3.0, 2.5, 0.0, 0.0, -0.3, 0.3))
CJK_WEIGHTS = Weights(-7.0, (0.0, 0.0, 17.0, 3.0, 0.0, 3.5, 0.0, 0.0, -0.3, 0.3))


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    evidence: Evidence
    features: tuple[float, ...]
    logit: float

    @property
    def probability(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.logit))


@dataclass(frozen=True)
class SelectionSettings:
    max_units: int = 4
    # Further units must reach this share of the best unit's probability…
    relative: float = 0.5
    # …and this absolute probability.
    minimum: float = 0.2
    # The evidence answers the question when the best unit's probability reaches this.
    answer_threshold: float = 0.3
    # Near-duplicate units (share of word trigrams) are chosen once.
    redundancy: float = 0.6


@dataclass(frozen=True)
class Extract:
    """The chosen units, in answer order, and how sure the scorer is."""

    units: list[ScoredUnit]
    scored: list[ScoredUnit]  # every unit, best first
    best: float  # the best unit's probability

    def answered(self, settings: SelectionSettings) -> bool:
        return bool(self.units) and self.best >= settings.answer_threshold

    @property
    def cited(self) -> list[int]:
        """The evidence numbers the answer cites, in order of first use."""
        return list(dict.fromkeys(s.evidence.n for s in self.units))


# -- features -------------------------------------------------------------------

_CJK_QUESTION_CHARS = frozenset("什么哪里谁多少几吗呢是的了在有为何怎样如请问一个这那些")
_LENGTH_NORM = 200.0


_ASKS_NUMBER = re.compile(
    r"\b(?:how (?:many|much|long|often|old|large|big)|when|what (?:year|date|time|size)|"
    r"which (?:year|version|port|number))\b|多少|几|哪一?年|何时|什么时候|多大|多高|多长|多久",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万亿两]")


def _local_weights(question: set[str], units: Sequence[set[str]]) -> dict[str, float]:
    """Question items weighted by their rarity among the candidate units."""
    n = len(units)
    return {item: math.log((n + 1) / (sum(item in u for u in units) + 0.5)) for item in question}


def _coverage(question_terms: dict[str, float], terms: set[str]) -> float:
    total = sum(question_terms.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in question_terms.items() if t in terms) / total


def _content_characters(question: str) -> set[str]:
    chars = {c for run in CJK_RUN.findall(question) for c in run}
    return chars - _CJK_QUESTION_CHARS


_ENDS_SENTENCE = re.compile(r"[.!?。！？；;:：)）\]\"'”’`]\s*$")


def _folded(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _repeats_heading(unit: Unit, evidence: Evidence) -> bool:
    chunk = evidence.hit.chunk
    text = _folded(unit.text)
    return bool(text) and any(text == _folded(h) for h in (*chunk.heading_path, chunk.title))


def unit_context(unit: Unit, evidence: Evidence) -> str:
    """The title, section and lead-in that tell what a unit is about."""
    chunk = evidence.hit.chunk
    parts = list(chunk.heading_path)
    if chunk.title_from_content and chunk.title and (not parts or parts[0] != chunk.title):
        parts.insert(0, chunk.title)
    head = SECTION_SEPARATOR.join(parts)
    return "\n".join(p for p in (head, unit.lead) if p)


def embedding_input(unit: Unit, evidence: Evidence) -> str:
    """What the embedder reads for a unit: its heading, then the unit."""
    context = unit_context(unit, evidence)
    return f"{context}\n\n{unit.text}" if context else unit.text


class UnitScorer:
    """Scores the units of evidence blocks against a question.

    ``embed_texts``/``embed_query`` are the embedder's (None, or ``use_dense``
    False for a question the embedder does not understand: then the dense feature
    is 0 for every unit).  ``term_weights`` gives each keyword term's IDF in the
    index, so rare terms count more than common ones.
    """

    def __init__(
        self,
        term_weights: TermWeights,
        embed_texts: EmbedTexts | None = None,
        embed_query: Callable[[str], Vectors] | None = None,
    ) -> None:
        self.term_weights = term_weights
        self.embed_texts = embed_texts
        self.embed_query = embed_query

    def score(
        self, question: str, evidence: Sequence[Evidence], *, cjk: bool, use_dense: bool
    ) -> list[ScoredUnit]:
        pairs = [
            (u, e)
            for e in evidence
            for u in split_units(e.hit.chunk.text)
            if not _repeats_heading(u, e)
        ]
        if not pairs:
            return []
        q_terms = keywords.query_terms(question)
        weights = self.term_weights(q_terms) if q_terms else {}
        q_weighted = {t: weights.get(t, 1.0) for t in q_terms}
        q_chars = _content_characters(question) if cjk else set()
        dense = [0.0] * len(pairs)
        if use_dense and self.embed_texts is not None and self.embed_query is not None:
            vectors = self.embed_texts([embedding_input(u, e) for u, e in pairs])
            query = self.embed_query(question).reshape(-1)
            dense = [float(x) for x in vectors @ query]
        unit_terms = [set(keywords.terms(u.text)) for u, _ in pairs]
        unit_chars = [set(u.text) for u, _ in pairs]
        local_terms = _local_weights(set(q_terms), unit_terms)
        local_chars = _local_weights(q_chars, unit_chars)
        wants_number = bool(_ASKS_NUMBER.search(question))
        model = CJK_WEIGHTS if cjk else ENGLISH_WEIGHTS
        scored: list[ScoredUnit] = []
        for (unit, e), terms, chars, cosine in zip(
            pairs, unit_terms, unit_chars, dense, strict=True
        ):
            context_terms = terms | set(keywords.terms(unit_context(unit, e)))
            features = (
                _coverage(q_weighted, terms),
                _coverage(q_weighted, context_terms),
                _coverage(local_terms, terms),
                _coverage(local_chars, chars),
                cosine,
                1.0 / e.hit.rank,
                min(len(unit.text), 4 * _LENGTH_NORM) / _LENGTH_NORM,
                1.0 if unit.kind == "code" else 0.0,
                1.0 if unit.kind == "sentence" and not _ENDS_SENTENCE.search(unit.text) else 0.0,
                1.0 if wants_number and _NUMBER.search(unit.text) else 0.0,
            )
            scored.append(ScoredUnit(unit, e, features, model.logit(features)))
        scored.sort(key=lambda s: -s.logit)
        return scored


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


def select(scored: Sequence[ScoredUnit], settings: SelectionSettings) -> Extract:
    """The best units (1 to ``max_units``), with the units they lean on.

    A chosen sentence that opens with a pronoun or connective brings the sentence
    before it; one that ends with a colon or semicolon brings what follows, up
    to the end of the sentence or list (at most ``max_units`` more units).
    """
    if not scored:
        return Extract([], [], 0.0)
    at = {(s.evidence.n, s.unit.position): s for s in scored}
    best = scored[0].probability
    chosen: list[ScoredUnit] = []

    def add(unit: ScoredUnit) -> None:
        if unit not in chosen:
            chosen.append(unit)

    picked = 0
    for candidate in scored:
        if picked >= settings.max_units:
            break
        p = candidate.probability
        if picked and (p < settings.minimum or p < settings.relative * best):
            break
        if candidate in chosen or any(
            _redundant(candidate.unit.text, c.unit.text, settings.redundancy) for c in chosen
        ):
            continue
        picked += 1
        n, position = candidate.evidence.n, candidate.unit.position
        before = at.get((n, position - 1))
        if (
            candidate.unit.kind == "sentence"
            and _DEPENDENT_START.match(candidate.unit.text)
            and before is not None
            and before.unit.block == candidate.unit.block
        ):
            add(before)
        add(candidate)
        current = candidate
        for _ in range(settings.max_units):
            following = at.get((n, current.unit.position + 1))
            if following is None or not _CONTINUES.search(current.unit.text):
                break
            add(following)
            current = following
    # Reading order: blocks by their best unit, units of a block as written.
    first_seen: dict[int, int] = {}
    for rank, s in enumerate(chosen):
        first_seen.setdefault(s.evidence.n, rank)
    ordered = sorted(chosen, key=lambda s: (first_seen[s.evidence.n], s.unit.position))
    return Extract(ordered, list(scored), best)


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

    renumbered = Extract(moved(extract.units), moved(extract.scored), extract.best)
    return renumbered, [new[old] for old in order]


def compose(extract: Extract) -> str:
    """The answer text: each unit verbatim, then the [n] of its block.

    Sentences of one paragraph run on in one line; list items, table rows and
    code blocks start lines of their own.
    """
    lines: list[str] = []
    previous: ScoredUnit | None = None
    for s in extract.units:
        unit = s.unit
        marked = f"{unit.display} [{s.evidence.n}]"
        if unit.kind == "code":
            marked = f"{unit.text}\n[{s.evidence.n}]"
        runs_on = (
            previous is not None
            and unit.kind == "sentence"
            and previous.unit.kind == "sentence"
            and previous.evidence.n == s.evidence.n
            and previous.unit.block == unit.block
        )
        if runs_on:
            lines[-1] += " " + marked
        else:
            if (
                unit.kind == "item"
                and unit.lead
                and (previous is None or previous.unit.lead != unit.lead)
            ):
                lines.append(f"{unit.lead} [{s.evidence.n}]")
            lines.append(marked)
        previous = s
    return "\n".join(lines)
