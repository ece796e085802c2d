"""The base of the postings keyword index: every term's postings over a set of rows,
built once, written as ``.npy`` files and memory-mapped when read.

A *row* is one chunk: its id, its length in terms, and its distinct terms with their
frequencies.  A term is named by a 64-bit hash of its folded form
(:func:`citeline.core.keywords.fold`, what FTS5 stores), so the base holds no
strings and opens without building a dictionary; two terms share a hash with a
chance of about one in 10^8 at a million distinct terms.

Rows are kept in chunk id order (a row's *position*); postings are grouped by term
(``hashes`` sorted, ``starts[i]`` where term ``i``'s postings begin) and, within a
term, by position.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citeline.core.keywords import fold

TF_MAX = np.iinfo(np.uint16).max  # a term more frequent in one chunk counts this often

Ids = npt.NDArray[np.int64]
Hashes = npt.NDArray[np.uint64]
Counts = npt.NDArray[np.uint16]
Lengths = npt.NDArray[np.int32]
Positions = npt.NDArray[np.int32]

_ARRAYS = ("ids", "lengths", "hashes", "starts", "rows", "tfs")


@lru_cache(maxsize=1 << 20)
def term_hash(term: str) -> int:
    """The 64-bit name of a folded term."""
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


_NAMES: dict[str, int] = {}  # a term as stored (not folded) -> the name of its folded form
_NAMES_MAX = 1 << 21


def _name(term: str) -> int:
    if len(_NAMES) >= _NAMES_MAX:
        _NAMES.clear()
    name = _NAMES[term] = term_hash(fold(term))
    return name


def parse(terms: str) -> tuple[list[int], list[int], int]:
    """A chunk's space-separated terms (repeats are frequency), folded as FTS5 folds
    them: (distinct term names, their frequencies, the chunk's length)."""
    counts = Counter(terms.split())
    names = _NAMES
    hashes = [names[t] if t in names else _name(t) for t in counts]
    tfs = list(counts.values())
    if len(set(hashes)) < len(hashes):  # two spellings of one folded term (café, cafe)
        merged: Counter[int] = Counter()
        for name, n in zip(hashes, tfs, strict=True):
            merged[name] += n
        hashes, tfs = list(merged), list(merged.values())
    return hashes, tfs, counts.total()


def frequencies(tfs: npt.ArrayLike) -> Counts:
    """Term frequencies as stored: at most :data:`TF_MAX`."""
    tfs = np.asarray(tfs)
    if tfs.dtype == np.uint16:
        return tfs
    return np.minimum(tfs.astype(np.int64), TF_MAX).astype(np.uint16)


@dataclass(frozen=True)
class Row:
    """One chunk's terms: distinct term names, their frequencies, its length."""

    hashes: Hashes
    tfs: Counts
    length: int

    @classmethod
    def parse(cls, terms: str) -> Row:
        hashes, tfs, length = parse(terms)
        return cls(np.asarray(hashes, dtype=np.uint64), frequencies(tfs), length)


@dataclass(frozen=True)
class Base:
    ids: Ids  # sorted chunk ids: the row at each position
    lengths: Lengths  # each row's length in terms
    hashes: Hashes  # sorted term hashes
    starts: Ids  # len(hashes) + 1: where each term's postings begin
    rows: Positions  # the postings' row positions, grouped by term
    tfs: Counts  # the postings' term frequencies

    def __len__(self) -> int:
        return len(self.ids)

    def postings(self, term: int) -> tuple[Positions, Counts]:
        """The (positions, frequencies) of one term's postings."""
        at = int(np.searchsorted(self.hashes, np.uint64(term)))
        if at == len(self.hashes) or int(self.hashes[at]) != term:
            return _NO_ROWS, _NO_TFS
        begin, end = int(self.starts[at]), int(self.starts[at + 1])
        return self.rows[begin:end], self.tfs[begin:end]

    def positions(self, ids: Ids) -> Positions:
        """Each id's position, or -1 for an id the base does not hold."""
        at = np.searchsorted(self.ids, ids)
        found = at < len(self.ids)
        found[found] = self.ids[at[found]] == ids[found]
        return np.where(found, at, -1).astype(np.int32)

    def posting_hashes(self) -> Hashes:
        """The term hash of every posting (for rebuilding)."""
        return np.repeat(self.hashes, np.diff(self.starts))


_NO_ROWS: Positions = np.zeros(0, dtype=np.int32)
_NO_TFS: Counts = np.zeros(0, dtype=np.uint16)


def empty() -> Base:
    none = np.zeros(0, np.int64)
    return build(none, none, none, np.zeros(0, np.uint64), np.zeros(0, np.uint16))


def build(
    ids: npt.ArrayLike,
    lengths: npt.ArrayLike,
    sizes: npt.ArrayLike,
    hashes: npt.ArrayLike,
    tfs: npt.ArrayLike,
) -> Base:
    """A base over rows given by id, length and number of distinct terms, and their
    terms' (name, frequency) pairs row after row."""
    ids = np.asarray(ids, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    position = np.empty(len(ids), dtype=np.int32)
    position[order] = np.arange(len(ids), dtype=np.int32)
    rows = np.repeat(position, np.asarray(sizes, dtype=np.int64))
    all_hashes = np.asarray(hashes, dtype=np.uint64)
    if np.all(order[1:] > order[:-1]):  # rows given in id order: they stay in order
        by_term = np.argsort(all_hashes, kind="stable")
    else:
        by_term = np.lexsort((rows, all_hashes))
    rows = rows[by_term]
    all_tfs = frequencies(tfs)[by_term]
    all_hashes = all_hashes[by_term]
    del by_term
    boundary = np.ones(len(all_hashes), dtype=bool)  # where each term's postings begin
    boundary[1:] = all_hashes[1:] != all_hashes[:-1]
    first = np.flatnonzero(boundary)
    return Base(
        ids=ids[order],
        lengths=np.asarray(lengths, dtype=np.int32)[order],
        hashes=all_hashes[first],
        starts=np.append(first, len(all_hashes)).astype(np.int64),
        rows=rows,
        tfs=all_tfs,
    )


def write(base: Base, folder: Path, prefix: str) -> None:
    """``<prefix>.<array>.npy`` for each array."""
    for name in _ARRAYS:
        np.save(folder / f"{prefix}.{name}.npy", getattr(base, name))


def read(folder: Path, prefix: str) -> Base:
    """The base written as ``prefix``, memory-mapped: nothing is read until searched."""
    arrays = {}
    for name in _ARRAYS:
        path = folder / f"{prefix}.{name}.npy"
        if not path.is_file():
            raise FileNotFoundError(f"keyword index file {path} is missing")
        # a plain array over the mapping: numpy's memmap class slows every slice
        arrays[name] = np.load(path, mmap_mode="r").view(np.ndarray)
    base = Base(**arrays)
    if not (
        len(base.lengths) == len(base.ids)
        and len(base.starts) == len(base.hashes) + 1
        and len(base.rows) == len(base.tfs) == int(base.starts[-1])
    ):
        raise ValueError(f"keyword index {folder / prefix} is inconsistent")
    return base
