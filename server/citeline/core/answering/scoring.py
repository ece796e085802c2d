"""Scoring answer units against a question, and judging whether any answers it.

Every unit of every evidence block (``units``) gets lexical features, cheap to
compute for all of them:

- ``lexical``: the share of the question's information (keyword terms: stemmed
  English words, identifiers, CJK bigrams, weighted by their IDF in the index)
  found in the unit;
- ``context``: the same over the unit with its title, section heading and
  lead-in, which often name what the unit is about;
- ``local``: the same with terms weighted by how rare they are among the
  candidate units themselves: a term every unit shares (the topic, often named
  only in the first sentence) says little about which unit answers;
- ``local_characters``: for Chinese, Japanese and Korean, the same over the
  question's content characters (the CMRC 2018 scorer's unit);
- ``previous``: ``local`` of the unit just before it in its block (a unit
  after a matching one often holds the value: "The default is 6700.");
- ``rank``: the retrieval rank of the unit's block;
- ``length``: the unit's length (short units say little);
- ``code``: the unit is a code block (its terms leave out string literals:
  ``citeline ask "Where is the index?"`` is an example of asking, not an answer);
- ``how_code``: a code block, and the question asks how to do something or for
  a command (code answers those);
- ``fragment``: the unit does not end like a sentence (a term being defined, a
  heading or caption in a PDF's text layer);
- ``number``: the question asks for a quantity or a time and the unit holds one.

A logistic model over them orders the units.  When the embedder understands the
question's language, the best ``DENSE_CANDIDATES`` units are then embedded in one
batch (with their heading) and reordered by a second model that adds their cosine
with the question.  Both models are fitted on the tuning splits by
``benchmarks/tune_answers.py`` (docs/quality.md).

Whether the evidence answers the question at all is a third model, over the
whole question: the best unit's probability, how much of the question's
information the best unit and all units together hold, whether the question's
rarest term occurs anywhere, the retrieval scores, whether the question names an
identifier the documents never mention (``core.sshCommand``, ``SHA-256``), and how
many of its words are jargon the evidence never uses (a word the embedder's
tokenizer does not know whole, such as ``deborphan`` or ``checkbashisms``, is not
everyday English: a question about it wants that very thing).
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
from citeline.core.answering.units import Unit, is_fragment, split_units
from citeline.core.documents import SECTION_SEPARATOR
from citeline.core.scripts import CJK_RUN

Vectors = npt.NDArray[np.float32]
EmbedTexts = Callable[[Sequence[str]], Vectors]
EmbedQuery = Callable[[str], Vectors]
TermWeights = Callable[[Sequence[str]], dict[str, float]]
UnknownTerms = Callable[[Sequence[str]], set[str]]
CountTokens = Callable[[str], int]

FEATURES = (
    "lexical",
    "context",
    "local",
    "local_characters",
    "previous",
    "rank",
    "length",
    "code",
    "how_code",
    "fragment",
    "number",
)
DENSE_FEATURES = (*FEATURES, "dense")
QUESTION_FEATURES = (
    "best",
    "best_lexical",
    "covered",
    "rarest",
    "hit_dense",
    "hit_keyword",
    "unknown_identifier",
    "missing_jargon",
)
#: Units embedded for the dense reordering: enough to hold the answer for almost
#: every question on the tuning split, few enough to embed in a fraction of a second.
DENSE_CANDIDATES = 12


@dataclass(frozen=True)
class Weights:
    """A logistic model: log-odds = bias + Σ weight × feature."""

    bias: float
    weights: tuple[float, ...]

    def logit(self, features: Sequence[float]) -> float:
        return self.bias + sum(w * f for w, f in zip(self.weights, features, strict=True))

    def probability(self, features: Sequence[float]) -> float:
        return _sigmoid(self.logit(features))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


@dataclass(frozen=True)
class Models:
    """What is fitted for one kind of question (English, or CJK).

    ``threshold``: the evidence answers the question when ``answerable`` says at
    least this.  ``relative``: units after the first must reach this share of the
    first one's probability (up to four units).
    """

    lexical: Weights  # over FEATURES
    dense: Weights | None  # over DENSE_FEATURES; None: no dense reordering
    answerable: Weights  # over QUESTION_FEATURES
    threshold: float = 0.5
    relative: float = 0.2


# Fitted by benchmarks/tune_answers.py on the tuning splits (docs/quality.md): English
# on eval/manuals-en/questions-tune.jsonl (refusing at most 5% of its answerable
# questions), CJK on CMRC 2018 trial (at most 2%).
ENGLISH = Models(
    lexical=Weights(
        -4.098, (2.107, 0.777, 1.098, 0.0, 3.439, 1.086, 0.521, 1.023, 0.447, 0.074, 0.27)
    ),
    dense=Weights(
        -4.986,
        (0.762, 1.249, 1.309, 0.0, 3.419, 1.036, 0.285, 0.992, 0.627, -0.214, 0.595, 2.222),
    ),
    answerable=Weights(-1.878, (4.116, 0.302, -1.288, -0.016, 1.807, 1.485, -1.746, -1.036)),
    threshold=0.31,
    relative=0.2,
)
CJK = Models(
    lexical=Weights(
        -6.856, (-5.604, -5.604, 16.611, 3.943, -0.348, 2.773, 0.241, 0.0, 0.0, -0.371, 0.384)
    ),
    dense=None,
    answerable=Weights(-5.017, (8.429, -4.06, 2.325, -3.286, 0.0, 10.013, -0.162, 0.0)),
    threshold=0.202,
    relative=0.0,
)


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    evidence: Evidence
    features: tuple[float, ...]  # FEATURES, then the cosine when it was embedded
    logit: float

    @property
    def probability(self) -> float:
        return _sigmoid(self.logit)


@dataclass(frozen=True)
class Scored:
    """A question's units, best first, and the probability that any answers it."""

    units: list[ScoredUnit]
    answerable: float
    question_features: tuple[float, ...]
    models: Models

    @property
    def answered(self) -> bool:
        return bool(self.units) and self.answerable >= self.models.threshold


