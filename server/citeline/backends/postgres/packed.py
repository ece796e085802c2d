"""The packed lists in the reader: a term's postings decoded once, kept between
searches while the collection's lists are the ones they came from, and every
posting of a query's terms summed in numpy.

A packed list (``keyword_packed``: chunk ids, frequencies and lengths, big-endian
int8 / int4 / int4) is decoded into native arrays: the ids, each posting's frequency
as a code into the term's few distinct frequencies, the lengths, and the BM25
denominators at the collection's current average length (made again when the average
moves).  :class:`PackedCache` keeps the lists of the terms searched, the least
recently used dropped beyond :data:`CACHE_POSTINGS` postings, all of them tagged with
the collection's *version* of its lists (``keyword_stats.packed_version``: a trigger
on ``keyword_packed`` sets it to the writing transaction's id at every change,
whichever version of Citeline writes), so a search that reads another version reads
its terms' lists again.

:func:`best` is the full BM25 sum, each share computed as the exhaustive SQL computes
it (the same bits) and a chunk's shares added in the query's order, as the SQL sum
adds them; the chunks removed since the lists were made are left out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from citeline.core.keywords import K1, B

CACHE_POSTINGS = 5_000_000  # postings kept between searches (about 19 bytes each)

_NO_IDS = np.zeros(0, np.int64)


class PackedList:
    """One term's postings (or the postings of the chunks added since the lists were
    made), decoded."""

    __slots__ = ("_average", "_codes", "_denominator", "_lengths", "_values", "ids")

    def __init__(self, ids: np.ndarray, tfs: np.ndarray, lengths: np.ndarray) -> None:
        self.ids = ids.astype(np.int64)
        present = np.flatnonzero(np.bincount(tfs)) if len(tfs) else np.zeros(0, np.int64)
        code = np.zeros(int(present[-1]) + 1 if len(present) else 1, _code_type(len(present)))
        code[present] = np.arange(len(present))
        self._codes = code[tfs]
        self._values = present.astype(np.float64)  # the distinct frequencies
        top = int(lengths.max()) if len(lengths) else 0
        self._lengths = lengths.astype(np.uint16 if top < 2**16 else np.int32)
        self._average = float("nan")
        self._denominator = np.zeros(0)

    @classmethod
    def decode(cls, ids: bytes, tfs: bytes, lengths: bytes) -> PackedList:
        """From ``keyword_packed``'s three ``bytea`` values."""
        return cls(
            np.frombuffer(ids, ">i8"), np.frombuffer(tfs, ">i4"), np.frombuffer(lengths, ">i4")
        )

    def __len__(self) -> int:
        return len(self.ids)

    def shares(self, idf: float, average: float) -> np.ndarray:
        """Each posting's share ``idf·tf·(k1+1) / (tf + k1·((1−b) + b·len/avg))``, the
        operations in the exhaustive SQL's order: the same bits."""
        if average != self._average:
            denominator = B * self._lengths.astype(np.float64)
            denominator /= average
            denominator += 1 - B
            denominator *= K1
            denominator += self._values[self._codes]
            self._denominator, self._average = denominator, average
        numerator = idf * self._values  # per distinct frequency: what idf * tf gives each
        numerator *= K1 + 1
        share: np.ndarray = numerator[self._codes]
        share /= self._denominator
        return share

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self._codes, self._lengths, self._denominator))


def _code_type(distinct: int) -> type[np.unsignedinteger]:
    return np.uint8 if distinct <= 2**8 else np.uint16 if distinct <= 2**16 else np.uint32


