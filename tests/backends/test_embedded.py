"""The embedded index: SQLite store + a vector index mirroring it, in a folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.faiss import FaissVectorIndex
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.index import IndexIdentity, NewChunk

IDENTITY = IndexIdentity("model-a", "a.gguf", 3, ChunkSettings())


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def add_file(index: EmbeddedIndex, path: str, key: str, vector: np.ndarray) -> list[int]:
    _, added = index.replace_file(
        path=path,
        kind="markdown",
        title="T",
        content_hash="h",
        size=1,
        mtime_ns=1,
        chunks=[NewChunk(Chunk(path, "T", (), "x", 1, 1, None, 0), key, "x")],
        chunk_vectors=vector.reshape(1, -1),
        new_vectors={key: vector},
    )
    return added


def test_stale_or_missing_vector_file_is_rebuilt_from_the_store(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        ids = add_file(index, "a.md", "k", unit([0, 0, 1]))
    assert index.vectors_path.exists()
    assert index.dense_search(unit([0, 0, 1]), 5)[0][0] == ids[0]
    index.close()
    # a crash after a store commit but before the vector file was saved
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    index.store.remove_files(["a.md"])
    index.close()
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert len(index.vectors) == 0
    index.close()
    # a garbage file at the right generation is rebuilt too
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    generation = index.store.generation
    index.close()
    (tmp_path / "vectors.faiss").write_bytes(b"garbage")
    (tmp_path / "vectors.faiss.json").write_text(json.dumps({"generation": generation}))
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert len(index.vectors) == 0
    index.close()


def test_another_model_clears_vectors_and_other_chunking_keeps_them(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        add_file(index, "a.md", "k", unit([1, 0, 0]))
    index.close()
    rechunked = IndexIdentity("model-a", "a.gguf", 3, ChunkSettings(max_cost=500))
    index = EmbeddedIndex(tmp_path, rechunked, FaissVectorIndex)
    assert index.files() == {} and set(index.vectors_for_keys(["k"])) == {"k"}
    index.close()
    other = IndexIdentity("model-b", "b.gguf", 3, ChunkSettings(max_cost=500))
    index = EmbeddedIndex(tmp_path, other, FaissVectorIndex)
    assert index.vectors_for_keys(["k"]) == {}
    assert index.store.get_meta("embedder") == other.embedder_key
    index.close()


def test_a_change_another_process_committed_is_picked_up_on_refresh(tmp_path: Path) -> None:
    reader = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    writer = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with writer.writing():
        (added,) = add_file(writer, "b.md", "kb", unit([0, 1, 0]))
    assert reader.dense_search(unit([0, 1, 0]), 1) == []
    reader.refresh()
    assert reader.dense_search(unit([0, 1, 0]), 1)[0][0] == added
    assert (tmp_path / ".gitignore").read_text().strip().endswith("*")
    reader.close()
    writer.close()
