"""The :class:`~citeline.core.keywords.KeywordIndex` the embedded index searches:
BM25 over postings held in numpy arrays, a base and a log.

FTS5 computes ``bm25()`` for every row that matches before it can sort, about 1.5 µs
a row: a query of common words at 100,000 chunks cost 55–80 ms.  Here a query term's
postings are one slice of a memory-mapped array, scored for all its rows at once
(``idf·tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))``, FTS5's formula and constants,
:mod:`citeline.core.keywords`) and summed per row with ``bincount``; only the best
``k`` are sorted.  Scores equal FTS5's to rounding, so the store's FTS5 table and this
index rank alike (``tests/backends/postings``).

Like the vector index (``backends/faiss/index.py``) it is saved as a *base*
(``base.py``: written once, memory-mapped) and a *log* of the rows added and removed
since, appended on save; loading maps the base and replays the log into a small
*delta* (rows held as arrays) and *tombstones* (base rows removed).  When the log holds
more than :data:`LOG_SHARE` of the base (at least :data:`LOG_MIN` rows) a save writes
a new base.  Files, for ``save(path)``: the head ``path`` (``backends/segments.py``)
and ``<path>.<token>.<array>.npy`` and ``.log``.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.backends import segments
from citeline.backends.postings import base as bases
from citeline.backends.postings.base import Base, Row, term_hash
from citeline.core.keywords import K1, B, bm25_idf, fold

log = logging.getLogger(__name__)

LOG_MIN = 4096
LOG_SHARE = 0.10
_FEW = 64  # ids removed one by one below this many
_BUILD_BATCH = 1 << 20  # postings gathered as Python lists before they become arrays

DELTA_SEGMENTS = 16  # segments of the delta before they are joined into one
_FORMAT = "citeline-postings/1"
_ADD = struct.Struct("<cqii")  # b"A", chunk id, length, distinct terms; hashes, tfs
_REMOVE = struct.Struct("<cI")  # b"R", count; ids (int64)


@dataclass
class _Delta:
    """Rows added since the base, as flat arrays (made when a search needs them): one
    segment of the delta.  Rows added while the delta is in use become a new segment
    of their own, so a big file taken up a slice at a time, with searches between the
    slices, costs each search its new slice's rows, not every row again."""

    ids: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    hashes: npt.NDArray[np.uint64]
    rows: npt.NDArray[np.int64]  # each posting's index into ids
    tfs: npt.NDArray[np.uint16]


