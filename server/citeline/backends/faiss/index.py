"""The :class:`~citeline.core.vectors.VectorIndex` on FAISS: a base and a log.

Vector ids are chunk ids; vectors are L2-normalised, so inner product is cosine.

What is saved is a *base* (``kinds.Base``: one FAISS index of the kind the size calls
for, never modified once written) and a *log* of what was added and removed since.
Loading maps the base into memory (nothing is read until a search needs it) and
replays the log: added vectors go to a small exact *delta* index, removed base
vectors become *tombstones* that base searches skip (an ``IDSelector``).  A search
asks both and merges.  So saving an edit appends a few kilobytes instead of
writing the whole index, opening a folder costs milliseconds at 100k vectors, and
HNSW, which cannot remove ids, can be used.  When the log holds more than
:data:`LOG_SHARE` of the base (at least :data:`LOG_MIN` entries), or the size calls
for another kind, :meth:`FaissVectorIndex.save` writes a new base (*compaction*).
A small index (under :data:`LOG_MIN` vectors, flat) lives in its log alone.

Files, for ``save(path)``: ``path`` itself is a small JSON *head* naming the base
and the log and how many log bytes are valid (replaced atomically, so a reader
sees the old or the new index); ``<path>.<token>.base``, ``.ids.npy``,
``.vectors.npy`` (flat-fp16, ivf-sq8) and ``.log`` belong to it.  A new base gets a new
token, and the files of older tokens are deleted once the head no longer names
them (a process that has them mapped keeps reading them).  Before appending, a
save checks that the head on disk is still the one it loaded or wrote; when
another process replaced it, the save writes a whole new base instead.
"""

from __future__ import annotations

import contextlib
import logging
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from citeline.backends import segments
from citeline.backends.faiss import kinds
from citeline.core.embedding import FloatMatrix
from citeline.core.vectors import IdArray

log = logging.getLogger(__name__)

LOG_MIN = 4096
LOG_SHARE = 0.10
BLOCK_ROWS = 8192  # rows read, added and written at a time when a new base is written
SNAPSHOT_ROWS = 4096  # delta rows copied between two calls of ``between`` for a new base

_FORMAT = "citeline-vectors/1"
_ADD, _REMOVE = b"A", b"R"
_RECORD = struct.Struct("<cI")  # operation, count; then ids (int64), vectors (float32)
_Record = tuple[bytes, IdArray, FloatMatrix | None]
_faiss: Any = faiss  # its bundled type stubs lag its API


SEGMENT_ROWS = 8192  # rows of one exact index of the delta (a big file's fill several)


def _exact_delta(dimension: int) -> _Delta:
    return _Delta(dimension)


