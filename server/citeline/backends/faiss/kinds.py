"""The kinds of FAISS index a base can be, which one a size calls for, and a base:
an index written once and memory-mapped when it is read.

- ``flat``: every vector scored, exactly (``IndexIDMap2`` over ``IndexFlatIP``).
- ``flat-fp16``: every vector scored from 16-bit float codes (``IndexScalarQuantizer``,
  ``QT_fp16``: half the bytes a search reads), then its candidates scored again
  exactly from the float vectors kept beside it, as ``ivf-sq8``'s are.  The scores it
  returns are exact cosines; the candidates (the best :data:`APPROXIMATE_MIN_CANDIDATES`
  by the codes) held the exact 10 on every measured query.
- ``ivf-sq8``: an inverted file over 8-bit scalar-quantized codes (about 4·√n lists,
  ``nprobe`` about 2.5% of them); its candidates (twice as many as wanted, at least
  100) are scored again exactly from the float vectors kept beside it, so the scores
  it returns are exact cosines and only the candidate set is approximate.
- ``hnsw``: a graph over the float vectors (``IndexHNSWFlat``, M = 32); exact scores,
  approximate candidates; it cannot remove ids, so removals are tombstones (see
  ``index.py``) until the next base.

``auto`` is ``flat`` below :data:`FP16_MIN` vectors, ``flat-fp16`` up to :data:`FLAT_MAX`
and ``ivf-sq8`` above: measured
with ``benchmarks/vectors.py`` (recall@10 against exact, latency, memory and build
time at 100k and 1M vectors; docs/performance.md).  IVF removes ids and builds in
a fraction of HNSW's time, at a quarter of its memory.

Searches run on one OpenMP thread: a single query gains nothing from more, and
FAISS's own OpenMP threads spin at their barriers, so one busy process on 2 cores
made a flat search at 100k take 111 ms instead of 14.  Building a base uses every
core (:func:`every_core`).
"""

from __future__ import annotations

import contextlib
import math
import os
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from citeline.backends.segments import NpyWriter
from citeline.core.embedding import FloatMatrix
from citeline.core.vectors import IdArray

FLAT = "flat"
FLAT_FP16 = "flat-fp16"
IVF_SQ8 = "ivf-sq8"
HNSW = "hnsw"
KINDS = (FLAT, FLAT_FP16, IVF_SQ8, HNSW)
RESCORED = (FLAT_FP16, IVF_SQ8)  # kinds whose candidates are scored again exactly
#: Kinds whose best candidates among the live ids are the best of all ids without the
#: removed ones (a scan of every code or of the probed lists; not a graph walk, which a
#: selector steers), so a search can ask for as many more as were removed and drop
#: those: FAISS's scan with an ``IDSelector`` checks every id on its way (flat-fp16 at
#: 100k, 64-513 removed: 0.7-1.1 ms more CPU a search of 15-17 under load; docs/performance.md).
UNSELECTED = (FLAT, FLAT_FP16, IVF_SQ8)
#: Up to this many removed ids are passed over by asking for more candidates; more
#: use the selector (at 1,062 the longer candidate list cost 0.6 ms more than it saved).
UNSELECTED_MAX = 512
CHOICES = ("auto", *KINDS)

#: ``auto`` keeps the exact flat index below this many vectors and takes ``ivf-sq8``
#: from here; an ``ivf-sq8`` index goes back to flat below half of it.  Flat at 100k
#: vectors searched in 9-17 ms on one shared core, while ivf-sq8 at ``auto``'s probes
#: found 0.965 of the exact 10 on real MiniLM vectors (10k) but 0.243 on hashed
#: bag-of-words vectors (100k): exact is kept while it is fast (docs/performance.md).
FLAT_MAX = 150_000
#: ``auto`` scans 16-bit codes from this many vectors (and goes back to float32 below
#: half of it): at 100k vectors a scan of the codes and an exact rescoring of 100
#: candidates took 5.0 ms of CPU where the float32 scan took 10.7 (docs/performance.md).
FP16_MIN = 20_000
IVF_LISTS_PER_ROOT = 4
IVF_PROBE_SHARE = 0.025
IVF_MIN_PROBES = 16
IVF_TRAIN_PER_LIST = 40  # training points per list (FAISS wants at least 39)
APPROXIMATE_CANDIDATES = 2  # candidates per wanted hit, scored again exactly
APPROXIMATE_MIN_CANDIDATES = 100
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 64
HNSW_EF_SEARCH = 128

