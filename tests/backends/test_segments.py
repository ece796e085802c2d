"""The head and token files the base-and-log indexes share."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.backends import segments


def test_a_head_round_trips_and_refuses_another_format(tmp_path: Path) -> None:
    path = tmp_path / "head"
    with pytest.raises(FileNotFoundError, match="no thing at"):
        segments.read_head(path, "f/1", "thing")
    segments.write_head(path, {"format": "f/1", "log": "x"})
    assert segments.read_head(path, "f/1", "thing") == {"format": "f/1", "log": "x"}
    with pytest.raises(ValueError, match="another format"):
        segments.read_head(path, "f/2", "thing")
    path.write_bytes(b"\xff")
    with pytest.raises(ValueError, match="unreadable thing"):
        segments.read_head(path, "f/1", "thing")


def test_only_the_named_tokens_files_are_kept(tmp_path: Path) -> None:
    keep, old = segments.new_token(), segments.new_token()
    assert len(keep) == segments.TOKEN_LENGTH and keep != old
    names = [f"head.{keep}.log", f"head.{old}.log", f"head.{old}.rows.npy", "head.json", "other"]
    for name in names:
        (tmp_path / name).write_text("x")
    segments.remove_other_tokens(tmp_path / "head", keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"head.{keep}.log", "head.json", "other"]
    )


def test_a_log_grows_from_the_bytes_its_head_counts(tmp_path: Path) -> None:
    path = tmp_path / "head"
    (tmp_path / "head.t.log").write_bytes(b"okHALF-WRITTEN")  # a crash after the head said 2
    head = segments.append_log(path, {"format": "f/1", "log": "head.t.log", "log_bytes": 2}, b"+")
    assert head["log_bytes"] == 3 and (tmp_path / "head.t.log").read_bytes() == b"ok+"
    assert segments.read_head(path, "f/1", "thing") == head


def test_a_base_written_beside_lets_between_run_and_raises_its_error(tmp_path: Path) -> None:
    import threading

    ran = threading.Event()

    def work() -> str:  # done only once ``between`` ran on the caller's thread
        assert ran.wait(10)
        return "written"

    caller = threading.current_thread()
    threads: list[threading.Thread] = []

    def between() -> None:
        threads.append(threading.current_thread())
        ran.set()

    assert segments._beside(work, between) == "written"
    assert threads and all(t is caller for t in threads)

    def failing() -> str:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        segments._beside(failing, lambda: None)


def test_indexes_saved_beside_searches_are_the_indexes_saved_inline(tmp_path: Path) -> None:
    """A FAISS and a postings index compacted with ``between`` searching them all
    along: every search answers as before the save, and what is saved loads equal."""
    import numpy as np

    from citeline.backends.faiss.index import FaissVectorIndex
    from citeline.backends.postings import PostingsKeywordIndex

    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20_000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = FaissVectorIndex(64)
    dense.add(np.arange(len(vectors), dtype=np.int64), vectors)
    dense.remove([5, 6, 7])
    keywords = PostingsKeywordIndex()
    for i in range(20_000):
        keywords.add(i, f"w{i % 97} w{i % 13} common")
    keywords.remove([1, 2])
    query = vectors[:1]
    want_dense, want_kw = dense.search(query, 10), keywords.search(["w5", "common"], 10)
    searched: list[bool] = []

    def between() -> None:
        searched.append(
            dense.search(query, 10) == want_dense
            and keywords.search(["w5", "common"], 10) == want_kw
        )

    dense.save(tmp_path / "vectors", between)
    keywords.save(tmp_path / "keywords", between)
    assert all(searched)
    assert dense.search(query, 10) == want_dense
    assert keywords.search(["w5", "common"], 10) == want_kw
    assert FaissVectorIndex.load(tmp_path / "vectors", 64).search(query, 10) == want_dense
    assert PostingsKeywordIndex.load(tmp_path / "keywords").search(["w5", "common"], 10) == want_kw


def released() -> None:
    """Wait for the threads that delete old bases' files (``segments._release``)."""
    import threading

    for thread in threading.enumerate():
        if thread.name == "citeline-release":
            thread.join()