# -- unit features ----------------------------------------------------------------

_CJK_QUESTION_CHARS = frozenset("什么哪里谁多少几吗呢是的了在有为何怎样如请问一个这那些")
_LENGTH_NORM = 200.0
_ASKS_NUMBER = re.compile(
    r"\b(?:how (?:many|much|long|often|old|large|big)|when|what (?:year|date|time|size)|"
    r"which (?:year|version|port|number))\b|多少|几|哪一?年|何时|什么时候|多大|多高|多长|多久",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d|[一二三四五六七八九十百千万亿两]")
_ASKS_HOW = re.compile(
    r"\b(?:how (?:do|can|should|would|to)|which (?:command|option|flag|setting|pragma)|"
    r"what command|command)\b|如何|怎么|怎样|命令",
    re.IGNORECASE,
)


_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")


def _meaning(unit: Unit) -> str:
    """The text a unit's terms are taken from: a code block without its string
    literals, which are data (an example question, a file name), not what it does."""
    return _QUOTED.sub(" ", unit.text) if unit.kind == "code" else unit.text


def _coverage(weights: dict[str, float], present: set[str]) -> float:
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in present) / total


def _local_weights(question: set[str], units: Sequence[set[str]]) -> dict[str, float]:
    """Question items weighted by their rarity among the candidate units."""
    n = len(units)
    return {item: math.log((n + 1) / (sum(item in u for u in units) + 0.5)) for item in question}


