"""The embedded index: SQLite store + the vector and keyword indexes mirroring it, in a
folder."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from backends.test_segments import released
from citeline.backends.embedded import EmbeddedIndex, IndexFolderRefused, check_configured_folder
from citeline.backends.faiss import FaissVectorIndex
from citeline.backends.sqlite.store import rebuild_marker
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.index import FileUpdate, IndexIdentity, NewChunk
from updates import file_update

IDENTITY = IndexIdentity("model-a", "a.gguf", 3, ChunkSettings())


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def add_file(index: EmbeddedIndex, path: str, key: str, vector: np.ndarray) -> list[int]:
    chunk = NewChunk(Chunk(path, "T", (), "x", 1, 1, None, 0), key, "x")
    _, added = index.replace_file(file_update(path, [chunk], vector.reshape(1, -1)))
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


def test_the_keyword_index_follows_the_store_and_is_rebuilt_when_stale_or_damaged(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        (first,) = add_file(index, "a.md", "k", unit([0, 0, 1]))
        (second,) = add_file(index, "b.md", "k", unit([0, 0, 1]))
    assert sorted(i for i, _ in index.keyword_search(["x"], 5)) == [first, second]
    assert index.document_frequencies(["x"]) == (2, {"x": 2})
    index.close()
    # a crash after a store commit but before the keyword file was saved
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    index.store.remove_files(["a.md"])
    index.close()
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert [i for i, _ in index.keyword_search(["x"], 5)] == [second]
    generation = index.store.generation
    index.close()
    # damaged files at the right generation are rebuilt too
    for npy in tmp_path.glob("keywords.postings.*.npy"):
        npy.write_bytes(b"garbage")
    (tmp_path / "keywords.postings.json").write_text(json.dumps({"generation": generation}))
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert [i for i, _ in index.keyword_search(["x"], 5)] == [second]
    index.close()


def test_keyword_files_damaged_inside_are_rebuilt_on_the_search_that_meets_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        added = [add_file(index, f"{i}.md", "k", unit([0, 0, 1]))[0] for i in range(5000)]
    index.close()
    (rows,) = tmp_path.glob("keywords.postings.*.rows.npy")
    data = bytearray(rows.read_bytes())
    data[-4000:] = b"\xff" * 4000  # positions far past the last row, same size
    rows.write_bytes(bytes(data))
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with caplog.at_level(logging.WARNING, logger="citeline"):
        found = index.keyword_search(["x"], 3)
    assert [i for i, _ in found] == sorted(added)[:3]
    assert any("keyword index is damaged" in r.getMessage() for r in caplog.records)
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
    assert reader.keyword_search(["x"], 1)[0][0] == added
    assert (tmp_path / ".gitignore").read_text().strip().endswith("*")
    reader.close()
    writer.close()


def _damaged_names(folder: Path) -> list[str]:
    return sorted(p.name.split(".damaged-")[0] for p in folder.glob("*.damaged-*"))


def test_a_damaged_store_is_moved_aside_and_rebuilt_saying_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    add_file(index, "a.md", "k1", unit([1, 0, 0]))
    index.close()
    (tmp_path / "index.sqlite3").write_bytes(b"\0garbage" * 4000)
    (tmp_path / "index.sqlite3-wal").write_bytes(b"more garbage")
    with caplog.at_level(logging.WARNING, logger="citeline"):
        index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert index.files() == {} and len(index.vectors) == 0  # rebuilt: empty, consistent
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "damaged" in warnings[0] and "moved it aside" in warnings[0]
    assert _damaged_names(tmp_path)[0] == "index.sqlite3"
    assert (
        not (tmp_path / "index.sqlite3-wal").exists()
        or (tmp_path / "index.sqlite3-wal").stat().st_size != 12
    )
    add_file(index, "a.md", "k1", unit([1, 0, 0]))
    assert set(index.files()) == {"a.md"}
    index.close()


def test_a_store_marked_damaged_in_use_is_rebuilt_on_open(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    add_file(index, "a.md", "k1", unit([1, 0, 0]))
    index.close()
    rebuild_marker(tmp_path / "index.sqlite3").touch()
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert index.files() == {} and not rebuild_marker(tmp_path / "index.sqlite3").exists()
    assert _damaged_names(tmp_path) == ["index.sqlite3"]


@pytest.mark.parametrize(
    "name",
    ["lock", "vectors.faiss", "vectors.faiss.json", "keywords.postings", "keywords.postings.json"],
)
def test_a_folder_in_place_of_a_file_is_moved_aside(tmp_path: Path, name: str) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    add_file(index, "a.md", "k1", unit([1, 0, 0]))
    with index.writing():
        pass
    index.close()
    (tmp_path / name).unlink()
    (tmp_path / name).mkdir()
    (tmp_path / name / "inside").write_text("x")
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        add_file(index, "b.md", "k2", unit([0, 1, 0]))
    assert set(index.files()) == {"a.md", "b.md"}
    assert (tmp_path / name).is_file() and _damaged_names(tmp_path) == [name]
    assert (next(tmp_path.glob(f"{name}.damaged-*")) / "inside").read_text() == "x"  # kept


def test_a_fifo_as_lock_never_blocks(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    os.mkfifo(tmp_path / "lock")
    with index.writing():
        add_file(index, "a.md", "k1", unit([1, 0, 0]))
    assert (tmp_path / "lock").is_file() and _damaged_names(tmp_path) == ["lock"]


def test_a_file_in_place_of_the_index_folder_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / ".citeline").write_text("not a folder")
    index = EmbeddedIndex(tmp_path / ".citeline", IDENTITY, FaissVectorIndex)
    assert (tmp_path / ".citeline").is_dir() and index.files() == {}
    assert _damaged_names(tmp_path) == [".citeline"]


def test_vectors_added_on_their_own_survive_without_a_file(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        index.add_vectors({"k1": unit([1, 0, 0])})
        # killed here, before any file commit: the vector is already on disk
        other = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
        assert set(other.vectors_for_keys(["k1"])) == {"k1"}
        other.close()


def test_a_configured_index_folder_that_is_not_an_index_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# mine\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("a\n")
    (tmp_path / "link").symlink_to(tmp_path / "notes")
    for name in ("README.md", "notes", "link"):
        with pytest.raises(IndexFolderRefused, match="leaves it alone"):
            check_configured_folder(tmp_path / name)
    assert (tmp_path / "README.md").read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "link", "notes"]
    check_configured_folder(tmp_path / "missing")  # free: fine
    (tmp_path / "empty").mkdir()
    check_configured_folder(tmp_path / "empty")
    index = EmbeddedIndex(tmp_path / "empty", IDENTITY, FaissVectorIndex)
    index.close()
    (tmp_path / "empty" / "index.sqlite3").unlink()
    check_configured_folder(tmp_path / "empty")  # its .gitignore says it is Citeline's


def test_a_writer_waiting_for_the_lock_lets_work_in_and_says_who_it_waits_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import threading
    import time

    first = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    second = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with first.writing():
            add_file(first, "a.md", "k1", unit([1, 0, 0]))
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)
    second.refresh()  # a writer is at work: the loaded mirrors stay, nothing rebuilt
    assert second.dense_search(unit([1, 0, 0]).reshape(1, -1), 1) == []
    calls: list[float] = []

    def between() -> None:
        calls.append(time.monotonic())
        if len(calls) == 50:
            release.set()

    with caplog.at_level(logging.WARNING), second.writing(between):
        assert set(second.files()) == {"a.md"}
    thread.join(10)
    assert len(calls) >= 50
    said = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert len(said) == 1 and f"pid {os.getpid()}" in said[0] and "is indexing" in said[0]
    assert second.dense_search(unit([1, 0, 0]).reshape(1, -1), 1)  # taken up after
    first.close()
    second.close()


def test_a_long_batch_saves_its_mirrors_as_it_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every SAVE_EVERY_CHUNKS chunks a batch saves its mirrors (their memory becomes a
    mapped base): a process opening the index meanwhile loads them as committed."""
    from citeline.backends import embedded

    monkeypatch.setattr(embedded, "SAVE_EVERY_CHUNKS", 3)
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    seen: list[tuple[int | None, int]] = []
    with index.writing():
        for n in range(7):
            add_file(index, f"{n}.md", f"k{n}", unit([1, n + 1, 0]))
            seen.append((index._saved_generation(index.vectors_path), index.store.generation))
    saved_at = [n for n, (saved, generation) in enumerate(seen) if saved == generation]
    assert saved_at == [2, 5]  # after the 3rd and the 6th file
    assert index._saved_generation(index.keywords_path) == index.store.generation  # the end
    other = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert len(other.vectors) == 7 and len(other.keywords) == 7
    other.close()


