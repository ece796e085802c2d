"""Which kind of FAISS index a size calls for, and bases written and mapped again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citeline.backends.faiss import kinds
from citeline.backends.faiss.index import FaissVectorIndexType
from citeline.backends.faiss.kinds import wanted_kind


def test_auto_is_flat_then_fp16_then_ivf_sq8_with_hysteresis() -> None:
    limit, fp16 = kinds.FLAT_MAX, kinds.FP16_MIN
    assert wanted_kind("auto", fp16 - 1) == "flat"
    assert wanted_kind("auto", fp16) == "flat-fp16"
    assert wanted_kind("auto", fp16 // 2, current="flat-fp16") == "flat-fp16"
    assert wanted_kind("auto", fp16 // 2 - 1, current="flat-fp16") == "flat"
    assert wanted_kind("auto", fp16, current="flat") == "flat-fp16"
    assert wanted_kind("auto", limit - 1) == "flat-fp16"
    assert wanted_kind("auto", limit) == "ivf-sq8"
    assert wanted_kind("auto", limit // 2, current="ivf-sq8") == "ivf-sq8"
    assert wanted_kind("auto", limit // 2 - 1, current="ivf-sq8") == "flat-fp16"
    assert wanted_kind("auto", fp16 - 1, current="ivf-sq8") == "flat"
    assert wanted_kind("hnsw", 10) == "hnsw" and wanted_kind("flat", 10**7) == "flat"
    assert wanted_kind("flat-fp16", 10) == "flat-fp16"
    assert wanted_kind("auto", 100_000) == "flat-fp16"  # half the bytes a scan reads
    with pytest.raises(ValueError):
        FaissVectorIndexType("annoy")


def test_ivf_lists_and_probes_follow_the_size() -> None:
    assert kinds.ivf_lists(100_000) == 1264 and kinds.ivf_probes(1264) == 32
    assert kinds.ivf_lists(1_000_000) == 4000 and kinds.ivf_probes(4000) == 100
    assert kinds.ivf_lists(10) == 1 and kinds.ivf_probes(1) == 1


@pytest.mark.parametrize("kind", kinds.KINDS)
def test_a_base_read_back_is_mapped_and_answers_as_built(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((400, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.arange(400, dtype=np.int64) * 5
    built = kinds.build_base(kind, ids, vectors, 8)
    kinds.write_base(built, tmp_path, "b")
    read = kinds.read_base(tmp_path, "b", kind, 8)
    assert len(read) == 400 and read.kind == kind
    assert isinstance(read.ids, np.memmap)  # mapped, not read
    assert read.rows([5, 6, 1995]).tolist() == [1, -1, 399]
    np.testing.assert_array_equal(np.asarray(read.vectors), vectors)
    some = np.array([0, 399, 7], dtype=np.int64)
    np.testing.assert_array_equal(read.vectors_of(some), vectors[some])
    assert (read.row_file is not None) == (kind in kinds.RESCORED)  # rows read, not mapped
    if read.row_file is not None:
        with pytest.raises(IndexError):
            read.vectors_of(np.array([400], dtype=np.int64))
    best = read.search(vectors[7:8], 3, None)
    assert best[0][0] == 35 and best[0][1] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError):
        kinds.read_base(tmp_path, "b", kind, 9)


def mapped_kb(name: Path) -> int | None:
    """Resident kB of this process's mapping of ``name`` (None: not mapped)."""
    found = None
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for at, line in enumerate(lines):
        if line.endswith(str(name)):
            for entry in lines[at + 1 :]:
                if entry.startswith("Rss:"):
                    found = (found or 0) + int(entry.split()[1])
                    break
    return found


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux memory accounting")
@pytest.mark.parametrize("kind", kinds.RESCORED)
def test_rescoring_reads_rows_without_making_the_float_vectors_resident(
    kind: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((6000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = np.arange(6000, dtype=np.int64)
    kinds.write_base(kinds.build_base(kind, ids, vectors, 64), tmp_path, "b")
    read = kinds.read_base(tmp_path, "b", kind, 64)
    for row in range(0, 6000, 60):  # 100 searches, each rescoring 100 candidates
        found = read.search(vectors[row : row + 1], 10, None)
        assert found[0][0] == row and found[0][1] == pytest.approx(1.0, abs=1e-5)
    # The file is in the page cache (just written): a mapped read would have made
    # 64 KB around every row resident; pread leaves the 1.5 MB mapping untouched.
    assert mapped_kb(tmp_path / "b.vectors.npy") == 0


@pytest.mark.parametrize("kind", kinds.STREAMED)
def test_a_base_written_a_block_at_a_time_is_the_base_built_at_once(
    kind: str, tmp_path: Path
) -> None:
    """``write_streamed`` (a new base from blocks of rows, never all of them in memory
    at once) writes the files ``build_base`` + ``write_base`` write of the same rows:
    the same ids and vectors in the same order, the same answers."""
    rng = np.random.default_rng(7)
    count, dimension = 3_000, 16
    vectors = rng.normal(size=(count, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = rng.permutation(10 * count)[:count].astype(np.int64)

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, count, 700):  # blocks of any size
            yield ids[start : start + 700], vectors[start : start + 700]

    built, streamed = tmp_path / "built", tmp_path / "streamed"
    built.mkdir()
    streamed.mkdir()
    kinds.write_base(kinds.build_base(kind, ids, vectors, dimension), built, "b")
    kinds.write_streamed(kind, blocks, count, dimension, streamed, "b")
    for name in sorted(p.name for p in built.iterdir()):
        if name.endswith(".npy"):
            assert np.array_equal(np.load(built / name), np.load(streamed / name)), name
    if kind != kinds.IVF_SQ8:  # (its training's k-means runs on every core: not bytewise)
        assert (built / "b.base").read_bytes() == (streamed / "b.base").read_bytes()
    a = kinds.read_base(built, "b", kind, dimension)
    b = kinds.read_base(streamed, "b", kind, dimension)
    for query in vectors[:20]:
        want = a.search(query.reshape(1, -1), 10, None)
        got = b.search(query.reshape(1, -1), 10, None)
        assert [i for i, _ in got] == [i for i, _ in want]
    with pytest.raises(ValueError):
        kinds.write_streamed(kind, blocks, count + 1, dimension, tmp_path, "short")