class PostingsKeywordIndex(segments.Segmented):
    """BM25 over a memory-mapped base, plus what changed since: delta rows and
    tombstones.  Use from one thread at a time."""

    def __init__(self) -> None:
        self._base = bases.empty()
        self._dead = np.zeros(0, dtype=bool)  # base rows removed since the base was written
        self._dead_count = 0
        self._added: dict[int, Row] = {}  # rows added since the base
        self._delta: list[_Delta] | None = None  # segments (None: made again when needed)
        self._appended: list[int] = []  # ids added since the segments were made
        self._rows = 0
        self._length = 0  # the live rows' lengths, summed
        self._pending: list[bytes] = []  # log records not yet saved
        self._head: dict[str, Any] | None = None
        self._log_entries = 0

    @classmethod
    def build(cls, rows: Iterable[tuple[int, str]]) -> PostingsKeywordIndex:
        """An index of (chunk id, space-separated terms) rows, with a base of them all."""
        ids: list[int] = []
        lengths: list[int] = []
        sizes: list[int] = []
        parts: list[tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint16]]] = []
        hashes: list[int] = []
        tfs: list[int] = []
        for chunk_id, terms in rows:
            names, counts, length = bases.parse(terms)
            ids.append(chunk_id)
            lengths.append(length)
            sizes.append(len(names))
            hashes.extend(names)
            tfs.extend(counts)
            if len(hashes) >= _BUILD_BATCH:  # as arrays: a tenth of the memory of lists
                parts.append((np.asarray(hashes, dtype=np.uint64), bases.frequencies(tfs)))
                hashes, tfs = [], []
        parts.append((np.asarray(hashes, dtype=np.uint64), bases.frequencies(tfs)))
        index = cls()
        index._set_base(
            bases.build(
                ids,
                lengths,
                sizes,
                np.concatenate([h for h, _ in parts]),
                np.concatenate([t for _, t in parts]),
            )
        )
        return index

    @classmethod
    def load(cls, path: Path) -> PostingsKeywordIndex:
        index = cls()
        index._restart(path, segments.read_head(path, _FORMAT, "keyword index"))
        return index

    def _set_base(self, base: Base) -> None:
        self._base = base
        self._dead = np.zeros(len(base), dtype=bool)
        self._dead_count = 0
        self._added, self._delta, self._appended = {}, None, []
        self._rows = len(base)
        self._length = int(np.sum(base.lengths, dtype=np.int64))

    def __len__(self) -> int:
        return self._rows

    # -- KeywordIndex: writing --------------------------------------------------------

    def add(self, chunk_id: int, terms: str) -> None:
        self.add_row(chunk_id, Row.parse(terms))

    def add_row(self, chunk_id: int, row: Row) -> None:
        """:meth:`add` with the terms parsed already (``Row.parse``): a big file's rows
        are parsed before it is committed, and added at once after."""
        self._add(int(chunk_id), row)
        self._pending.append(
            _ADD.pack(b"A", int(chunk_id), row.length, len(row.hashes))
            + row.hashes.tobytes()
            + row.tfs.tobytes()
        )
        self._log_entries += 1

    def _add(self, chunk_id: int, row: Row) -> None:
        self._remove_one(chunk_id)  # an id is held once
        self._added[chunk_id] = row
        if self._delta is not None:
            self._appended.append(chunk_id)
        self._rows += 1
        self._length += row.length

    def remove(self, ids: Sequence[int]) -> None:
        if not len(ids):
            return
        wanted = np.asarray(ids, dtype=np.int64)
        self._remove(wanted)
        self._pending.append(_REMOVE.pack(b"R", len(wanted)) + wanted.tobytes())
        self._log_entries += len(wanted)

    def _remove(self, ids: npt.NDArray[np.int64]) -> None:
        if len(ids) <= _FEW:  # a file's chunks, a replayed record: no arrays to build
            for chunk_id in ids.tolist():
                self._remove_one(chunk_id)
            return
        for chunk_id in ids.tolist():
            self._forget_added(chunk_id)
        positions = self._base.positions(ids)
        positions = positions[positions >= 0]
        self._kill(np.unique(positions[~self._dead[positions]]).tolist())

    def _remove_one(self, chunk_id: int) -> None:
        self._forget_added(chunk_id)
        ids = self._base.ids
        at = int(np.searchsorted(ids, chunk_id))
        if at < len(ids) and int(ids[at]) == chunk_id and not self._dead[at]:
            self._kill([at])

    def _forget_added(self, chunk_id: int) -> None:
        row = self._added.pop(chunk_id, None)
        if row is not None:
            self._delta, self._appended = None, []
            self._rows -= 1
            self._length -= row.length

    def _kill(self, positions: list[int]) -> None:
        """Tombstone base rows that are alive."""
        if positions:
            self._dead[positions] = True
            self._dead_count += len(positions)
            self._rows -= len(positions)
            self._length -= int(np.sum(self._base.lengths[positions], dtype=np.int64))

    # -- KeywordIndex: reading --------------------------------------------------------

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not terms or k <= 0 or not self._rows:
            return []
        average = self._length / self._rows
        base, parts = self._base, self._delta_parts()
        base_rows: list[npt.NDArray[np.int32]] = []
        base_weights: list[npt.NDArray[np.float64]] = []
        delta_scores = [np.zeros(len(delta.ids), dtype=np.float64) for delta in parts]
        for term in (fold(t) for t in terms):  # a repeated term counts again, as in FTS5
            rows, tfs, fresh = self._postings(term_hash(term), parts)
            frequency = len(rows) + sum(len(f) for f in fresh)
            if not frequency:
                continue
            idf = bm25_idf(self._rows, frequency)
            if len(rows):
                base_rows.append(rows)
                base_weights.append(_weights(idf, tfs, base.lengths[rows], average))
            for delta, found_here, scores_here in zip(parts, fresh, delta_scores, strict=True):
                if len(found_here):
                    at = delta.rows[found_here]
                    weights = _weights(idf, delta.tfs[found_here], delta.lengths[at], average)
                    np.add.at(scores_here, at, weights)
        found: list[tuple[int, float]] = []
        if base_rows:
            scores: npt.NDArray[np.float64] = np.bincount(
                np.concatenate(base_rows), np.concatenate(base_weights), minlength=len(base)
            ).astype(np.float64, copy=False)
            found.extend(_best(scores, base.ids, k))
        for delta, scores_here in zip(parts, delta_scores, strict=True):
            if len(delta.ids):
                found.extend(_best(scores_here, delta.ids, k))
        found.sort(key=lambda item: (-item[1], item[0]))
        return found[:k]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        parts = self._delta_parts()
        out: dict[str, int] = {}
        for term in terms:
            rows, _, fresh = self._postings(term_hash(fold(term)), parts)
            count = len(rows) + sum(len(f) for f in fresh)
            if count:
                out[term] = count
        return self._rows, out

    def _postings(
        self, term: int, parts: list[_Delta]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint16], list[npt.NDArray[np.intp]]]:
        """A term's live base postings (positions, frequencies) and its postings in
        each segment of the delta."""
        rows, tfs = self._base.postings(term)
        if self._dead_count and len(rows):
            alive = ~self._dead[rows]
            rows, tfs = rows[alive], tfs[alive]
        wanted = np.uint64(term)
        fresh = [np.flatnonzero(d.hashes == wanted) if len(d.hashes) else _NONE for d in parts]
        return rows, tfs, fresh

    def _delta_parts(self) -> list[_Delta]:
        if self._delta is None:
            self._delta = [_segment(list(self._added.items()))] if self._added else []
            self._appended = []
        elif self._appended:
            self._delta.append(_segment([(i, self._added[i]) for i in self._appended]))
            self._appended = []
            if len(self._delta) > DELTA_SEGMENTS:
                self._delta = [_joined(self._delta)]
        return self._delta

    # -- saving -----------------------------------------------------------------------

    def _head_on_disk(self, path: Path) -> dict[str, Any] | None:
        try:
            return segments.read_head(path, _FORMAT, "keyword index")
        except (OSError, ValueError):
            return None

    def _records(self) -> bytes:
        return b"".join(self._pending)

    def _compaction_due(self) -> bool:
        return self._log_entries > max(LOG_MIN, LOG_SHARE * len(self._base))

    def _snapshot(
        self, between: Callable[[], None] | None = None
    ) -> tuple[Base, npt.NDArray[np.bool_], dict[int, Row]]:
        """The base (never modified), its tombstones and the rows added since (copies:
        a row itself is never modified; a few ms for a big file's rows, no ``between``)."""
        return self._base, self._dead.copy(), dict(self._added)

    def _write_files(
        self,
        path: Path,
        snapshot: tuple[Base, npt.NDArray[np.bool_], dict[int, Row]],
        token: str,
        *,
        beside: bool,
    ) -> dict[str, Any]:
        started = time.perf_counter()
        prefix = f"{path.name}.{token}"
        rows = bases.write_merged(*snapshot, path.parent, prefix)  # a block at a time
        head: dict[str, Any] = {
            "format": _FORMAT,
            "token": token,
            "base": prefix if rows else None,
            "rows": rows,
            "log": f"{prefix}.log",
        }
        with open(path.parent / head["log"], "wb") as handle:
            head["log_bytes"] = handle.tell()
        log.info(
            "keyword index: wrote a base of %d chunks in %.2f s%s",
            rows,
            time.perf_counter() - started,
            " beside the index's work" if beside else "",
        )
        return head

    def _open_base(self, path: Path, head: dict[str, Any]) -> Base:
        return bases.read(path.parent, str(head["base"])) if head.get("base") else bases.empty()

    def _restart(self, path: Path, head: dict[str, Any], base: Any = None) -> None:
        self._set_base(base if base is not None else self._open_base(path, head))
        self._pending, self._log_entries = [], 0
        self._replay(path.parent / str(head["log"]), int(head["log_bytes"]))
        self._head = head

    def _replay(self, log_path: Path, length: int) -> None:
        """The log's records in order.  The base rows they tombstone are found once, at
        the end: every id a record names (added again or removed) leaves the base, in
        whatever order, so only the added rows follow the records one by one (a log of
        2,240 records: 1,483 searches of the base's ids before, one now)."""
        with open(log_path, "rb") as handle:
            data = handle.read(length)
        if len(data) != length:
            raise ValueError(f"keyword log {log_path} is shorter than its head says")
        at = 0
        named: list[int] = []  # every id a record names
        added = self._added
        try:
            while at < length:
                op = data[at : at + 1]
                if op == b"A":
                    _, chunk_id, size, count = _ADD.unpack_from(data, at)
                    at += _ADD.size
                    hashes = np.frombuffer(data, dtype=np.uint64, count=count, offset=at)
                    at += 8 * count
                    tfs = np.frombuffer(data, dtype=np.uint16, count=count, offset=at)
                    at += 2 * count
                    self._forget_added(chunk_id)  # an id is held once
                    added[chunk_id] = Row(hashes, tfs, size)
                    self._rows += 1
                    self._length += size
                    named.append(chunk_id)
                    self._log_entries += 1
                elif op == b"R":
                    _, count = _REMOVE.unpack_from(data, at)
                    at += _REMOVE.size
                    ids = np.frombuffer(data, dtype=np.int64, count=count, offset=at).tolist()
                    at += 8 * count
                    for chunk_id in ids:
                        self._forget_added(chunk_id)
                    named.extend(ids)
                    self._log_entries += count
                else:
                    raise ValueError(f"unknown record {op!r}")
        except (struct.error, ValueError) as exc:
            raise ValueError(f"keyword log {log_path} is damaged: {exc}") from exc
        if named:
            positions = self._base.positions(np.asarray(named, dtype=np.int64))
            positions = positions[positions >= 0]
            self._kill(np.unique(positions[~self._dead[positions]]).tolist())