def _add_text(index: EmbeddedIndex, path: str, text: str, vector: np.ndarray) -> None:
    key = f"key-{path}"
    index.replace_file(
        FileUpdate(
            path=path,
            kind="markdown",
            title="T",
            content_hash="h",
            size=1,
            mtime_ns=1,
            chunks=[NewChunk(Chunk(path, "T", (), text, 1, 1, None, 0), key, text)],
            chunk_vectors=vector.reshape(1, -1),
            new_vectors={key: vector},
        )
    )


def test_script_means_average_each_kind_of_text_and_follow_a_large_change(
    tmp_path: Path,
) -> None:
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    english = [unit([1, 0, 0.1 * i]) for i in range(8)]
    chinese = [unit([0, 1, 0.1 * i]) for i in range(8)]
    with index.writing():
        for i, vector in enumerate(english):
            _add_text(index, f"en{i}.md", f"an English paragraph number {i}", vector)
        _add_text(index, "zh0.md", "一段中文的文字", chinese[0])
    means = index.script_means()
    assert set(means) == {False}  # one Chinese chunk is too few for a mean
    np.testing.assert_allclose(means[False], np.mean(english, axis=0), rtol=1e-6)
    with index.writing():
        for i, vector in enumerate(chinese[1:], start=1):
            _add_text(index, f"zh{i}.md", f"第{i}段中文的文字，讲的是别的事情", vector)
    means = index.script_means()  # 9 → 16 chunks: taken again
    np.testing.assert_allclose(means[True], np.mean(chinese, axis=0), rtol=1e-6)
    np.testing.assert_allclose(means[False], np.mean(english, axis=0), rtol=1e-6)
    with index.writing():  # one chunk more (1 of 16): the means kept are served
        _add_text(index, "zh-extra.md", "又一段中文", unit([0, 0, 1]))
    assert index.script_means() is means
    index.close()


