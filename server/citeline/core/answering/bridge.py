"""The vocabulary bridge: a question's words matched to the evidence's words by meaning.

People ask in everyday words ("what file types", "make it ignore a folder", "is
it slow"); documents answer in their own ("formats", "exclude", "fast enough").
The bridge is built from the corpus and the folder's embedder, never from a
word list: every distinct English word of the evidence (its units and their
headings) and every content word of the question is embedded alone, once per
folder (the vectors are kept as the units' are: ``unit_vectors.UnitVectors``), and
each question term is linked to the evidence terms whose word's cosine with its
word reaches the threshold (at most ``PER_TERM`` of them, nearest first).

The overlap features then count a linked term a unit holds as part of the
question term it stands for, down-weighted by the cosine (``bridged_coverage``):
a unit under "Supported formats" holds some of "file types"' information.
Question words (``features.FUNCTION_TERMS``) are never bridged, and a term a unit
holds itself always counts whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from citeline.core import keywords
from citeline.core.answering.features import FUNCTION_TERMS, local_weights, meaning, unit_context
from citeline.core.answering.results import Evidence
from citeline.core.answering.units import Unit

Vectors = npt.NDArray[np.float32]
EmbedTexts = Callable[[Sequence[str]], Vectors]
Links = Mapping[str, Mapping[str, float]]  # question term -> {evidence term: cosine}

#: The cosine at which two words stand for each other (all-MiniLM-L6-v2, single
#: words; fitted on the tune splits, docs/quality.md "The vocabulary bridge").
THRESHOLD = 0.6
#: The bundled embedding models the bridge was fitted for, with their threshold
#: (another model's cosines between single words are on another scale: no bridge).
THRESHOLDS: dict[str, float] = {"all-MiniLM-L6-v2": THRESHOLD}
#: Evidence terms linked to one question term, nearest first.
PER_TERM = 3
#: Whether the units' words are in the vocabulary (else only headings and lead-ins).
UNITS = True
#: Whether a question term the vocabulary holds is linked too (to the others).
EVERY = False
#: Words shorter than this are not bridged (``ls``, ``id``: an embedder reads them as noise).
MIN_LETTERS = 3

# A plain word: letters, a capital only first, not part of an identifier
# (``core.sshCommand``, ``.envrc``, ``--force``, ``pg_hba``).
_WORD = re.compile(r"(?<![\w.`/-])[A-Za-z][a-z]+(?![\w`/-]|\.\w)")


def words(text: str) -> dict[str, str]:
    """The text's plain English words by keyword term (the first spelling seen,
    lower-cased): ``{"format": "formats"}``.  Identifiers, numbers and words the
    keyword stemmer does not take as one term are left out."""
    out: dict[str, str] = {}
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if len(word) < MIN_LETTERS:
            continue
        terms = keywords.terms(word)
        if len(terms) == 1 and terms[0] not in FUNCTION_TERMS:
            out.setdefault(terms[0], word)
    return out


def _normalised(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: Vectors = vectors / np.maximum(norms, 1e-12)
    return out


def link(
    question: Mapping[str, str],
    vocabulary: Mapping[str, str],
    embed: EmbedTexts,
    threshold: float = THRESHOLD,
    per_term: int = PER_TERM,
    every: bool = False,
) -> dict[str, dict[str, float]]:
    """Each question term's nearest evidence terms at ``threshold`` or above (by the
    cosine of their words), at most ``per_term``; a term the vocabulary holds itself
    is not linked to others (it needs no bridge) unless ``every``, and never a term to
    itself."""
    asked = [t for t in question if every or t not in vocabulary]
    others = [t for t in vocabulary if t not in question]
    if not asked or not others:
        return {}
    texts = [question[t] for t in asked] + [vocabulary[t] for t in others]
    vectors = _normalised(np.asarray(embed(texts), dtype=np.float32))
    cosines = vectors[: len(asked)] @ vectors[len(asked) :].T
    out: dict[str, dict[str, float]] = {}
    for i, term in enumerate(asked):
        row = cosines[i]
        best = np.argsort(-row)[:per_term]
        near = {others[j]: float(row[j]) for j in best if row[j] >= threshold}
        if near:
            out[term] = near
    return out


def bridged_coverage(weights: Mapping[str, float], present: Iterable[str], links: Links) -> float:
    """``features.coverage`` with the bridge: a question term the text lacks counts
    its weight times the cosine of its nearest linked term the text holds."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held = set(present)
    got = 0.0
    for term, weight in weights.items():
        if term in held:
            got += weight
            continue
        near = links.get(term)
        if near:
            got += weight * max((c for t, c in near.items() if t in held), default=0.0)
    return got / total


def bridged_local_weights(
    question: Sequence[str], units: Sequence[set[str]], links: Links
) -> dict[str, float]:
    """``features.local_weights`` with the bridge: a question term is as rare among the
    candidate units as the units holding it or a term linked to it are few."""
    if not links:
        return local_weights(set(question), units)
    n = len(units)
    out: dict[str, float] = {}
    for term in dict.fromkeys(question):
        forms = {term, *links.get(term, {})}
        held = sum(1 for u in units if forms & u)
        out[term] = math.log((n + 1) / (held + 0.5))
    return out


@dataclass(frozen=True)
class Bridge:
    """The bridge for one folder: its embedder's ``embed`` (kept vectors) and threshold."""

    embed: EmbedTexts
    threshold: float = THRESHOLD
    per_term: int = PER_TERM
    #: the units' own words are bridged too, not only their headings and lead-ins
    units: bool = UNITS
    #: every question term is linked, not only those the vocabulary lacks
    every: bool = EVERY

    def for_units(
        self, question: str, units: Sequence[tuple[Unit, Evidence]]
    ) -> dict[str, dict[str, float]]:
        """The question's terms linked to the terms of the units' headings and lead-ins
        (``features.unit_context``), and of the units themselves when ``units``."""
        texts = [unit_context(u, e) for u, e in units]
        if self.units:
            texts += [meaning(u) for u, _ in units]
        return self.links(question, dict.fromkeys(texts))

    def links(self, question: str, texts: Iterable[str]) -> dict[str, dict[str, float]]:
        """The question's terms linked to the terms of ``texts`` (the evidence)."""
        asked = words(question)
        if not asked:
            return {}
        vocabulary: dict[str, str] = {}
        for text in texts:
            for term, word in words(text).items():
                vocabulary.setdefault(term, word)
        return link(asked, vocabulary, self.embed, self.threshold, self.per_term, self.every)


def bridge_for(embedding_model: str | None, embed: EmbedTexts) -> Bridge | None:
    """The bridge for a folder's bundled embedding model, or None (no threshold fitted
    for it, or a model of the user's)."""
    threshold = THRESHOLDS.get(embedding_model or "")
    return None if threshold is None else Bridge(embed, threshold)