# FAISS's bundled type stubs lag its API (search parameters, downcasts): use it untyped.
_faiss: Any = faiss
_faiss.omp_set_num_threads(1)


def wanted_kind(choice: str, count: int, current: str | None = None) -> str:
    """The kind of base for ``count`` vectors: ``choice`` unless it is ``auto``."""
    if choice != "auto":
        return choice
    # A folder near a limit does not flip between kinds: a kind is left at half its limit.
    if count >= FLAT_MAX or (current == IVF_SQ8 and count >= FLAT_MAX // 2):
        return IVF_SQ8
    if count >= FP16_MIN or (current == FLAT_FP16 and count >= FP16_MIN // 2):
        return FLAT_FP16
    return FLAT


def ivf_lists(count: int) -> int:
    """Inverted lists for ``count`` vectors: ~4·√n, with enough points to train each."""
    return max(1, min(int(IVF_LISTS_PER_ROOT * math.sqrt(count)), count // 39))


def ivf_probes(lists: int) -> int:
    return min(lists, max(IVF_MIN_PROBES, math.ceil(IVF_PROBE_SHARE * lists)))


@contextlib.contextmanager
def every_core() -> Iterator[None]:
    """FAISS on every core this process may use, then back to one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    _faiss.omp_set_num_threads(max(cores, 1))
    try:
        yield
    finally:
        _faiss.omp_set_num_threads(1)


def flat_vectors(flat: Any, count: int, dimension: int) -> npt.NDArray[np.float32]:
    """The float vectors an ``IndexFlat`` holds (a view: no copy, mapped if it is)."""
    if count == 0:
        return np.zeros((0, dimension), dtype=np.float32)
    raw = _faiss.rev_swig_ptr(_faiss.downcast_index(flat).get_xb(), count * dimension)
    return np.frombuffer(raw, dtype=np.float32).reshape(count, dimension)


class RowFile:
    """Rows of a saved ``.npy`` matrix read with ``pread``, not through a mapping.

    A page fault in a mapped file maps the pages around it that are in the page cache
    too (the kernel's fault-around, 64 KB; ``MADV_RANDOM`` does not stop it), so the
    100 rows a rescoring reads made 6 MB of the float vectors resident, and 100
    searches at 100k vectors all 150 MB of them.  Reading the rows costs 0.1 ms a
    search and maps nothing."""

    def __init__(self, name: Path, offset: int, shape: tuple[int, int]) -> None:
        self._fd = os.open(name, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)  # closed when the base goes
        self._offset = offset
        self._shape = shape

    def block(self, start: int, end: int) -> npt.NDArray[np.float32]:
        """Rows ``start`` to ``end`` (contiguous), in one read."""
        count, dimension = self._shape
        if not 0 <= start <= end <= count:
            raise IndexError(f"rows {start}-{end} are not among {count}")
        width = 4 * dimension
        out = np.empty((end - start, dimension), dtype=np.float32)
        size = (end - start) * width
        if size and os.preadv(self._fd, [out.data.cast("B")], self._offset + start * width) < size:
            raise ValueError("vector file is shorter than its header says")
        return out

    def rows(self, rows: IdArray) -> npt.NDArray[np.float32]:
        count, dimension = self._shape
        width = 4 * dimension
        out = np.empty((len(rows), dimension), dtype=np.float32)
        view = out.data.cast("B")
        fd = self._fd
        for at, row in enumerate(rows.tolist()):
            if not 0 <= row < count:
                raise IndexError(f"row {row} is not among {count}")
            place = view[at * width : (at + 1) * width]
            if os.preadv(fd, [place], self._offset + row * width) < width:
                raise ValueError("vector file is shorter than its header says")
        return out


class Base:
    """An index written once: its FAISS index, its ids (in index order) and vectors."""

    def __init__(
        self,
        kind: str,
        index: Any,
        ids: IdArray,
        vectors: npt.NDArray[np.float32],
        row_file: RowFile | None = None,
    ) -> None:
        self.kind = kind
        self.index = index
        self.ids = ids
        self.vectors = vectors  # row i is the vector of ids[i]
        self.row_file = row_file  # the same rows, read without mapping them
        self._order: IdArray | None = None
        self._sorted: IdArray | None = None

    def vectors_of(self, rows: IdArray) -> npt.NDArray[np.float32]:
        """The float vectors of ``rows`` (each a row here): few rows of a saved base
        are read from its file, leaving its mapping untouched."""
        if self.row_file is not None:
            return self.row_file.rows(rows)
        return np.asarray(self.vectors[rows], dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, ids: Sequence[int] | IdArray) -> IdArray:
        """Each id's row here, or -1 when it is not here."""
        wanted = np.asarray(ids, dtype=np.int64)
        if len(self.ids) == 0 or not len(wanted):
            return np.full(len(wanted), -1, dtype=np.int64)
        if self._order is None or self._sorted is None:
            self._order = np.argsort(self.ids, kind="stable")
            self._sorted = np.asarray(self.ids[self._order])
        at = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
        return np.where(self._sorted[at] == wanted, self._order[at], -1)

    def search(
        self, query: FloatMatrix, k: int, skip: Any, passed: Collection[int] = ()
    ) -> list[tuple[int, float]]:
        """(id, exact cosine) of the best ``k``, best first; ``skip``: an IDSelector of
        ids to pass over, or None; ``passed``: ids to pass over without one (a kind of
        :data:`UNSELECTED`: as many more candidates asked for, and those dropped)."""
        if len(self.ids) == 0:
            return []
        want = k
        if self.kind in RESCORED:
            want = max(APPROXIMATE_CANDIDATES * k, APPROXIMATE_MIN_CANDIDATES)
        if passed and self.kind not in UNSELECTED:
            raise ValueError(f"a {self.kind} base passes over ids with a selector only")
        kept = want
        want = min(want + len(passed), len(self.ids))
        params: Any = None
        if self.kind == IVF_SQ8:
            params = _faiss.SearchParametersIVF()
            params.nprobe = ivf_probes(self.index.nlist)
        elif self.kind == HNSW:
            params = _faiss.SearchParametersHNSW()
            params.efSearch = max(HNSW_EF_SEARCH, want)
        elif skip is not None:
            params = _faiss.SearchParameters()
        if skip is not None:
            params.sel = skip
        scores, ids = self.index.search(query, want, params=params)
        found = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i != -1]
        if passed:
            found = [hit for hit in found if hit[0] not in passed][:kept]
        if self.kind in RESCORED and found:  # quantized scores: score the candidates exactly
            exact = self.vectors_of(self.rows([i for i, _ in found])) @ query.reshape(-1)
            found = [(i, float(s)) for (i, _), s in zip(found, exact, strict=True)]
            found.sort(key=lambda item: -item[1])
        return found[:k]


def empty_base(dimension: int, kind: str = FLAT) -> Base:
    """No vectors; ``kind`` is what the index was asked to be."""
    return Base(
        kind,
        _faiss.IndexIDMap2(_faiss.IndexFlatIP(dimension)),
        np.zeros(0, dtype=np.int64),
        np.zeros((0, dimension), dtype=np.float32),
    )


def build_base(
    kind: str, ids: IdArray, vectors: FloatMatrix, dimension: int, *, all_cores: bool = True
) -> Base:
    """A new base of ``kind`` holding ``vectors`` (rows) under ``ids``, in memory; on
    every core (FAISS's thread count is the process's), else on the one it has."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    count = len(ids)
    index: Any
    with every_core() if all_cores else contextlib.nullcontext():
        if kind == FLAT:
            index = _faiss.IndexIDMap2(_faiss.IndexFlatIP(dimension))
            index.add_with_ids(vectors, ids)
        elif kind == FLAT_FP16:
            codes = _faiss.IndexScalarQuantizer(
                dimension, _faiss.ScalarQuantizer.QT_fp16, _faiss.METRIC_INNER_PRODUCT
            )
            index = _faiss.IndexIDMap2(codes)
            index.add_with_ids(vectors, ids)
        elif kind == HNSW:
            graph = _faiss.IndexHNSWFlat(dimension, HNSW_M, _faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            index = _faiss.IndexIDMap2(graph)
            index.add_with_ids(vectors, ids)
        elif kind == IVF_SQ8:
            index, training_rows = _untrained_ivf(count, dimension)
            index.train(vectors[training_rows])
            index.add_with_ids(vectors, ids)
        else:
            raise ValueError(f"unknown vector index kind {kind!r}")
    return Base(kind, index, ids, vectors)


def _untrained_ivf(count: int, dimension: int) -> tuple[Any, IdArray]:
    """An ivf-sq8 index sized for ``count`` rows, not yet trained, and the rows (in
    order, the same for the same count) it is trained on."""
    lists = ivf_lists(count)
    quantizer = _faiss.IndexFlatIP(dimension)
    index = _faiss.IndexIVFScalarQuantizer(
        quantizer, dimension, lists, _faiss.ScalarQuantizer.QT_8bit,
        _faiss.METRIC_INNER_PRODUCT,
    )  # fmt: skip
    index.cp.seed = 1234
    sample = min(count, IVF_TRAIN_PER_LIST * lists)
    rng = np.random.default_rng(1234)
    return index, np.sort(rng.choice(count, sample, replace=False))


Blocks = Callable[[], Iterator[tuple[IdArray, FloatMatrix]]]
"""A base's rows, again on each call, a block at a time: (ids, float32 vectors)."""

STREAMED = (FLAT, FLAT_FP16, IVF_SQ8)  # kinds whose base is written a block at a time


def write_streamed(
    kind: str,
    blocks: Blocks,
    count: int,
    dimension: int,
    folder: Path,
    prefix: str,
    *,
    all_cores: bool = True,
) -> None:
    """The base :func:`build_base` and :func:`write_base` make of the same rows in the
    same order, written from ``blocks`` without holding every row in memory at once:
    the FAISS index's own codes are all that grows with ``count`` (2 bytes a dimension
    for flat-fp16, 1 for ivf-sq8, 4 for flat); the ids and the float vectors go to
    their files as they come."""
    if kind not in STREAMED:
        raise ValueError(f"vector index kind {kind!r} is not written a block at a time")
    index: Any
    with every_core() if all_cores else contextlib.nullcontext():
        if kind == FLAT:
            index = _faiss.IndexIDMap2(_faiss.IndexFlatIP(dimension))
        elif kind == FLAT_FP16:
            codes = _faiss.IndexScalarQuantizer(
                dimension, _faiss.ScalarQuantizer.QT_fp16, _faiss.METRIC_INNER_PRODUCT
            )
            index = _faiss.IndexIDMap2(codes)
        else:
            index, training_rows = _untrained_ivf(count, dimension)
            index.train(_rows_at(blocks, training_rows))
        if kind != IVF_SQ8:
            _reserve(index, count)
        ids_file = NpyWriter(folder / f"{prefix}.ids.npy", np.dtype(np.int64), (count,))
        vectors_file = (
            NpyWriter(folder / f"{prefix}.vectors.npy", np.dtype(np.float32), (count, dimension))
            if kind in RESCORED
            else None
        )
        with ids_file, vectors_file or contextlib.nullcontext():
            for ids, vectors in blocks():
                ids = np.ascontiguousarray(ids, dtype=np.int64)
                vectors = np.ascontiguousarray(vectors, dtype=np.float32)
                index.add_with_ids(vectors, ids)
                ids_file.write(ids)
                if vectors_file is not None:
                    vectors_file.write(vectors)
        if int(index.ntotal) != count:
            raise ValueError(f"vector index: {index.ntotal} rows written, {count} expected")
        _faiss.write_index(index, str(folder / f"{prefix}.base"))


def _reserve(index: Any, count: int) -> None:
    """Room for ``count`` rows in an ``IndexIDMap2`` over flat codes, made once: grown
    by doubling as blocks come, its codes would be copied at each step (the old and the
    new copy held at once, three times the codes at the last)."""
    inner = _faiss.downcast_index(index.index)
    codes = inner.codes
    codes.resize(count * int(inner.code_size))
    codes.resize(0)  # the capacity stays
    index.id_map.resize(count)
    index.id_map.resize(0)


def _rows_at(blocks: Blocks, positions: IdArray) -> FloatMatrix:
    """The vectors at ``positions`` (sorted) of the rows ``blocks`` gives."""
    out = np.empty((len(positions), 0), dtype=np.float32)
    parts: list[FloatMatrix] = []
    start = 0
    for _, vectors in blocks():
        end = start + len(vectors)
        lo, hi = np.searchsorted(positions, [start, end])
        if hi > lo:
            parts.append(np.asarray(vectors[positions[lo:hi] - start], dtype=np.float32))
        start = end
    return np.concatenate(parts) if parts else out


def write_base(base: Base, folder: Path, prefix: str) -> None:
    """``<prefix>.base`` (the FAISS index), ``.ids.npy`` and, for the kinds that score
    their candidates again (flat-fp16, ivf-sq8), ``.vectors.npy``."""
    _faiss.write_index(base.index, str(folder / f"{prefix}.base"))
    np.save(folder / f"{prefix}.ids.npy", base.ids)
    if base.kind in RESCORED:
        np.save(folder / f"{prefix}.vectors.npy", base.vectors)


def read_base(folder: Path, prefix: str, kind: str, dimension: int) -> Base:
    """The base written as ``prefix``, memory-mapped: nothing is read until searched."""
    name = folder / f"{prefix}.base"
    if not name.is_file():
        raise FileNotFoundError(f"vector index base {name} is missing")
    flags = _faiss.IO_FLAG_MMAP if kind == IVF_SQ8 else _faiss.IO_FLAG_MMAP_IFC
    try:
        index: Any = _faiss.read_index(str(name), flags | _faiss.IO_FLAG_READ_ONLY)
    except RuntimeError as exc:  # FAISS reports a damaged file this way
        raise ValueError(f"unreadable vector index {name}: {exc}") from exc
    if index.d != dimension:
        raise ValueError(f"vector index {name} has dimension {index.d}, not {dimension}")
    ids = np.load(folder / f"{prefix}.ids.npy", mmap_mode="r")
    if len(ids) != index.ntotal:
        raise ValueError(f"vector index {name} and its ids disagree")
    row_file = None
    if kind in RESCORED:
        saved = folder / f"{prefix}.vectors.npy"
        vectors = np.load(saved, mmap_mode="r")
        row_file = RowFile(saved, int(vectors.offset), (len(vectors), dimension))
    else:
        storage = index.index if kind == FLAT else _faiss.downcast_index(index.index).storage
        vectors = flat_vectors(storage, int(index.ntotal), dimension)
    if vectors.shape != (len(ids), dimension):
        raise ValueError(f"vector index {name} and its vectors disagree")
    return Base(kind, index, ids, vectors, row_file)