def _content_characters(question: str) -> set[str]:
    chars = {c for run in CJK_RUN.findall(question) for c in run}
    return chars - _CJK_QUESTION_CHARS


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

    ``term_weights`` gives each keyword term's IDF in the index, ``unknown_terms``
    the terms it does not contain at all; ``count_tokens`` is the embedder's
    tokenizer (for telling jargon from everyday words).  ``embed_texts``
    and ``embed_query`` are the embedder's; without them (or with ``use_dense``
    False, for a question the embedder does not understand) units are ordered by
    the lexical model alone.
    """

    def __init__(
        self,
        term_weights: TermWeights,
        unknown_terms: UnknownTerms | None = None,
        count_tokens: CountTokens | None = None,
        embed_texts: EmbedTexts | None = None,
        embed_query: EmbedQuery | None = None,
        english: Models = ENGLISH,
        cjk: Models = CJK,
    ) -> None:
        self.term_weights = term_weights
        self.unknown_terms = unknown_terms
        self.count_tokens = count_tokens
        self.embed_texts = embed_texts
        self.embed_query = embed_query
        self.english = english
        self.cjk = cjk

    def features(
        self, question: str, evidence: Sequence[Evidence], *, cjk: bool
    ) -> list[tuple[Unit, Evidence, tuple[float, ...]]]:
        """Every unit with its lexical features (``FEATURES``), in passage order."""
        pairs = [
            (u, e)
            for e in evidence
            for u in split_units(e.hit.chunk.text)
            if not _repeats_heading(u, e)
        ]
        if not pairs:
            return []
        q_terms = keywords.query_terms(question)
        idf = self.term_weights(q_terms) if q_terms else {}
        weights = {t: idf.get(t, 1.0) for t in q_terms}
        q_chars = _content_characters(question) if cjk else set()
        unit_terms = [set(keywords.terms(_meaning(u))) for u, _ in pairs]
        unit_chars = [set(u.text) for u, _ in pairs]
        local_terms = _local_weights(set(q_terms), unit_terms)
        local_chars = _local_weights(q_chars, unit_chars)
        local = [_coverage(local_terms, terms) for terms in unit_terms]
        wants_number = bool(_ASKS_NUMBER.search(question))
        wants_how = bool(_ASKS_HOW.search(question))
        out: list[tuple[Unit, Evidence, tuple[float, ...]]] = []
        for i, ((unit, e), terms, chars) in enumerate(
            zip(pairs, unit_terms, unit_chars, strict=True)
        ):
            before = i > 0 and pairs[i - 1][1] is e and pairs[i - 1][0].block == unit.block
            context_terms = terms | set(keywords.terms(unit_context(unit, e)))
            features = (
                _coverage(weights, terms),
                _coverage(weights, context_terms),
                local[i],
                _coverage(local_chars, chars),
                local[i - 1] if before else 0.0,
                1.0 / e.hit.rank,
                min(len(unit.text), 4 * _LENGTH_NORM) / _LENGTH_NORM,
                1.0 if unit.kind == "code" else 0.0,
                1.0 if unit.kind == "code" and wants_how else 0.0,
                1.0 if is_fragment(unit) else 0.0,
                1.0 if wants_number and _NUMBER.search(unit.text) else 0.0,
            )
            out.append((unit, e, features))
        return out

    def score(
        self, question: str, evidence: Sequence[Evidence], *, cjk: bool, use_dense: bool
    ) -> Scored:
        models = self.cjk if cjk else self.english
        featured = self.features(question, evidence, cjk=cjk)
        units = [ScoredUnit(u, e, f, models.lexical.logit(f)) for u, e, f in featured]
        units.sort(key=lambda s: -s.logit)
        if (
            use_dense
            and models.dense is not None
            and self.embed_texts is not None
            and self.embed_query is not None
            and units
        ):
            head, tail = units[:DENSE_CANDIDATES], units[DENSE_CANDIDATES:]
            vectors = self.embed_texts([embedding_input(s.unit, s.evidence) for s in head])
            cosines = vectors @ self.embed_query(question).reshape(-1)
            dense = models.dense
            head = [
                ScoredUnit(s.unit, s.evidence, f, dense.logit(f))
                for s, cosine in zip(head, cosines, strict=True)
                for f in [(*s.features, float(cosine))]
            ]
            head.sort(key=lambda s: -s.logit)
            units = head + tail
        identifiers = sorted(keywords.identifier_terms(question))
        unknown = bool(self.unknown_terms and identifiers and self.unknown_terms(identifiers))
        jargon = (
            missing_jargon(question, units, self.count_tokens)
            if self.count_tokens is not None and not cjk
            else 0
        )
        q = question_features(question, units, self.term_weights, evidence, unknown, jargon)
        return Scored(units, models.answerable.probability(q), q, models)


def question_features(
    question: str,
    units: Sequence[ScoredUnit],
    term_weights: TermWeights,
    evidence: Sequence[Evidence],
    unknown_identifier: bool,
    jargon: int,
) -> tuple[float, ...]:
    """``QUESTION_FEATURES``: how well the units, best first, answer the question."""
    if not units:
        return (0.0,) * (len(QUESTION_FEATURES) - 2) + (float(unknown_identifier), min(jargon, 2))
    q_terms = keywords.query_terms(question)
    idf = term_weights(q_terms) if q_terms else {}
    everything = _evidence_terms(units)
    rarest = max(q_terms, key=lambda t: idf.get(t, 0.0)) if q_terms else None
    weights = {t: idf.get(t, 1.0) for t in q_terms}
    hits = [e.hit for e in evidence]
    return (
        units[0].probability,
        max(s.features[0] for s in units),
        _coverage(weights, everything),
        1.0 if rarest is not None and rarest in everything else 0.0,
        max((h.dense for h in hits if h.dense is not None), default=0.0),
        max((h.keyword for h in hits if h.keyword is not None), default=0.0),
        float(unknown_identifier),
        float(min(jargon, 2)),
    )


def _evidence_terms(units: Sequence[ScoredUnit]) -> set[str]:
    """Every keyword term of the units and their headings."""
    out: set[str] = set()
    for s in units:
        out |= set(keywords.terms(s.unit.text))
        out |= set(keywords.terms(unit_context(s.unit, s.evidence)))
    return out


_WORD = re.compile(r"[A-Za-z][\w.]*[A-Za-z0-9]|[A-Za-z]")


def question_words(question: str) -> list[str]:
    """The question's Latin-script words, a hyphenated word as its parts."""
    return list(dict.fromkeys(w for part in question.split("-") for w in _WORD.findall(part)))


def missing_jargon(question: str, units: Sequence[ScoredUnit], count_tokens: CountTokens) -> int:
    """How many of the question's words are jargon (not one token to the embedder's
    tokenizer) that no unit uses; a hyphenated word counts by its parts."""
    present = _evidence_terms(units)
    found = 0
    for word in question_words(question):
        terms = keywords.terms(word)
        if not terms or all(t in present for t in terms):
            continue
        if count_tokens(word.lower()) > 1:
            found += 1
    return found