class PackedCache:
    """The decoded lists of the terms searched, for one version of a collection's
    packed lists; the least recently used dropped beyond ``limit`` postings."""

    def __init__(self, limit: int | None = None) -> None:
        self.version: int | None = None
        self._limit = CACHE_POSTINGS if limit is None else limit
        self._lists: OrderedDict[str, PackedList] = OrderedDict()
        self._held = 0

    def __len__(self) -> int:
        return len(self._lists)

    def __contains__(self, term: object) -> bool:
        return term in self._lists

    @property
    def postings(self) -> int:
        return self._held

    def clear(self, version: int | None = None) -> None:
        """Nothing kept; the lists to come are of ``version`` (None: keep none)."""
        self._lists.clear()
        self._held = 0
        self.version = version

    def missing(self, terms: Sequence[str]) -> list[str]:
        return [t for t in terms if t not in self._lists]

    def get(self, term: str) -> PackedList | None:
        found = self._lists.get(term)
        if found is not None:
            self._lists.move_to_end(term)
        return found

    def put(self, term: str, packed: PackedList) -> None:
        if self.version is None:
            return
        old = self._lists.pop(term, None)
        self._held += len(packed) - (len(old) if old is not None else 0)
        self._lists[term] = packed

    def trim(self) -> None:
        """Drop the least recently used lists while more than the limit is held."""
        while self._held > self._limit and self._lists:
            _, dropped = self._lists.popitem(last=False)
            self._held -= len(dropped)


def best(
    parts: Sequence[tuple[float, Sequence[PackedList]]],
    removed: np.ndarray,
    average: float,
    k: int,
) -> list[tuple[int, float]]:
    """The best ``k`` (id, score) by the full sum: ``parts`` holds, per query term in
    the query's order (a repeated term again), its IDF and its lists (the packed list
    and the postings added since: a chunk is in one of them at most); ``removed``, the
    chunks left out."""
    lists = [p for _, packs in parts for p in packs if len(p)]
    held = sum(len(p) for p in lists)
    if not held:
        return []
    top = max(int(p.ids[-1]) for p in lists)  # (each list's ids ascending)
    ids_of = None  # a score slot per id up to the largest, else per id met
    if top >= 8 * held + 4096:
        ids_of = np.unique(np.concatenate([p.ids for p in lists]))
    at: list[np.ndarray] = []
    shares: list[np.ndarray] = []
    for idf, packs in parts:
        for p in packs:
            if len(p):
                at.append(p.ids if ids_of is None else np.searchsorted(ids_of, p.ids))
                shares.append(p.shares(idf, average))
    # One pass in the query's order: a chunk's shares are added as the SQL sum adds them.
    scores = np.bincount(
        np.concatenate(at),
        weights=np.concatenate(shares),
        minlength=top + 1 if ids_of is None else len(ids_of),
    )
    if ids_of is None:
        scores[removed[removed <= top]] = 0.0
    else:
        slot = np.searchsorted(ids_of, removed)
        inside = slot < len(ids_of)
        slot, kept = slot[inside], removed[inside]
        scores[slot[ids_of[slot] == kept]] = 0.0
    met = np.flatnonzero(scores >= _least_kth(scores, at, k))
    met = met[scores[met] > 0]
    if len(met) > k:
        kth = np.partition(scores[met], len(met) - k)[len(met) - k]
        met = met[scores[met] >= kth]
    chunk_ids = met if ids_of is None else ids_of[met]
    order = np.lexsort((chunk_ids, -scores[met]))[:k]
    return [(int(chunk_ids[i]), float(scores[met[i]])) for i in order]


def _least_kth(scores: np.ndarray, at: list[np.ndarray], k: int) -> float:
    """A score the k-th best reaches: the k-th best among the chunks of the shortest
    lists (distinct, at least 4k of them when there are), so that only the chunks at
    or above it are ranked; 0 when those hold fewer than k chunks."""
    order = sorted(range(len(at)), key=lambda i: len(at[i]))
    picked: list[np.ndarray] = []
    held = 0
    for i in order:
        picked.append(at[i])
        held += len(at[i])
        if held >= 4 * k:
            break
    some = np.unique(np.concatenate(picked)) if picked else _NO_IDS
    some = some[scores[some] > 0]
    if len(some) < k:
        return 0.0
    return float(np.partition(scores[some], len(some) - k)[len(some) - k])
