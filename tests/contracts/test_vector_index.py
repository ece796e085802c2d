"""The VectorIndex contract, run against every implementation.

A new vector backend is added to ``TYPES`` and must pass as it stands.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.backends.faiss import FaissVectorIndex, FaissVectorIndexType
from citeline.core.vectors import VectorIndex, VectorIndexType
from memory import MemoryVectorIndex

TYPES: dict[str, VectorIndexType] = {
    "faiss": FaissVectorIndex,  # "auto": flat at these sizes
    "faiss-flat-fp16": FaissVectorIndexType("flat-fp16"),
    "faiss-ivf-sq8": FaissVectorIndexType("ivf-sq8"),
    "faiss-hnsw": FaissVectorIndexType("hnsw"),
    "memory": MemoryVectorIndex,
}


@pytest.fixture(params=list(TYPES))
def kind(request: pytest.FixtureRequest) -> VectorIndexType:
    return TYPES[request.param]


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def filled(kind: VectorIndexType) -> VectorIndex:
    index = kind.empty(3)
    index.add(
        np.array([10, 20, 30], dtype=np.int64),
        np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(1, 1, 0)]),
    )
    return index


def test_an_empty_index_finds_nothing(kind: VectorIndexType) -> None:
    index = kind.empty(3)
    assert len(index) == 0 and index.dimension == 3
    assert index.search(unit(1, 0, 0), 5) == []
    assert index.similarity(unit(1, 0, 0), [1, 2]) == {}


def test_search_is_nearest_first_by_cosine_keyed_by_id(kind: VectorIndexType) -> None:
    index = filled(kind)
    assert len(index) == 3
    found = index.search(unit(1, 0.1, 0), 2)
    assert [i for i, _ in found] == [10, 30]
    assert found[0][1] == pytest.approx(float(np.dot(unit(1, 0, 0), unit(1, 0.1, 0))), abs=1e-5)
    assert len(index.search(unit(1, 0, 0), 50)) == 3  # k beyond the count
    assert index.search(unit(1, 0, 0), 0) == []


def test_removed_ids_are_gone_and_unknown_ids_are_ignored(kind: VectorIndexType) -> None:
    index = filled(kind)
    index.remove([10, 99])
    assert len(index) == 2
    assert [i for i, _ in index.search(unit(1, 0, 0), 5)] == [30, 20]
    index.add(np.array([10], dtype=np.int64), unit(0, 0, 1).reshape(1, -1))  # an id comes back
    assert index.search(unit(0, 0, 1), 1)[0][0] == 10


def test_similarity_is_the_cosine_of_held_ids_only(kind: VectorIndexType) -> None:
    index = filled(kind)
    scores = index.similarity(unit(0, 1, 0), [20, 30, 99])
    assert set(scores) == {20, 30}
    assert scores[20] == pytest.approx(1.0, abs=1e-5)
    assert scores[30] == pytest.approx(float(np.dot(unit(1, 1, 0), unit(0, 1, 0))), abs=1e-5)


def test_saved_and_loaded_it_answers_the_same(kind: VectorIndexType, tmp_path: Path) -> None:
    index = filled(kind)
    path = tmp_path / "vectors"
    index.save(path)
    assert saved_files(tmp_path)  # nothing half-written left
    loaded = kind.load(path, 3)
    assert len(loaded) == 3
    before, after = index.search(unit(1, 0.1, 0), 3), loaded.search(unit(1, 0.1, 0), 3)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before])


def saved_files(folder: Path) -> list[str]:
    """The files a save left: ``vectors`` and its own companions, nothing temporary."""
    names = sorted(p.name for p in folder.iterdir())
    assert "vectors" in names
    assert all(n == "vectors" or n.startswith("vectors.") for n in names), names
    assert not any(n.endswith(".tmp") for n in names), names
    return names


def test_changes_saved_again_load_as_they_are_and_leave_no_stale_files(
    kind: VectorIndexType, tmp_path: Path
) -> None:
    path = tmp_path / "vectors"
    index = filled(kind)
    index.save(path)
    for round_ in range(4):  # remove one, add another, save: as file edits do
        index.remove([10] if round_ == 0 else [99 + round_])
        index.add(np.array([100 + round_], dtype=np.int64), unit(1, 2, round_).reshape(1, -1))
        index.save(path)
    loaded = kind.load(path, 3)
    assert len(loaded) == len(index) == 3
    query = unit(1, 2, 3)
    assert [i for i, _ in loaded.search(query, 5)] == [i for i, _ in index.search(query, 5)]
    assert loaded.similarity(query, [100, 103, 20]) == pytest.approx(
        index.similarity(query, [100, 103, 20])
    )
    first = saved_files(tmp_path)
    for _ in range(3):
        kind.load(path, 3).save(path)
    assert len(saved_files(tmp_path)) <= len(first)  # saving again does not pile up files


def test_a_missing_damaged_or_foreign_file_does_not_load(
    kind: VectorIndexType, tmp_path: Path
) -> None:
    with pytest.raises(OSError):
        kind.load(tmp_path / "missing", 3)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"garbage" * 10)
    with pytest.raises((OSError, ValueError)):
        kind.load(garbage, 3)
    filled(kind).save(tmp_path / "three")
    with pytest.raises(ValueError):
        kind.load(tmp_path / "three", 4)
