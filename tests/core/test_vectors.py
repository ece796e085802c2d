from pathlib import Path

import numpy as np

from citeline.core.documents import Chunk
from citeline.core.store import NewChunk, Store
from citeline.core.vectors import VectorIndex


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_remove_and_search_by_chunk_id() -> None:
    index = VectorIndex(3)
    index.add(np.array([10, 20, 30]), np.stack([unit([1, 0, 0]), unit([0, 1, 0]), unit([1, 1, 0])]))
    assert [i for i, _ in index.search(unit([1, 0.1, 0]), 2)] == [10, 30]
    index.remove([10])
    assert index.ids() == {20, 30}
    assert index.search(unit([1, 0, 0]), 5)[0][0] == 30


def test_stale_or_missing_file_is_rebuilt_from_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    _, ids = store.replace_file(
        path="a.md",
        kind="markdown",
        title="T",
        content_hash="h",
        size=1,
        mtime_ns=1,
        chunks=[NewChunk(Chunk("a.md", "T", (), "x", 1, 1, None, 0), "k")],
        new_vectors={"k": unit([0, 0, 1])},
    )
    path = tmp_path / "v.faiss"
    opened = VectorIndex.open(path, store, 3)  # no file yet: rebuilt and saved
    assert opened.ids() == set(ids) and path.exists()
    # simulate a crash after a store commit but before the vector file was saved
    store.remove_files(["a.md"])
    assert VectorIndex.open(path, store, 3).ids() == set()
    # a garbage file is rebuilt too
    path.write_bytes(b"garbage")
    (tmp_path / "v.faiss.json").write_text(f'{{"generation": {store.generation}}}')
    assert len(VectorIndex.open(path, store, 3)) == 0
