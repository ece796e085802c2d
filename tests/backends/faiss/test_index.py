"""FAISS as the vector index (the contract is tests/contracts/test_vector_index.py):
what is particular to it: a base and a log, each kind behind it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.backends.faiss import index as backend
from citeline.backends.faiss import kinds
from citeline.backends.faiss.index import FaissVectorIndex, FaissVectorIndexType


def unit_rows(count: int, dimension: int = 16, seed: int = 0, clusters: int = 8) -> np.ndarray:
    """Clustered unit vectors (what embeddings look like, unlike uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dimension)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, count)] + 0.5 * rng.standard_normal(
        (count, dimension)
    ).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def exact(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = vectors @ query
    return [int(ids[i]) for i in np.argsort(-scores, kind="stable")[:k]]


def test_an_edit_appends_to_the_log_and_leaves_the_base_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "LOG_MIN", 100)
    path = tmp_path / "v"
    vectors = unit_rows(1000)
    ids = np.arange(1000, dtype=np.int64) * 2
    index = FaissVectorIndex.empty(16)
    index.add(ids, vectors)
    index.save(path)
    (base,) = tmp_path.glob("v.*.base")
    written = base.stat().st_mtime_ns
    index.remove([0, 2])
    index.add(np.array([5001], dtype=np.int64), vectors[:1])
    index.save(path)
    assert base.exists() and base.stat().st_mtime_ns == written
    (log_file,) = tmp_path.glob("v.*.log")
    assert log_file.stat().st_size < 200  # two removals and one vector
    loaded = FaissVectorIndex.load(path, 16)
    assert len(loaded) == 999 and loaded.kind == "flat"
    assert loaded.search(vectors[0], 1)[0][0] == 5001  # the same vector under its new id
    assert 0 not in dict(loaded.search(vectors[0], 50)) and 2 not in loaded.similarity(
        vectors[0], [0, 2]
    )


def test_a_long_log_is_folded_into_a_new_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "LOG_MIN", 100)
    path = tmp_path / "v"
    vectors = unit_rows(600)
    index = FaissVectorIndex.empty(16)
    index.add(np.arange(500, dtype=np.int64), vectors[:500])
    index.save(path)
    (first,) = tmp_path.glob("v.*.base")
    index.remove(list(range(0, 150)))  # 150 log entries > max(100, 10% of 500)
    index.save(path)
    (second,) = tmp_path.glob("v.*.base")
    assert second != first and not first.exists()
    loaded = FaissVectorIndex.load(path, 16)
    assert len(loaded) == 350
    query = vectors[200]
    assert [i for i, _ in loaded.search(query, 10)] == exact(
        vectors[150:500], np.arange(150, 500), query, 10
    )


def test_ivf_sq8_finds_what_exact_search_finds_with_exact_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "FLAT_MAX", 2000)
    path = tmp_path / "v"
    vectors = unit_rows(3000, dimension=32, clusters=30)
    ids = np.arange(3000, dtype=np.int64) + 7
    index = FaissVectorIndex.empty(32)
    index.add(ids, vectors)
    index.save(path)
    loaded = FaissVectorIndex.load(path, 32)
    assert loaded.kind == "ivf-sq8"
    queries = unit_rows(50, dimension=32, seed=1, clusters=30)
    recall = np.mean(
        [
            len({i for i, _ in loaded.search(q, 10)} & set(exact(vectors, ids, q, 10))) / 10
            for q in queries
        ]
    )
    assert recall >= 0.95
    found = loaded.search(queries[0], 5)
    rows = [i - 7 for i, _ in found]
    assert [s for _, s in found] == pytest.approx((vectors[rows] @ queries[0]).tolist(), abs=1e-6)


def test_a_growing_index_becomes_fp16_and_keeps_exact_answers_and_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "FP16_MIN", 2000)
    path = tmp_path / "v"
    vectors = unit_rows(3200, dimension=32, clusters=30)
    ids = np.arange(3200, dtype=np.int64) + 7
    index = FaissVectorIndex.empty(32)
    index.add(ids[:1500], vectors[:1500])
    index.save(path)
    assert FaissVectorIndex.load(path, 32).kind == "flat"
    index.add(ids[1500:3000], vectors[1500:3000])
    index.save(path)  # 3000 vectors: the size calls for fp16 codes, a new base
    loaded = FaissVectorIndex.load(path, 32)
    assert loaded.kind == "flat-fp16"
    assert (path.parent / f"{loaded._head['base']}.vectors.npy").is_file()  # type: ignore[index]
    loaded.remove(list(range(7, 207)))  # tombstones in the base
    loaded.add(ids[3000:], vectors[3000:])  # and a delta beside it
    held_ids, held = ids[200:], vectors[200:]
    queries = unit_rows(60, dimension=32, seed=1, clusters=30)
    for query in queries:
        found = loaded.search(query, 10)
        assert [i for i, _ in found] == exact(held, held_ids, query, 10)
        rows = [i - 207 for i, _ in found]
        assert [s for _, s in found] == pytest.approx((held[rows] @ query).tolist(), abs=1e-6)
    loaded.save(path)
    again = FaissVectorIndex.load(path, 32)
    assert again.kind == "flat-fp16" and len(again) == 3000
    assert [i for i, _ in again.search(queries[0], 10)] == exact(held, held_ids, queries[0], 10)


