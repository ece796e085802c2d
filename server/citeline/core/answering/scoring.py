"""Scoring answer units against a question, and judging whether any answers it.

A logistic model over the units' lexical features (``features``) orders them.
When the embedder understands the question's language, the best
``DENSE_CANDIDATES`` units are then embedded in one batch (with their heading) and
reordered by a second model that adds their cosine with the question.  Whether
the evidence answers the question at all is a third model, over the whole
question: the best unit's probability, how much of the question's information the
best unit and all units together hold, whether the question's rarest term occurs
anywhere, the retrieval scores, an unknown identifier, missing jargon, and how
the best unit agrees with the rest (``section_features``: its passage's retrieval
rank, its cosine, the question's cosine with the best sections' headings).  The
models are fitted on the tuning splits by ``benchmarks/tune_answers.py``
(``fitted``, docs/quality.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from citeline.core import keywords
from citeline.core.answering.bridge import (
    Bridge,
    Links,
    bridged_coverage,
    bridged_local_weights,
)
from citeline.core.answering.features import (
    ASKS_NUMBER,
    LENGTH_NORM,
    NUMBER,
    CountTokens,
    asks_how,
    cjk_terms,
    content_characters,
    coverage,
    embedding_input,
    evidence_terms,
    identifiers,
    kind_fits,
    local_weights,
    meaning,
    missing_jargon,
    own_heading,
    question_parts,
    question_words,
    repeats_heading,
    unit_context,
)
from citeline.core.answering.fitted import (
    CJK,
    ENGLISH,
    FEATURES,
    SECTION_FEATURES,
    Models,
    sigmoid,
)
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import Unit, is_contents_line, is_fragment, split_units

Vectors = npt.NDArray[np.float32]
EmbedTexts = Callable[[Sequence[str]], Vectors]
EmbedQuery = Callable[[str], Vectors]
TermWeights = Callable[[Sequence[str]], dict[str, float]]
UnknownTerms = Callable[[Sequence[str]], set[str]]

#: Units embedded for the dense reordering: enough to hold the answer for almost
#: every question on the tuning split, few enough to embed in a fraction of a second.
DENSE_CANDIDATES = 12
#: The best units whose sections' headings are compared with the question.
HEADED = 3


@dataclass(frozen=True)
class ScoredUnit:
    unit: Unit
    evidence: Evidence
    features: tuple[float, ...]  # FEATURES, then the cosine when it was embedded
    logit: float

    @property
    def probability(self) -> float:
        return sigmoid(self.logit)


@dataclass(frozen=True)
class Scored:
    """A question's units, best first, and the probability that any answers it."""

    units: list[ScoredUnit]
    answerable: float
    question_features: tuple[float, ...]
    models: Models
    parts: int = 1  # how many questions it asks (``features.question_parts``)
    # The question's keyword terms and their IDF in the index (for the selection).
    terms: dict[str, float] = field(default_factory=dict)

    @property
    def answered(self) -> bool:
        return bool(self.units) and self.answerable >= self.models.threshold

    @property
    def off_topic(self) -> bool:
        """Below the model's floor: the evidence is off the question's topic."""
        return self.answerable < self.models.floor


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
        bridge: Bridge | None = None,
    ) -> None:
        self.term_weights = term_weights
        self.unknown_terms = unknown_terms
        self.count_tokens = count_tokens
        self.embed_texts = embed_texts
        self.embed_query = embed_query
        self.english = english
        self.cjk = cjk
        self.bridge = bridge

    def missing_terms(self, question: str, *, cjk: bool, keyword_only: bool = False) -> list[str]:
        """What the question names that no document of the index contains: its
        identifiers (``core.sshCommand``, ``SHA-256``, ``WireGuard``), and in English
        the names it capitalises inside the sentence that the embedder's tokenizer
        does not know whole (``Flathub``).  Such a question hinges on that very
        thing, so no passage can answer it.  (A lower-case word the tokenizer splits
        is often an inflection, ``rewrote``, or a spelling the documents lack, and
        two capitals a unit or short form, ``GB``: the answer scorer weighs those,
        ``missing_jargon``.)  A CJK question read by keywords alone (``keyword_only``:
        the embedder does not read it) is also missing the content terms
        (``features.cjk_terms``) none of whose bigrams the index holds, when they are
        at least half of its content terms and words: keywords are all that can match
        it ("板球的规则是什么？" over manuals without "板球")."""
        if self.unknown_terms is None:
            return []
        if cjk and keyword_only:
            missing = self._missing_cjk_terms(question)
            if missing:
                return missing
        names = {t: t for t in identifiers(question)}
        if not cjk and self.count_tokens is not None:
            for word in question_words(question)[1:]:
                word_terms = keywords.terms(word)
                if (
                    word[:1].isupper()
                    and len(word) > 2
                    and len(word_terms) == 1
                    and self.count_tokens(word.lower()) > 1
                ):
                    names.setdefault(word_terms[0], word)
        if not names:
            return []
        unknown = self.unknown_terms(sorted(names))
        return [names[t] for t in sorted(unknown)]

    def _missing_cjk_terms(self, question: str) -> list[str]:
        assert self.unknown_terms is not None
        runs = cjk_terms(question)
        words = [w for w in question_words(question) if keywords.terms(w)]
        if not runs:
            return []
        bigrams = {run: [run[i : i + 2] for i in range(len(run) - 1)] for run in runs}
        every = sorted(
            {b for bs in bigrams.values() for b in bs}
            | {t for w in words for t in keywords.terms(w)}
        )
        unknown = self.unknown_terms(every)
        missing = [run for run in runs if all(b in unknown for b in bigrams[run])]
        missing += [w for w in words if all(t in unknown for t in keywords.terms(w))]
        return missing if missing and 2 * len(missing) >= len(runs) + len(words) else []

    def features(
        self, question: str, evidence: Sequence[Evidence], *, cjk: bool, bridged: bool = False
    ) -> list[tuple[Unit, Evidence, tuple[float, ...]]]:
        """Every unit with its lexical features (``FEATURES``), in passage order;
        ``bridged``: with the vocabulary bridge's links (``bridge``; English)."""
        pairs = [
            (u, e)
            for e in evidence
            for u in split_units(e.hit.chunk.text)
            if not repeats_heading(u, e) and not is_contents_line(u)
        ]
        if not pairs:
            return []
        links: Links = {}
        if bridged and self.bridge is not None and not cjk:
            links = self.bridge.for_units(question, pairs)
        q_terms = keywords.query_terms(question)
        idf = self.term_weights(q_terms) if q_terms else {}
        weights = {t: idf.get(t, 1.0) for t in q_terms}
        q_chars = content_characters(question) if cjk else set()
        unit_terms = [set(keywords.terms(meaning(u))) for u, _ in pairs]
        unit_chars = [set(u.text) for u, _ in pairs]
        local_terms = bridged_local_weights(q_terms, unit_terms, links)
        local_chars = local_weights(q_chars, unit_chars)
        local = [bridged_coverage(local_terms, terms, links) for terms in unit_terms]
        wants_number = bool(ASKS_NUMBER.search(question))
        wants_how = asks_how(question)
        headings = {e.n: keywords.terms(own_heading(e)) for e in evidence}
        heading = {n: bridged_coverage(weights, terms, links) for n, terms in headings.items()}
        firsts: dict[int, int] = {}
        for u, e in pairs:  # in passage order: the first seen is the first under the heading
            firsts.setdefault(e.n, u.position)
        out: list[tuple[Unit, Evidence, tuple[float, ...]]] = []
        for i, ((unit, e), terms, chars) in enumerate(
            zip(pairs, unit_terms, unit_chars, strict=True)
        ):
            before = i > 0 and pairs[i - 1][1] is e and pairs[i - 1][0].block == unit.block
            context_terms = terms | set(keywords.terms(unit_context(unit, e)))
            features = (
                bridged_coverage(weights, terms, links),
                bridged_coverage(weights, context_terms, links),
                local[i],
                coverage(local_chars, chars),
                local[i - 1] if before else 0.0,
                1.0 / e.hit.rank,
                min(len(unit.text), 4 * LENGTH_NORM) / LENGTH_NORM,
                1.0 if unit.kind == "code" else 0.0,
                1.0 if unit.kind == "code" and wants_how else 0.0,
                1.0 if is_fragment(unit) else 0.0,
                1.0 if wants_number and NUMBER.search(unit.text) else 0.0,
                heading[e.n],
                heading[e.n] if unit.position == firsts[e.n] else 0.0,
                1.0 if kind_fits(question, unit) else 0.0,
            )
            out.append((unit, e, features))
        return out

    def heading_cosines(self, question: str, evidence: Sequence[Evidence]) -> dict[str, float]:
        """The cosine of the question with each passage's own section heading."""
        if self.embed_texts is None or self.embed_query is None:
            return {}
        texts = list(dict.fromkeys(h for h in map(own_heading, evidence) if h))
        if not texts:
            return {}
        cosines = self.embed_texts(texts) @ self.embed_query(question).reshape(-1)
        return {t: float(c) for t, c in zip(texts, cosines, strict=True)}

    def score(
        self, question: str, evidence: Sequence[Evidence], *, cjk: bool, use_dense: bool
    ) -> Scored:
        models = self.cjk if cjk else self.english
        featured = self.features(question, evidence, cjk=cjk, bridged=use_dense)
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
            headings = self.heading_cosines(question, [s.evidence for s in units[:HEADED]])
        else:
            headings = {}
        named = sorted(identifiers(question))
        unknown = bool(self.unknown_terms and named and self.unknown_terms(named))
        jargon = (
            missing_jargon(question, [(s.unit, s.evidence) for s in units], self.count_tokens)
            if self.count_tokens is not None and not cjk
            else 0
        )
        q = question_features(
            question, units, self.term_weights, evidence, unknown, jargon, headings
        )
        q_terms = keywords.query_terms(question)
        idf = self.term_weights(q_terms) if q_terms else {}
        return Scored(
            units,
            models.answerable.probability(q),
            q,
            models,
            question_parts(question),
            {t: idf.get(t, 1.0) for t in q_terms},
        )


