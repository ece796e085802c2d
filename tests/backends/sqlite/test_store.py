import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citeline.backends.sqlite import store as store_module
from citeline.backends.sqlite.store import SqliteStore, StoreDamaged, StoreError, rebuild_marker
from citeline.core.documents import Chunk
from citeline.core.errors import DiskFull
from citeline.core.index import FileUpdate, IndexCounts, NewChunk
from updates import file_update


def chunk(text: str, ordinal: int = 0, path: str = "a.md") -> Chunk:
    return Chunk(path, "T", ("H",), text, 1, 2, None, ordinal)


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(4).astype(np.float32)
    return v / np.linalg.norm(v)


def put(
    store: SqliteStore,
    content_hash: str,
    chunks: Sequence[NewChunk] = (),
    vectors: Mapping[str, np.ndarray] | None = None,
    *,
    path: str = "a.md",
    kind: str = "markdown",
    title: str = "T",
    mtime_ns: int = 1,
    **extra: Any,
) -> tuple[list[int], list[int]]:
    """``replace_file`` with what these tests do not vary filled in."""
    return store.replace_file(
        file_update(
            path,
            list(chunks),
            np.zeros((len(chunks), 4), np.float32),  # the vector index's
            new_vectors=dict(vectors or {}),
            kind=kind,
            title=title,
            content_hash=content_hash,
            mtime_ns=mtime_ns,
            **extra,
        )
    )