@pytest.mark.parametrize("kind", ["flat", "flat-fp16", "ivf-sq8"])
def test_removed_ids_passed_over_without_a_selector_give_the_selector_s_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(backend, "LOG_MIN", 100)  # a flat base too, not a log alone
    path = tmp_path / "v"
    vectors = unit_rows(3000, dimension=32, clusters=30)
    ids = np.arange(3000, dtype=np.int64) * 3 + 1
    index = FaissVectorIndexType(kind).empty(32)
    index.add(ids, vectors)
    index.save(path)
    loaded = FaissVectorIndexType(kind).load(path, 32)
    assert loaded.kind == kind and len(loaded._base) == 3000
    removed = [int(i) for i in ids[::7]]  # 429 tombstones in the base
    loaded.remove(removed)
    queries = np.concatenate([vectors[:40:2], unit_rows(20, dimension=32, seed=1, clusters=30)])
    unselected = [loaded.search(query, 10) for query in queries]
    monkeypatch.setattr(kinds, "UNSELECTED_MAX", 0)  # the IDSelector from here
    selected = [loaded.search(query, 10) for query in queries]
    assert unselected == selected
    assert not {i for found in unselected for i, _ in found} & set(removed)
    if kind != "ivf-sq8":  # exact candidates: the exact 10 of the live rows
        live = np.ones(3000, dtype=bool)
        live[::7] = False
        for query, found in zip(queries, unselected, strict=True):
            assert [i for i, _ in found] == exact(vectors[live], ids[live], query, 10)


def test_hnsw_cannot_remove_so_removed_ids_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "v"
    vectors = unit_rows(300)
    index = FaissVectorIndexType("hnsw").empty(16)
    index.add(np.arange(300, dtype=np.int64), vectors)
    index.save(path)
    loaded = FaissVectorIndexType("hnsw").load(path, 16)
    assert loaded.kind == "hnsw"
    loaded.remove([5])
    loaded.save(path)
    again = FaissVectorIndexType("hnsw").load(path, 16)
    assert 5 not in dict(again.search(vectors[5], 20)) and len(again) == 299
    assert again.search(vectors[6], 1)[0][0] == 6


def test_a_base_another_process_replaced_is_not_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "v"
    vectors = unit_rows(10)
    one = FaissVectorIndex.empty(16)
    one.add(np.arange(5, dtype=np.int64), vectors[:5])
    one.save(path)
    two = FaissVectorIndex.load(path, 16)
    two.add(np.array([5], dtype=np.int64), vectors[5:6])
    two.save(path)
    # ``one`` was not refreshed (its owner would reload first): a whole save, not a stale append
    one.add(np.array([9], dtype=np.int64), vectors[9:10])
    one.save(path)
    loaded = FaissVectorIndex.load(path, 16)
    assert sorted(i for i, _ in loaded.search(vectors[0], 10)) == [0, 1, 2, 3, 4, 9]


def test_a_damaged_log_does_not_load(tmp_path: Path) -> None:
    path = tmp_path / "v"
    index = FaissVectorIndex.empty(16)
    index.add(np.arange(3, dtype=np.int64), unit_rows(3))
    index.save(path)
    (log_file,) = tmp_path.glob("v.*.log")
    log_file.write_bytes(log_file.read_bytes()[:-7])
    with pytest.raises(ValueError):
        FaissVectorIndex.load(path, 16)


def test_a_delta_in_several_segments_answers_as_one_exact_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big file's vectors fill several of the delta's segments (here of 64 rows):
    searches, scores, removals, a new base taken between calls of ``between`` and a
    save and load all give what one exact index of the live rows gives."""
    monkeypatch.setattr(backend, "SEGMENT_ROWS", 64)
    monkeypatch.setattr(backend, "SNAPSHOT_ROWS", 50)
    monkeypatch.setattr(backend, "LOG_MIN", 100)
    vectors = unit_rows(900)
    ids = np.arange(900, dtype=np.int64) + 10
    index = FaissVectorIndex.empty(16)
    for start in range(0, 900, 256):  # as a big file's mirror update adds them
        index.add(ids[start : start + 256], vectors[start : start + 256])
    gone = list(range(10, 910, 7))  # across every segment
    index.remove(gone)
    keep = ~np.isin(ids, gone)
    assert len(index) == int(keep.sum())
    for n in (0, 333, 899):
        found = index.search(vectors[n], 20)
        assert [i for i, _ in found] == exact(vectors[keep], ids[keep], vectors[n], 20)
        assert [s for _, s in found] == pytest.approx(
            sorted((vectors[keep] @ vectors[n]).tolist(), reverse=True)[:20], abs=1e-5
        )
    scored = index.similarity(vectors[5], [int(ids[5]), int(ids[701]), 10])  # 10 was removed
    assert set(scored) == {int(ids[5]), int(ids[701])}
    assert scored[int(ids[701])] == pytest.approx(float(vectors[701] @ vectors[5]), abs=1e-5)
    calls: list[int] = []
    _, _, delta_ids, copied = index._snapshot(lambda: calls.append(1))
    assert len(calls) >= 900 // 64  # the copy let searches in between
    assert sorted(delta_ids.tolist()) == ids[keep].tolist()
    assert np.array_equal(copied, vectors[delta_ids - 10])
    index.save(tmp_path / "v")
    loaded = FaissVectorIndex.load(tmp_path / "v", 16)
    assert [i for i, _ in loaded.search(vectors[400], 15)] == exact(
        vectors[keep], ids[keep], vectors[400], 15
    )