def question_features(
    question: str,
    units: Sequence[ScoredUnit],
    term_weights: TermWeights,
    evidence: Sequence[Evidence],
    unknown_identifier: bool,
    jargon: int,
    headings: Mapping[str, float] | None = None,
) -> tuple[float, ...]:
    """``QUESTION_FEATURES``: how well the units, best first, answer the question."""
    if not units:
        zeros = (0.0,) * len(SECTION_FEATURES)
        return (*(0.0,) * 6, float(unknown_identifier), float(min(jargon, 2)), *zeros)
    q_terms = keywords.query_terms(question)
    idf = term_weights(q_terms) if q_terms else {}
    everything = evidence_terms([(s.unit, s.evidence) for s in units])
    rarest = max(q_terms, key=lambda t: idf.get(t, 0.0)) if q_terms else None
    weights = {t: idf.get(t, 1.0) for t in q_terms}
    hits = [e.hit for e in evidence]
    return (
        units[0].probability,
        max(s.features[0] for s in units),
        coverage(weights, everything),
        1.0 if rarest is not None and rarest in everything else 0.0,
        max((h.dense for h in hits if h.dense is not None), default=0.0),
        max((h.keyword for h in hits if h.keyword is not None), default=0.0),
        float(unknown_identifier),
        float(min(jargon, 2)),
        *section_features(units, headings or {}),
    )


def section_features(
    units: Sequence[ScoredUnit], headings: Mapping[str, float]
) -> tuple[float, ...]:
    """``SECTION_FEATURES``: how retrieval, the embedder and the best sections'
    headings agree with the best unit."""
    best = units[0]
    n = len(FEATURES)
    return (
        best.features[FEATURES.index("rank")],
        max((s.features[n] for s in units if len(s.features) > n), default=0.0),
        max((headings.get(own_heading(s.evidence), 0.0) for s in units[:HEADED]), default=0.0),
    )