_NONE: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_NO_HASHES: npt.NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)
_NO_TFS: npt.NDArray[np.uint16] = np.zeros(0, dtype=np.uint16)


def _weights(
    idf: float, tfs: npt.NDArray[Any], lengths: npt.NDArray[Any], average: float
) -> npt.NDArray[np.float64]:
    """Each posting's share of the BM25 score (FTS5's formula)."""
    tf = tfs.astype(np.float64)
    norm = K1 * (1 - B + B * lengths.astype(np.float64) / average)
    return idf * tf * (K1 + 1) / (tf + norm)


def _best(
    scores: npt.NDArray[np.float64], ids: npt.NDArray[np.int64], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best (id, score) of the rows that scored (any match scores above 0)."""
    matched = np.flatnonzero(scores > 0)
    if len(matched) > k:
        # every row tied with the k-th best is kept, so ties break by id afterwards
        kth = np.partition(scores[matched], len(matched) - k)[len(matched) - k]
        matched = matched[scores[matched] >= kth]
    return [(int(i), float(s)) for i, s in zip(ids[matched], scores[matched], strict=True)]


def _segment(items: list[tuple[int, Row]]) -> _Delta:
    rows = [row for _, row in items]
    sizes = [len(r.hashes) for r in rows]
    return _Delta(
        ids=np.fromiter((i for i, _ in items), dtype=np.int64, count=len(items)),
        lengths=np.asarray([r.length for r in rows], dtype=np.float64),
        hashes=np.concatenate([r.hashes for r in rows]) if rows else _NO_HASHES,
        rows=np.repeat(np.arange(len(rows), dtype=np.int64), sizes),
        tfs=np.concatenate([r.tfs for r in rows]) if rows else _NO_TFS,
    )


def _joined(parts: list[_Delta]) -> _Delta:
    """One segment of several: their arrays end to end, each one's rows shifted."""
    offsets = np.cumsum([0] + [len(d.ids) for d in parts[:-1]])
    return _Delta(
        ids=np.concatenate([d.ids for d in parts]),
        lengths=np.concatenate([d.lengths for d in parts]),
        hashes=np.concatenate([d.hashes for d in parts]),
        rows=np.concatenate([d.rows + int(o) for d, o in zip(parts, offsets, strict=True)]),
        tfs=np.concatenate([d.tfs for d in parts]),
    )
