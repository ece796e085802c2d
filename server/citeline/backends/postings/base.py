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
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citeline.backends import segments
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
_NO_HASHES: Hashes = np.zeros(0, dtype=np.uint64)
MERGE_BLOCK = 1 << 18  # postings of the old base merged at a time into a new one


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


def write_merged(
    base: Base,
    dead: npt.NDArray[np.bool_],
    added: Mapping[int, Row],
    folder: Path,
    prefix: str,
    *,
    block: int = MERGE_BLOCK,
) -> int:
    """The base :func:`build` makes of ``base``'s rows not ``dead`` and the ``added``
    ones, written as :func:`write` writes it without holding every posting in memory at
    once; the number of rows (nothing is written for none).

    The postings are merged a range of terms at a time: ``base``'s (memory-mapped)
    postings of about ``block`` terms' worth, their rows given their new positions,
    with the added rows' postings of the same terms, each range sorted by term and
    position and appended to the files.  What grows with the whole base is its
    per-row arrays and its distinct terms (the ``hashes`` and ``starts`` written
    last); the postings' own arrays, ``rows`` and ``tfs``, go out a block at a time."""
    keep = ~np.asarray(dead, dtype=bool)
    fresh = list(added.values())
    live = int(np.count_nonzero(keep))
    ids = np.concatenate([np.asarray(base.ids)[keep], np.fromiter(added, np.int64, len(added))])
    if not len(ids):
        return 0
    order = np.argsort(ids, kind="stable")
    position = np.empty(len(ids), dtype=np.int32)
    position[order] = np.arange(len(ids), dtype=np.int32)
    moved = np.full(len(base), -1, dtype=np.int32)  # a base row's new position (-1: dead)
    moved[keep] = position[:live]
    lengths = np.concatenate(
        [np.asarray(base.lengths)[keep], np.fromiter((r.length for r in fresh), np.int32)]
    ).astype(np.int32)
    # The added rows' postings, sorted by term then position (a tenth of the base or so).
    new_hashes = np.concatenate([_NO_HASHES, *(r.hashes for r in fresh)])
    new_rows = np.repeat(position[live:], [len(r.hashes) for r in fresh]).astype(np.int32)
    new_tfs = np.concatenate([_NO_TFS, *(r.tfs for r in fresh)])
    by_term = np.lexsort((new_rows, new_hashes))
    new_hashes, new_rows, new_tfs = new_hashes[by_term], new_rows[by_term], new_tfs[by_term]
    del by_term
    starts = np.asarray(base.starts)
    cuts = _term_cuts(starts, block)
    total = len(new_hashes)
    for lo, hi in itertools.pairwise(cuts):  # the base's live postings, counted first
        total += int(np.count_nonzero(moved[base.rows[starts[lo] : starts[hi]]] >= 0))
    terms: list[Hashes] = []
    firsts: list[Ids] = []
    written = 0
    rows_file = segments.NpyWriter(folder / f"{prefix}.rows.npy", np.dtype(np.int32), (total,))
    tfs_file = segments.NpyWriter(folder / f"{prefix}.tfs.npy", np.dtype(np.uint16), (total,))
    with rows_file, tfs_file:
        taken = 0  # the added postings written so far
        for n, (lo, hi) in enumerate(itertools.pairwise(cuts)):
            begin, end = int(starts[lo]), int(starts[hi])
            rows = moved[base.rows[begin:end]]
            hashes = np.repeat(base.hashes[lo:hi], np.diff(starts[lo : hi + 1]))
            alive = rows >= 0
            last = n == len(cuts) - 2
            upto = (
                len(new_hashes)
                if last
                else int(np.searchsorted(new_hashes, base.hashes[hi], side="left"))
            )
            hashes = np.concatenate([hashes[alive], new_hashes[taken:upto]])
            rows = np.concatenate([rows[alive], new_rows[taken:upto]])
            tfs = np.concatenate([np.asarray(base.tfs[begin:end])[alive], new_tfs[taken:upto]])
            taken = upto
            sorted_by = np.lexsort((rows, hashes))
            hashes, rows, tfs = hashes[sorted_by], rows[sorted_by], tfs[sorted_by]
            if len(hashes):
                boundary = np.ones(len(hashes), dtype=bool)
                boundary[1:] = hashes[1:] != hashes[:-1]
                first = np.flatnonzero(boundary)
                terms.append(hashes[first])
                firsts.append(first + written)
            rows_file.write(rows)
            tfs_file.write(tfs)
            written += len(hashes)
    np.save(folder / f"{prefix}.ids.npy", ids[order])
    np.save(folder / f"{prefix}.lengths.npy", lengths[order])
    np.save(folder / f"{prefix}.hashes.npy", np.concatenate([_NO_HASHES, *terms]))
    np.save(
        folder / f"{prefix}.starts.npy",
        np.append(np.concatenate([np.zeros(0, np.int64), *firsts]), written).astype(np.int64),
    )
    return len(ids)


def _term_cuts(starts: Ids, block: int) -> list[int]:
    """Term indexes that cut a base's terms into ranges of about ``block`` postings
    (each range at least one term; none for a base without terms but the one range)."""
    terms = len(starts) - 1
    if terms <= 0:
        return [0, 0]
    wanted = np.arange(block, int(starts[-1]), block, dtype=np.int64)
    inner = np.unique(np.searchsorted(starts, wanted, side="right") - 1)
    inner = inner[(inner > 0) & (inner < terms)]
    return [0, *inner.tolist(), terms]


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