class _Delta:
    """The vectors added since the base: exact FAISS indexes of at most
    :data:`SEGMENT_ROWS` rows each, asked as one (what an ``IndexIDMap2`` over one
    ``IndexFlatIP`` answers).  One index's codes grow by doubling, each step a copy of
    all it holds: a big file's 50,000 vectors cost copies of 48 and 24 MB (0.1 s of
    CPU) in the steps of its mirror update; a segment's last copy is 6 MB."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._parts: list[Any] = [_faiss.IndexIDMap2(_faiss.IndexFlatIP(dimension))]

    @property
    def ntotal(self) -> int:
        return sum(int(part.ntotal) for part in self._parts)

    def add_with_ids(self, vectors: FloatMatrix, ids: IdArray) -> None:
        start = 0
        while start < len(ids):
            last = self._parts[-1]
            if int(last.ntotal) >= SEGMENT_ROWS:
                last = _faiss.IndexIDMap2(_faiss.IndexFlatIP(self._dimension))
                self._parts.append(last)
            end = start + SEGMENT_ROWS - int(last.ntotal)
            last.add_with_ids(vectors[start:end], ids[start:end])
            start = end

    def remove_ids(self, ids: IdArray) -> None:
        for part in self._parts:
            if part.ntotal:
                part.remove_ids(ids)
        kept = [part for part in self._parts[:-1] if part.ntotal]
        self._parts = [*kept, self._parts[-1]]

    def search(self, query: FloatMatrix, k: int) -> tuple[FloatMatrix, IdArray]:
        if len(self._parts) == 1:
            scores, ids = self._parts[0].search(query, k)
            return scores, ids
        parts = [part for part in self._parts if part.ntotal]
        found = [part.search(query, min(k, int(part.ntotal))) for part in parts]
        scores = np.concatenate([s[0] for s, _ in found])
        ids = np.concatenate([i[0] for _, i in found])
        best = np.argsort(-scores, kind="stable")[:k]
        return scores[best].reshape(1, -1), ids[best].reshape(1, -1)

    def reconstruct(self, key: int) -> FloatMatrix:
        """The vector of ``key``; RuntimeError when the delta does not hold it."""
        for part in self._parts:
            if part.ntotal:
                with contextlib.suppress(RuntimeError):
                    vector: FloatMatrix = part.reconstruct(key)
                    return vector
        raise RuntimeError(f"id {key} is not in the delta")

    def ids(self) -> IdArray:
        return np.concatenate(
            [_faiss.vector_to_array(part.id_map).astype(np.int64) for part in self._parts]
        )

    def copy_vectors(self, between: Callable[[], None] | None) -> FloatMatrix:
        """A copy of every vector, in the order of :meth:`ids`, made
        :data:`SNAPSHOT_ROWS` at a time with ``between`` after each."""
        out = np.empty((self.ntotal, self._dimension), dtype=np.float32)
        at = 0
        for part in self._parts:
            count = int(part.ntotal)
            vectors = kinds.flat_vectors(part.index, count, self._dimension)
            for start in range(0, count, SNAPSHOT_ROWS):
                if at and between is not None:
                    between()
                rows = vectors[start : start + SNAPSHOT_ROWS]
                out[at : at + len(rows)] = rows
                at += len(rows)
        return out


class FaissVectorIndex(segments.Segmented):
    """A memory-mapped base of any kind, plus what changed since: an exact delta and
    tombstones.  ``choice``: ``auto`` (by size) or a kind to force."""

    def __init__(self, dimension: int, choice: str = "auto") -> None:
        if choice not in kinds.CHOICES:
            raise ValueError(f"unknown vector index {choice!r} (known: {', '.join(kinds.CHOICES)})")
        self._dimension = dimension
        self.choice = choice
        self._base = kinds.empty_base(dimension)
        self._delta = _exact_delta(dimension)
        self._dead: set[int] = set()  # base ids removed since the base was written
        self._skip: Any = None  # the IDSelector over _dead, made when first searched
        self._pending: list[_Record] = []  # changes not yet in the saved log
        self._head: dict[str, Any] | None = None  # the head loaded or last written
        self._log_entries = 0  # ids in the saved log and the pending changes

    # -- VectorIndexType --------------------------------------------------------------

    @classmethod
    def empty(cls, dimension: int) -> FaissVectorIndex:
        return cls(dimension)

    @classmethod
    def load(cls, path: Path, dimension: int, choice: str = "auto") -> FaissVectorIndex:
        head = _read_head(path)
        if head.get("dimension") != dimension:
            raise ValueError(
                f"vector index {path} has dimension {head.get('dimension')}, not {dimension}"
            )
        index = cls(dimension, choice)
        index._restart(path, head)
        return index

    # -- what it holds ----------------------------------------------------------------

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def kind(self) -> str:
        """The kind of the base (``flat`` until a base of another kind is written)."""
        return self._base.kind

    def __len__(self) -> int:
        return len(self._base) - len(self._dead) + int(self._delta.ntotal)

    def add(self, ids: IdArray, vectors: FloatMatrix) -> None:
        if not len(ids):
            return
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        self._delta.add_with_ids(vectors, ids)
        self._pending.append((_ADD, ids, vectors))
        self._log_entries += len(ids)

    def remove(self, ids: Sequence[int]) -> None:
        if not len(ids):
            return
        wanted = np.asarray(ids, dtype=np.int64)
        self._remove(wanted)
        self._pending.append((_REMOVE, wanted, None))
        self._log_entries += len(wanted)

    def _remove(self, ids: IdArray) -> None:
        if self._delta.ntotal:
            self._delta.remove_ids(ids)
        rows = self._base.rows(ids)
        dead = {int(i) for i, row in zip(ids, rows, strict=True) if row >= 0} - self._dead
        if dead:
            self._dead |= dead
            self._skip = None

    # -- reading ----------------------------------------------------------------------

    def search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        if len(self) == 0 or k <= 0:
            return []
        query = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        found = []
        if len(self._base) > len(self._dead):
            if self._base.kind in kinds.UNSELECTED and len(self._dead) <= kinds.UNSELECTED_MAX:
                found = self._base.search(query, k, None, self._dead)
            else:
                found = self._base.search(query, k, self._skipping())
        if self._delta.ntotal:
            scores, ids = self._delta.search(query, min(k, int(self._delta.ntotal)))
            fresh = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]
            # sorted() is stable: on a tie the base's hit comes first
            found = sorted(found + fresh, key=lambda item: -item[1]) if found else fresh
        return found[:k]

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        out: dict[int, float] = {}
        if not len(ids):
            return out
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        rows = self._base.rows(ids)
        in_base: list[tuple[int, int]] = []
        for chunk_id, row in zip(ids, rows, strict=True):
            key = int(chunk_id)
            if self._delta.ntotal:
                with contextlib.suppress(RuntimeError):  # RuntimeError: not in the delta
                    out[key] = float(np.dot(self._delta.reconstruct(key), q))
                    continue
            if row >= 0 and key not in self._dead:
                in_base.append((key, int(row)))
        if in_base:  # one read of the base's rows, scored together
            found = self._base.vectors_of(np.array([row for _, row in in_base], dtype=np.int64))
            for (key, _), score in zip(in_base, (found @ q).tolist(), strict=True):
                out[key] = float(score)
        return out

    def _skipping(self) -> Any:
        if not self._dead:
            return None
        if self._skip is None:
            batch = _faiss.IDSelectorBatch(np.fromiter(self._dead, dtype=np.int64))
            self._skip = _faiss.IDSelectorNot(batch)
            self._skip.referenced = batch  # the outer selector keeps the inner one alive
        return self._skip

    # -- saving -----------------------------------------------------------------------

    def _head_on_disk(self, path: Path) -> dict[str, Any] | None:
        try:
            return _read_head(path)
        except (OSError, ValueError):
            return None

    def _records(self) -> bytes:
        return b"".join(_encode(record) for record in self._pending)

    def _compaction_due(self) -> bool:
        if kinds.wanted_kind(self.choice, len(self), self._base.kind) != self._base.kind:
            return True
        return self._log_entries > max(LOG_MIN, LOG_SHARE * len(self._base))

    def _snapshot(
        self, between: Callable[[], None] | None = None
    ) -> tuple[kinds.Base, IdArray, IdArray, FloatMatrix]:
        """The base (never modified), the ids removed from it and a copy of the delta,
        made :data:`SNAPSHOT_ROWS` rows at a time with ``between`` after each (a big
        file's 50,000 new vectors are 77 MB to copy, 0.2 s of CPU in new memory); what
        runs there only searches, so the delta does not change meanwhile."""
        dead = np.fromiter(self._dead, dtype=np.int64, count=len(self._dead))
        delta_ids = self._delta.ids()
        copy = self._delta.copy_vectors(between)
        return self._base, dead, delta_ids, copy

    def _write_files(
        self,
        path: Path,
        snapshot: tuple[kinds.Base, IdArray, IdArray, FloatMatrix],
        token: str,
        *,
        beside: bool,
    ) -> dict[str, Any]:
        started = time.perf_counter()
        base, dead, delta_ids, _ = snapshot
        count = len(base) - len(dead) + len(delta_ids)
        kind = kinds.wanted_kind(self.choice, count, base.kind)
        prefix = f"{path.name}.{token}"
        head: dict[str, Any] = {
            "format": _FORMAT,
            "kind": kind,
            "dimension": self._dimension,
            "token": token,
            "base": None,
            "count": 0,
            "log": f"{prefix}.log",
        }
        empty: tuple[IdArray, FloatMatrix] = (
            np.zeros(0, dtype=np.int64),
            np.zeros((0, self._dimension), dtype=np.float32),
        )
        if count and kind in kinds.STREAMED and not (kind == kinds.FLAT and count < LOG_MIN):
            # A block at a time: a first index of 100,000 files does not hold its
            # vectors three times over while its base is written.
            kinds.write_streamed(
                kind,
                lambda: _blocks(*snapshot),
                count,
                self._dimension,
                path.parent,
                prefix,
                all_cores=not beside,
            )
            head["base"], head["count"] = prefix, count
            ids, vectors = empty  # nothing left for the log
        else:
            ids, vectors = _contents(*snapshot) if count else empty
            if len(ids) and not (kind == kinds.FLAT and len(ids) < LOG_MIN):
                built = kinds.build_base(kind, ids, vectors, self._dimension, all_cores=not beside)
                kinds.write_base(built, path.parent, prefix)
                head["base"], head["count"] = prefix, len(ids)
                ids, vectors = ids[:0], vectors[:0]  # nothing left for the log
        with open(path.parent / head["log"], "wb") as handle:
            if len(ids):  # a small flat index lives in its log
                handle.write(_encode((_ADD, ids, vectors)))
            head["log_bytes"] = handle.tell()
        if head["base"]:
            log.info(
                "vector index: wrote a %s base of %d vectors in %.2f s%s",
                kind,
                head["count"],
                time.perf_counter() - started,
                " beside the index's work" if beside else "",
            )
        return head

    def _open_base(self, path: Path, head: dict[str, Any]) -> kinds.Base:
        return _read_base(path.parent, head, self._dimension)

    def _restart(self, path: Path, head: dict[str, Any], base: Any = None) -> None:
        self._base = base if base is not None else self._open_base(path, head)
        self._delta = _exact_delta(self._dimension)
        self._dead, self._skip, self._pending = set(), None, []
        self._log_entries = 0
        self._replay(path.parent / head["log"], int(head["log_bytes"]))
        self._head = head

    # -- the log ----------------------------------------------------------------------

    def _replay(self, log_path: Path, length: int) -> None:
        with open(log_path, "rb") as handle:
            data = handle.read(length)
        if len(data) != length:
            raise ValueError(f"vector log {log_path} is shorter than its head says")
        at, d = 0, self._dimension
        try:
            while at < length:
                op, count = _RECORD.unpack_from(data, at)
                at += _RECORD.size
                ids = np.frombuffer(data, dtype=np.int64, count=count, offset=at)
                at += 8 * count
                if op == _ADD:
                    rows = np.frombuffer(data, dtype=np.float32, count=count * d, offset=at)
                    at += 4 * count * d
                    self._delta.add_with_ids(rows.reshape(count, d), ids)
                elif op == _REMOVE:
                    self._remove(ids)
                else:
                    raise ValueError(f"unknown record {op!r}")
                self._log_entries += count
        except (struct.error, ValueError) as exc:
            raise ValueError(f"vector log {log_path} is damaged: {exc}") from exc


class FaissVectorIndexType:
    """:class:`~citeline.core.vectors.VectorIndexType` for one ``[index] vectors`` choice."""

    def __init__(self, choice: str = "auto") -> None:
        if choice not in kinds.CHOICES:
            raise ValueError(f"unknown vector index {choice!r} (known: {', '.join(kinds.CHOICES)})")
        self.choice = choice

    def empty(self, dimension: int) -> FaissVectorIndex:
        return FaissVectorIndex(dimension, self.choice)

    def load(self, path: Path, dimension: int) -> FaissVectorIndex:
        return FaissVectorIndex.load(path, dimension, self.choice)


# -- files --------------------------------------------------------------------------


def _blocks(
    base: kinds.Base, dead: IdArray, delta_ids: IdArray, delta_vectors: FloatMatrix
) -> Iterator[tuple[IdArray, FloatMatrix]]:
    """What :func:`_contents` holds, in its order, :data:`BLOCK_ROWS` rows at a time:
    the live base rows (read from the base's file), then the delta's."""
    for start in range(0, len(base), BLOCK_ROWS):
        end = min(start + BLOCK_ROWS, len(base))
        ids = np.asarray(base.ids[start:end], dtype=np.int64)
        if base.row_file is not None:
            vectors = base.row_file.block(start, end)
        else:
            vectors = np.asarray(base.vectors[start:end], dtype=np.float32)
        if len(dead):
            keep = ~np.isin(ids, dead)
            ids, vectors = ids[keep], vectors[keep]
        if len(ids):
            yield ids, vectors
    for start in range(0, len(delta_ids), BLOCK_ROWS):
        yield delta_ids[start : start + BLOCK_ROWS], delta_vectors[start : start + BLOCK_ROWS]


def _contents(
    base: kinds.Base, dead: IdArray, delta_ids: IdArray, delta_vectors: FloatMatrix
) -> tuple[IdArray, FloatMatrix]:
    """Every (id, vector) of a snapshot: the live base rows, then the delta's."""
    keep = np.ones(len(base), dtype=bool)
    if len(dead):
        keep &= ~np.isin(base.ids, dead)
    all_ids = [np.asarray(base.ids)[keep], delta_ids]
    all_vectors = [np.asarray(base.vectors)[keep], delta_vectors]
    return np.concatenate(all_ids), np.concatenate(all_vectors).astype(np.float32)


def _encode(record: _Record) -> bytes:
    op, ids, vectors = record
    parts = [_RECORD.pack(op, len(ids)), np.ascontiguousarray(ids, dtype=np.int64).tobytes()]
    if vectors is not None:
        parts.append(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return b"".join(parts)


def _read_head(path: Path) -> dict[str, Any]:
    head = segments.read_head(path, _FORMAT, "vector index")
    if head.get("kind") not in kinds.KINDS:
        raise ValueError(f"vector index {path} has an unknown kind {head.get('kind')!r}")
    return head


def _read_base(folder: Path, head: dict[str, Any], dimension: int) -> kinds.Base:
    if not head.get("base"):
        return kinds.empty_base(dimension, head["kind"])
    return kinds.read_base(folder, str(head["base"]), head["kind"], dimension)