def _mirror_ids(index: EmbeddedIndex) -> tuple[set[int], set[int]]:
    """The chunk ids each mirror holds (for comparing them with the store's)."""
    from citeline.backends.faiss.index import _contents

    assert isinstance(index.vectors, FaissVectorIndex)
    dense = {int(i) for i in _contents(*index.vectors._snapshot())[0]}
    base, dead, added = index.keywords._snapshot()
    words = {int(i) for i in np.asarray(base.ids)[~dead]} | set(added)
    return dense, words


def test_a_save_is_searchable_before_the_compaction_it_makes_due_and_during_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose save makes a new base due only appends to the logs: its chunks are
    searchable and saved when it ends, and the base is written after, on a thread of
    its own.  A batch arriving while that base is still being written (held here until
    the test lets it go) is searchable and saved at its end too; the new base is taken
    up afterwards, holding both, and the old base's files are gone."""
    import threading

    from citeline.backends.faiss import index as faiss_index
    from citeline.backends.faiss import kinds
    from citeline.backends.postings import index as postings_index

    monkeypatch.setattr(faiss_index, "LOG_MIN", 40)
    monkeypatch.setattr(postings_index, "LOG_MIN", 40)
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    with index.writing():
        for n in range(120):
            _add_text(index, f"{n}.md", f"plain text {n}", unit([1, n + 1, 0]))
    index.close()  # its new bases taken up
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert not index.compacting
    first = json.loads(index.vectors_path.read_text())["token"]

    gate, writing_base = threading.Event(), threading.Event()
    write_base, write_streamed = kinds.write_base, kinds.write_streamed

    def held_write_base(*args: object, **kwargs: object) -> None:
        writing_base.set()
        assert gate.wait(60)
        write_base(*args, **kwargs)  # type: ignore[arg-type]

    def held_write_streamed(*args: object, **kwargs: object) -> None:
        writing_base.set()
        assert gate.wait(60)
        write_streamed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kinds, "write_base", held_write_base)  # the kinds written at once
    monkeypatch.setattr(kinds, "write_streamed", held_write_streamed)  # a block at a time
    n = 0
    while not index.compacting:  # edits until a save finds the logs past their share
        n += 1
        with index.writing():
            _add_text(index, f"{n}.md", f"edited text {n} zebra{n}", unit([n, 1, 1]))
        assert index.keyword_search([f"zebra{n}"], 5), n  # searchable as the batch ends
    assert n > 1
    assert writing_base.wait(60)  # the new vector base is being written now
    assert json.loads(index.vectors_path.read_text())["token"] == first  # the old one, on disk
    assert index._mirrors_saved()  # ...with the log holding the edit
    reader = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)  # what a crash would leave
    assert reader.keyword_search([f"zebra{n}"], 5) and reader._mirrors_saved()
    reader.close()

    # A save while the base is written: not held behind it.
    with index.writing():
        _add_text(index, "late.md", "arrived during compaction quagga", unit([0, 1, 5]))
    assert index.vectors.compacting  # still held
    hit = index.keyword_search(["quagga"], 5)[0][0]
    assert index.dense_search(unit([0, 1, 5]).reshape(1, -1), 1)[0][0] == hit
    assert json.loads(index.vectors_path.read_text())["token"] == first

    gate.set()
    index.close()  # waits for the base and takes it up
    second = json.loads(index.vectors_path.read_text())["token"]
    released()
    assert second != first and not list(tmp_path.glob(f"vectors.faiss.{first}.*"))
    index = EmbeddedIndex(tmp_path, IDENTITY, FaissVectorIndex)
    assert index._mirrors_saved()  # loaded as saved, not rebuilt
    assert index.keyword_search(["quagga"], 5)[0][0] == hit
    assert index.dense_search(unit([0, 1, 5]).reshape(1, -1), 1)[0][0] == hit
    stored = {int(i) for ids, _ in index.store.iter_chunk_vectors(3) for i in ids}
    assert _mirror_ids(index) == (stored, stored)
    index.close()
