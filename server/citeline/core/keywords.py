"""Keyword terms for BM25 (English words, exact identifiers, CJK text), and the
:class:`KeywordIndex` protocol that scores them.

The store's full-text index (SQLite FTS5) receives text that this module has
already turned into terms, so its own tokenizer only has to split on spaces:

- Latin-script words are lower-cased, stemmed (Snowball English) and stripped of
  common stop words, so "indexing" matches "indexed".
- Identifiers joined by ``-``, ``_``, ``.``, ``/`` or ``:`` (``E-1024``,
  ``--no-cache-dir``, ``pg_hba.conf``) give their parts *and* one joined term
  (``e1024``, ``nocachedir``, ``pghbaconf``), so the exact identifier is a rare,
  highly weighted term while its parts still match.
- Chinese, Japanese and Korean runs become overlapping character bigrams (a lone
  character stays a unigram): keyword search works without a word segmenter.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import snowballstemmer

from citeline.core.scripts import CJK_RUN

VERSION = "kw1"

# A word, or words joined by identifier punctuation.
_TOKEN = re.compile(r"[^\W_]+(?:[-_./:]+[^\W_]+)*", re.UNICODE)
_PART = re.compile(r"[^\W_]+", re.UNICODE)

# Lucene's English stop words (what BM25 baselines use).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _latin_terms(text: str, out: list[str]) -> None:
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        # Most tokens are one part: isalnum is the class [^\W_] of every character.
        parts = [token] if token.isalnum() else _PART.findall(token)
        if len(parts) > 1:
            out.append("".join(parts))
        for part in parts:
            if part in STOP_WORDS:
                continue
            out.append(_stem(part) if part.isalpha() else part)


def _cjk_terms(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
        return
    out.extend(run[i : i + 2] for i in range(len(run) - 1))


def terms(text: str) -> list[str]:
    """The keyword terms of a text, in order (repeats kept: they are term frequency)."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    position = 0
    for match in CJK_RUN.finditer(text):
        _latin_terms(text[position : match.start()], out)
        _cjk_terms(match.group(0), out)
        position = match.end()
    _latin_terms(text[position:], out)
    return out


_IDENTIFIER_SHAPE = re.compile(r"[._/:\d]|[a-z][A-Z]|^[A-Z]{2,}$")


def identifier_terms(text: str) -> set[str]:
    """The terms of a text's identifiers: tokens with a dot, underscore, slash,
    colon or digit, camelCase, or in capitals (``core.sshCommand``, ``SHA-256``,
    ``ARG_MAX``, ``LFS``), as their keyword term (``coresshcommand``)."""
    out: set[str] = set()
    for match in _TOKEN.finditer(unicodedata.normalize("NFKC", text)):
        token = match.group(0)
        if not _IDENTIFIER_SHAPE.search(token):
            continue
        parts = [p.lower() for p in _PART.findall(token)]
        if len(parts) > 1:
            out.add("".join(parts))
        elif parts and parts[0] not in STOP_WORDS:
            out.add(_stem(parts[0]) if parts[0].isalpha() else parts[0])
    return out


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(terms(text)))


# BM25 as SQLite FTS5's bm25() computes it: every keyword backend scores with these.
K1 = 1.2
B = 0.75


def bm25_idf(total: int, frequency: int) -> float:
    """FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), floored just above zero."""
    return max(1e-6, math.log((total - frequency + 0.5) / (frequency + 0.5)))


def bm25_weight(tf: int, length: int, average: float) -> float:
    """A posting's BM25 share before its term's IDF: ``tf·(k1+1) / (tf + k1·(1 − b +
    b·len/avglen))``, below ``k1 + 1`` whatever the frequency and length."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


def _is_latin(char: str) -> bool:
    code = ord(char)
    return code < 0x250 or 0x1E00 <= code < 0x1F00


def fold(term: str) -> str:
    """A term as FTS5's ``unicode61`` tokenizer stores it: Latin letters without
    their diacritics (``café`` → ``cafe``); everything else as it is.  Every keyword
    backend compares folded terms, so ``café`` and ``cafe`` are one term in each."""
    if term.isascii():
        return term
    out: list[str] = []
    for char in unicodedata.normalize("NFD", term):
        if unicodedata.combining(char) and out and _is_latin(out[-1]):
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


class KeywordIndex(Protocol):
    """BM25 over chunks' keyword terms (made by :func:`terms`), keyed by chunk id.

    Scores follow SQLite FTS5's ``bm25()`` (k1 = 1.2, b = 0.75; IDF
    ``log((N - n + 0.5) / (n + 0.5))`` floored just above zero), higher is better, so
    a backend's scores are comparable with the embedded one's.  The embedded
    implementation is FTS5 (``citeline.backends.sqlite.fts5``), written in the same
    transaction as its chunks.
    """

    def add(self, chunk_id: int, terms: str) -> None:
        """Index a chunk's space-separated terms (repeats are term frequency)."""
        ...

    def remove(self, ids: Sequence[int]) -> None: ...

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        """(chunk id, BM25) of the ``k`` best chunks holding any of ``terms``, best first."""
        ...

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(number of chunks, {term: chunks holding it}) for the given terms."""
        ...