def test_replace_file_swaps_chunks_and_bumps_generation(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    g0 = store.generation
    removed, added = put(
        store,
        "h1",
        [NewChunk(chunk("one"), "k1"), NewChunk(chunk("two", 1), "k2")],
        {"k1": vec(1), "k2": vec(2)},
    )
    assert removed == [] and len(added) == 2 and store.generation == g0 + 1
    removed2, added2 = put(store, "h2", [NewChunk(chunk("one"), "k1")], mtime_ns=2)
    assert sorted(removed2) == sorted(added) and len(added2) == 1
    assert store.counts() == IndexCounts(1, 1)
    assert store.chunks_by_id(added2)[added2[0]].text == "one"
    # the vector of the dropped chunk is kept for a while (a rename may bring it back)
    assert set(store.vectors_for_keys(["k1", "k2", "k3"], 4)) == {"k1", "k2"}
    assert store.prune_vectors(older_than_seconds=-1) == 1
    assert set(store.vectors_for_keys(["k1", "k2"], 4)) == {"k1"}
    put(store, "h3", mtime_ns=3)
    assert store.prune_vectors(older_than_seconds=-1) == 0  # pruned within the hour
    assert store.prune_vectors(older_than_seconds=-1, every_seconds=0) == 1


def test_failed_transaction_leaves_old_version(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    put(store, "h1", [NewChunk(chunk("one"), "k1")], {"k1": vec(1)})
    # the second chunk cannot be stored: the first is already written when it fails
    broken = NewChunk(Chunk("a.md", "T", (object(),), "bad", 1, 2, None, 1), "k9")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        put(store, "h2", [NewChunk(chunk("new"), "k9"), broken], {"k9": vec(9)}, mtime_ns=2)
    files = store.files()
    assert files["a.md"].content_hash == "h1" and store.counts() == IndexCounts(1, 1)


def test_errors_and_removal(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    put(store, "h", path="bad.pdf", kind="unknown", title="bad.pdf", error="PDF is encrypted")
    assert store.file_errors() == [("bad.pdf", "PDF is encrypted")]
    assert store.counts() == IndexCounts(0, 0)
    store.remove_files(["bad.pdf"])
    assert store.file_errors() == []


def test_damaged_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreDamaged, match="damaged"):
        SqliteStore(path)


def _filled(path: Path, files: int = 40) -> None:
    store = SqliteStore(path)
    for f in range(files):
        put(
            store,
            str(f),
            [NewChunk(chunk("word " * 200, i, f"f{f}.md"), f"k{f}-{i}") for i in range(5)],
            {f"k{f}-{i}": vec(f * 10 + i) for i in range(5)},
            path=f"f{f}.md",
        )
    store.close()


@pytest.mark.parametrize(
    "damage",
    ["truncated", "overwritten", "header zeroed", "pages overwritten", "a folder", "wal a folder"],
)
def test_every_kind_of_damage_is_store_damaged(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.db"
    _filled(path)
    size = path.stat().st_size
    if damage == "truncated":
        with path.open("r+b") as handle:
            handle.truncate(size // 2)
    elif damage == "overwritten":
        path.write_bytes(np.random.default_rng(0).bytes(size))
    elif damage == "header zeroed":
        with path.open("r+b") as handle:
            handle.write(bytes(100))
    elif damage == "pages overwritten":
        with path.open("r+b") as handle:
            handle.seek(4096 * 3)
            handle.write(np.random.default_rng(1).bytes(4096 * 8))
    elif damage == "a folder":
        path.unlink()
        path.mkdir()
    else:
        (tmp_path / "s.db-wal").mkdir()
    with pytest.raises(StoreDamaged, match="damaged"):
        store = SqliteStore(path)
        store.files()  # damage the open check cannot see shows up on first use
        store.chunks_by_id(list(range(1, 300)))


def test_damage_met_in_use_marks_the_database_for_rebuilding(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _filled(path)
    store = SqliteStore(path)
    store._db.execute("PRAGMA cache_size=1")  # so pages are read again from the file
    with path.open("r+b") as handle:  # damaged behind the open connection's back
        handle.seek(4096 * 2)
        handle.write(np.random.default_rng(2).bytes(path.stat().st_size - 4096 * 2))
    with pytest.raises(StoreDamaged):
        for _ in range(3):
            store.chunks_by_id(list(range(1, 300)))
            store.keywords.search(["word"], 10)
    store.close()
    assert rebuild_marker(path).exists()
    with pytest.raises(StoreDamaged, match="found damaged while in use"):
        SqliteStore(path)


def test_other_problems_are_errors_not_damage(tmp_path: Path) -> None:
    path = tmp_path / "missing-folder" / "s.db"
    with pytest.raises(StoreError) as info:
        SqliteStore(path)
    assert not isinstance(info.value, StoreDamaged)


def test_a_name_that_is_not_utf8_is_stored_losslessly(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    name = os.fsdecode(b"notes/caf\xe9-\xff.md")  # Latin-1 bytes: lone surrogates
    for path, key in ((name, "k1"), ("notes/café.md", "k2")):
        put(store, "h", [NewChunk(chunk("text", 0, path), key)], {key: vec(1)}, path=path)
    assert set(store.files()) == {name, "notes/café.md"}
    ids = store.chunk_ids_for(name)
    assert len(ids) == 1 and store.chunks_by_id(ids)[ids[0]].path == name
    store.touch_file(name, 5, 6)
    assert (store.files()[name].size, store.files()[name].mtime_ns) == (5, 6)
    assert os.fsencode(store.files()[name].path) == b"notes/caf\xe9-\xff.md"
    store.remove_files([name])
    assert set(store.files()) == {"notes/café.md"}


def test_notes_are_kept_with_the_file(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    put(
        store,
        "h",
        [NewChunk(chunk("text", 0, "a.pdf"), "k")],
        {"k": vec(1)},
        path="a.pdf",
        kind="pdf",
        note="left out 3 running header/footer line(s)",
    )
    assert store.file_notes() == [("a.pdf", "left out 3 running header/footer line(s)")]
    assert store.files()["a.pdf"].note == "left out 3 running header/footer line(s)"


def test_an_index_from_before_notes_gets_the_column(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX files_note")  # an index from before notes had neither
    db.execute("ALTER TABLE files DROP COLUMN note")
    db.commit()
    db.close()
    store = SqliteStore(path)
    assert store.file_notes() == []
    assert store.counts().files == 0


def test_what_an_update_reports_is_read_from_partial_indexes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    plans = {
        query: " ".join(str(row[3]) for row in store._db.execute(f"EXPLAIN QUERY PLAN {query}"))
        for query in (
            "SELECT path, error FROM files WHERE error IS NOT NULL",
            "SELECT path, note FROM files WHERE note IS NOT NULL AND error IS NULL",
            "SELECT count(*) FROM files WHERE error IS NOT NULL",
        )
    }
    assert all("files_error" in plan or "files_note" in plan for plan in plans.values()), plans
    store.close()


def test_vectors_are_kept_on_their_own(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    generation = store.generation
    store.add_vectors({"k1": vec(1), "k2": vec(2)})
    store.add_vectors({})
    assert set(store.vectors_for_keys(["k1", "k2"], 4)) == {"k1", "k2"}
    assert np.allclose(store.vectors_for_keys(["k1"], 4)["k1"], vec(1))
    assert store.generation == generation  # no chunk changed
    store.close()
    again = SqliteStore(tmp_path / "s.db")  # committed: another handle sees them
    assert set(again.vectors_for_keys(["k1", "k2"], 4)) == {"k1", "k2"}


def test_rows_are_plain_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.set_meta("embedder", "x")
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone() == ("x",)


def test_a_snapshot_reads_what_is_there_and_every_write_is_disk_full(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    put(store, "h1", [NewChunk(chunk("one"), "k1")], {"k1": vec(1)})
    generation = store.generation
    store.close()
    snapshot = SqliteStore(tmp_path / "s.db", snapshot=True)
    assert snapshot.files()["a.md"].content_hash == "h1"
    assert snapshot.generation == generation and snapshot.counts() == IndexCounts(1, 1)
    snapshot.set_meta("generation", str(generation))  # the same value: nothing written
    with pytest.raises(DiskFull, match="the disk is full"):
        put(snapshot, "h2", mtime_ns=2)
    with pytest.raises(DiskFull):
        snapshot.add_vectors({"k2": vec(2)})
    snapshot.close()
    assert not (tmp_path / "s.db-wal").exists()  # opened without its journal files
    again = SqliteStore(tmp_path / "s.db")
    assert again.files()["a.md"].content_hash == "h1"  # nothing was half-written
    again.close()


def test_a_big_file_is_written_in_slices_and_readers_see_it_whole(tmp_path: Path) -> None:
    """Between slices of a big file's commit, ``between`` runs (a daemon's searches):
    the old version's chunks still read on this connection, and another connection
    sees the old file until the commit, then the new one, never a part of it."""
    store = SqliteStore(tmp_path / "s.db")
    _, old = put(store, "h1", [NewChunk(chunk(f"old {i}", i), f"o{i}") for i in range(3)])
    other = sqlite3.connect(tmp_path / "s.db")

    def visible() -> list[str]:
        return [
            r[0]
            for r in other.execute(
                "SELECT text FROM chunks JOIN files ON files.id = chunks.file_id"
                " WHERE files.path = 'a.md' ORDER BY ordinal"
            )
        ]

    seen: list[tuple[int, list[str], list[str]]] = []

    def between() -> None:
        here = [c.text for c in store.chunks_by_id(old).values()]
        seen.append((store.generation, sorted(here), visible()))

    count = 3 * store_module.INSERT_SLICE + 5
    new = [NewChunk(chunk(f"new {i}", i), f"n{i}") for i in range(count)]
    generation = store.generation
    removed, added = store.replace_file(
        FileUpdate(
            path="a.md",
            kind="markdown",
            title="T",
            content_hash="h2",
            size=1,
            mtime_ns=2,
            chunks=new,
            chunk_vectors=np.zeros((count, 4), np.float32),
            new_vectors={},
        ),
        between,
    )
    assert len(seen) == 3  # after each slice but the last
    olds = sorted(f"old {i}" for i in range(3))
    assert all(s == (generation, olds, ["old 0", "old 1", "old 2"]) for s in seen)
    assert removed == old and len(added) == count
    assert store.chunks_by_id(old) == {}
    assert visible() == [f"new {i}" for i in range(count)]
    assert store.files()["a.md"].content_hash == "h2" and store.generation > generation
    assert store.counts() == IndexCounts(files=1, chunks=count)