def test_a_compaction_after_the_save_keeps_the_changes_made_while_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``save(later=True)`` appends to the log and starts the due base on its own
    thread; changes and saves go on meanwhile (into the old log, and kept for the
    new one); once taken up the index answers as the same index compacted inline, and
    its files load equal to it, each old token's files gone."""
    import numpy as np

    from citeline.backends.faiss import index as faiss_index
    from citeline.backends.faiss.index import FaissVectorIndex
    from citeline.backends.postings import PostingsKeywordIndex
    from citeline.backends.postings import index as postings_index

    monkeypatch.setattr(faiss_index, "LOG_MIN", 50)
    monkeypatch.setattr(postings_index, "LOG_MIN", 50)
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    def grown(n: int) -> tuple[FaissVectorIndex, PostingsKeywordIndex]:
        dense, words = FaissVectorIndex(32), PostingsKeywordIndex()
        dense.add(np.arange(n, dtype=np.int64), vectors[:n])
        for i in range(n):
            words.add(i, f"w{i % 31} w{i % 7} all")
        return dense, words

    later = grown(2000)
    inline = grown(2000)
    for name, one, other in zip(("vectors", "keywords"), later, inline, strict=True):
        one.save(tmp_path / f"later-{name}")
        other.save(tmp_path / f"inline-{name}")

    def edit(dense: FaissVectorIndex, words: PostingsKeywordIndex, start: int) -> None:
        ids = np.arange(start, start + 250, dtype=np.int64)
        dense.add(ids, vectors[start : start + 250])
        dense.remove([int(start) - 1000, int(start) - 999])
        for i in ids.tolist():
            words.add(i, f"w{i % 31} fresh{i}")
        words.remove([int(start) - 1000])

    dense, words = later
    edit(dense, words, 2000)
    dense.save(tmp_path / "later-vectors", later=True)
    words.save(tmp_path / "later-keywords", later=True)
    assert dense.compacting and words.compacting
    edit(dense, words, 2250)  # while the bases are written
    dense.save(tmp_path / "later-vectors", later=True)
    words.save(tmp_path / "later-keywords", later=True)
    edit(dense, words, 2500)  # and not saved yet when they are taken up
    assert dense.settle(tmp_path / "later-vectors", wait=True)
    assert words.settle(tmp_path / "later-keywords", wait=True)
    assert not dense.compacting and not words.compacting

    for start in (2000, 2250, 2500):
        edit(*inline, start)
    for index, name in zip(inline, ("vectors", "keywords"), strict=True):
        index.save(tmp_path / f"inline-{name}")
    query = vectors[2300:2301]
    terms = ["w5", "fresh2300", "all"]
    assert dense.search(query, 20) == inline[0].search(query, 20)
    assert words.search(terms, 20) == inline[1].search(terms, 20)
    assert len(dense) == len(inline[0]) and len(words) == len(inline[1])
    dense.save(tmp_path / "later-vectors")  # the last edit, appended to the new log
    words.save(tmp_path / "later-keywords")
    loaded_dense = FaissVectorIndex.load(tmp_path / "later-vectors", 32)
    loaded_words = PostingsKeywordIndex.load(tmp_path / "later-keywords")
    assert loaded_dense.search(query, 20) == inline[0].search(query, 20)
    assert loaded_words.search(terms, 20) == inline[1].search(terms, 20)
    released()
    for name in ("later-vectors", "later-keywords"):
        tokens = {p.name.split(".")[1] for p in tmp_path.glob(f"{name}.*.*")}
        assert len(tokens) == 1, tokens


def test_a_save_that_waits_for_a_compaction_in_progress_runs_between_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save that must take up a running compaction first (a long batch's saves) runs
    ``between`` while the base is written (held here until ``between`` has run)."""
    import threading

    import numpy as np

    from citeline.backends.faiss import index as faiss_index
    from citeline.backends.faiss import kinds
    from citeline.backends.faiss.index import FaissVectorIndex

    monkeypatch.setattr(faiss_index, "LOG_MIN", 50)
    gate = threading.Event()
    write_base, write_streamed = kinds.write_base, kinds.write_streamed

    def held(*args: object, **kwargs: object) -> None:
        assert gate.wait(60)
        write_base(*args, **kwargs)  # type: ignore[arg-type]

    def held_streamed(*args: object, **kwargs: object) -> None:
        assert gate.wait(60)
        write_streamed(*args, **kwargs)  # type: ignore[arg-type]

    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((700, 16)).astype(np.float32)
    index = FaissVectorIndex(16)
    index.add(np.arange(600, dtype=np.int64), vectors[:600])
    index.save(tmp_path / "v")
    monkeypatch.setattr(kinds, "write_base", held)  # the kinds written at once
    monkeypatch.setattr(kinds, "write_streamed", held_streamed)  # and a block at a time
    index.add(np.arange(600, 700, dtype=np.int64), vectors[600:])
    index.save(tmp_path / "v", later=True)
    assert index.compacting
    calls: list[bool] = []

    def between() -> None:
        calls.append(index.compaction_done())
        if len(calls) == 3:
            gate.set()

    index.save(tmp_path / "v", between)
    assert len(calls) >= 3 and not any(calls[:3]) and not index.compacting
    assert len(FaissVectorIndex.load(tmp_path / "v", 16)) == 700
