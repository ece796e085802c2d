import sqlite3
from pathlib import Path

import numpy as np
import pytest

from citeline.backends.sqlite.store import SqliteStore, StoreError
from citeline.core.documents import Chunk
from citeline.core.index import IndexCounts, NewChunk


def chunk(text: str, ordinal: int = 0, path: str = "a.md") -> Chunk:
    return Chunk(path, "T", ("H",), text, 1, 2, None, ordinal)


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(4).astype(np.float32)
    return v / np.linalg.norm(v)


def test_replace_file_swaps_chunks_and_bumps_generation(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    g0 = store.generation
    removed, added = store.replace_file(
        path="a.md",
        kind="markdown",
        title="T",
        content_hash="h1",
        size=1,
        mtime_ns=1,
        chunks=[NewChunk(chunk("one"), "k1"), NewChunk(chunk("two", 1), "k2")],
        new_vectors={"k1": vec(1), "k2": vec(2)},
    )
    assert removed == [] and len(added) == 2 and store.generation == g0 + 1
    removed2, added2 = store.replace_file(
        path="a.md",
        kind="markdown",
        title="T",
        content_hash="h2",
        size=1,
        mtime_ns=2,
        chunks=[NewChunk(chunk("one"), "k1")],
        new_vectors={},
    )
    assert sorted(removed2) == sorted(added) and len(added2) == 1
    assert store.counts() == IndexCounts(1, 1)
    assert store.chunks_by_id(added2)[added2[0]].text == "one"
    # the vector of the dropped chunk is kept for a while (a rename may bring it back)
    assert set(store.vectors_for_keys(["k1", "k2", "k3"], 4)) == {"k1", "k2"}
    assert store.prune_vectors(older_than_seconds=-1) == 1
    assert set(store.vectors_for_keys(["k1", "k2"], 4)) == {"k1"}


def test_failed_transaction_leaves_old_version(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.replace_file(
        path="a.md",
        kind="markdown",
        title="T",
        content_hash="h1",
        size=1,
        mtime_ns=1,
        chunks=[NewChunk(chunk("one"), "k1")],
        new_vectors={"k1": vec(1)},
    )
    # the second chunk cannot be stored: the first is already written when it fails
    broken = NewChunk(Chunk("a.md", "T", (object(),), "bad", 1, 2, None, 1), "k9")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.replace_file(
            path="a.md",
            kind="markdown",
            title="T",
            content_hash="h2",
            size=1,
            mtime_ns=2,
            chunks=[NewChunk(chunk("new"), "k9"), broken],
            new_vectors={"k9": vec(9)},
        )
    files = store.files()
    assert files["a.md"].content_hash == "h1" and store.counts() == IndexCounts(1, 1)


def test_errors_and_removal(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.replace_file(
        path="bad.pdf",
        kind="unknown",
        title="bad.pdf",
        content_hash="h",
        size=1,
        mtime_ns=1,
        chunks=[],
        new_vectors={},
        error="PDF is encrypted",
    )
    assert store.file_errors() == [("bad.pdf", "PDF is encrypted")]
    assert store.counts() == IndexCounts(0, 0)
    store.remove_files(["bad.pdf"])
    assert store.file_errors() == []


def test_damaged_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="damaged"):
        SqliteStore(path)


def test_rows_are_plain_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.set_meta("embedder", "x")
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone() == ("x",)
