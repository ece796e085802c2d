"""The postings keyword index beyond the KeywordIndex contract: the same ranking and
scores as the store's FTS5 table through adds, removals, reused ids, saves, loads and
new bases; the log; damaged files."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from citeline.backends.postings import index as backend
from citeline.backends.postings.index import PostingsKeywordIndex
from citeline.backends.sqlite import fts5
from citeline.core.keywords import fold, query_terms, terms

WORDS = [
    "index",
    "search",
    "folder",
    "chunk",
    "reload",
    "server",
    "café",
    "cafe",
    "naïve",
    "coffee",
    "tea",
    "pg_hba.conf",
    "E-1024",
    "vector",
    "model",
    "answer",
    "cite",
    "page",
    "line",
    "heading",
    "索引",
    "保存",
    "文档",
    "文件夹",
    "the",
    "of",
    "and",
]


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40)))


def fts5_index() -> fts5.Fts5KeywordIndex:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(fts5.SCHEMA)
    return fts5.Fts5KeywordIndex(db)


def assert_same(index: PostingsKeywordIndex, reference: fts5.Fts5KeywordIndex) -> None:
    rng = random.Random(7)
    for _ in range(40):
        query = query_terms(" ".join(rng.sample(WORDS, rng.randint(1, 6))))
        got, want = index.search(query, 10), reference.search(query, 10)
        assert [i for i, _ in got] == [i for i, _ in want], query
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)
        total, frequencies = index.document_frequencies(query)
        # FTS5's vocabulary holds terms as folded (cafe for café)
        assert (total, {fold(t): n for t, n in frequencies.items()}) == (
            reference.document_frequencies([fold(t) for t in query])
        )


def test_it_ranks_and_scores_as_fts5_through_edits_saves_and_new_bases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "LOG_MIN", 50)
    path = tmp_path / "keywords"
    rng = random.Random(1)
    reference = fts5_index()
    rows = {i: " ".join(terms(text(rng))) for i in range(1, 301)}
    for chunk_id, row in rows.items():
        reference.add(chunk_id, row)
    index = PostingsKeywordIndex.build(rows.items())
    assert len(index) == 300
    assert_same(index, reference)
    index.save(path)
    for step in range(6):  # remove some, add new ones and reuse the highest ids
        gone = sorted({*rng.sample(sorted(rows), 20), max(rows)})
        reference.remove(gone)
        index.remove(gone)
        for chunk_id in gone:
            del rows[chunk_id]
        for chunk_id in [max(rows) + 1, *range(1000 + 10 * step, 1010 + 10 * step)]:
            rows[chunk_id] = " ".join(terms(text(rng)))
            reference.add(chunk_id, rows[chunk_id])
            index.add(chunk_id, rows[chunk_id])
        assert_same(index, reference)
        index.save(path)
        assert_same(PostingsKeywordIndex.load(path), reference)
    assert len(index) == len(rows) == len(PostingsKeywordIndex.load(path))


def test_an_edit_appends_to_the_log_and_a_large_log_makes_a_new_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "LOG_MIN", 10)
    path = tmp_path / "keywords"
    index = PostingsKeywordIndex.build((i, f"word{i} common") for i in range(100))
    index.save(path)
    (first,) = {p.name.split(".")[1] for p in tmp_path.glob("keywords.*.npy")}
    index.remove([3])
    index.add(3, "word3 changed")
    index.save(path)
    assert {p.name.split(".")[1] for p in tmp_path.glob("keywords.*.npy")} == {first}
    assert (tmp_path / f"keywords.{first}.log").stat().st_size > 0
    loaded = PostingsKeywordIndex.load(path)
    assert [i for i, _ in loaded.search(["changed"], 5)] == [3]
    for i in range(20):
        index.add(200 + i, "later common")
    index.save(path)
    tokens = {p.name.split(".")[1] for p in tmp_path.glob("keywords.*.npy")}
    assert len(tokens) == 1 and tokens != {first}  # a new base; the old files deleted
    assert len(PostingsKeywordIndex.load(path)) == 120


def test_a_head_another_process_replaced_makes_a_whole_new_base(tmp_path: Path) -> None:
    path = tmp_path / "keywords"
    mine = PostingsKeywordIndex.build([(1, "alpha"), (2, "beta")])
    mine.save(path)
    theirs = PostingsKeywordIndex.load(path)
    theirs.add(3, "gamma")
    PostingsKeywordIndex.build([(1, "alpha"), (2, "beta"), (3, "gamma")]).save(path)
    mine.add(4, "delta")
    mine.save(path)  # the head on disk is not the one it loaded: write everything
    assert sorted(i for i, _ in PostingsKeywordIndex.load(path).search(["alpha", "delta"], 5)) == [
        1,
        4,
    ]


def test_damaged_files_are_errors_not_wrong_answers(tmp_path: Path) -> None:
    path = tmp_path / "keywords"
    index = PostingsKeywordIndex.build((i, f"term{i}") for i in range(5000))
    index.save(path)
    index.add(9999, "late")
    index.save(path)
    (log,) = tmp_path.glob("keywords.*.log")
    log.write_bytes(b"X" + log.read_bytes()[1:])
    with pytest.raises(ValueError, match="damaged"):
        PostingsKeywordIndex.load(path)
    log.write_bytes(b"")
    with pytest.raises(ValueError, match="shorter"):
        PostingsKeywordIndex.load(path)
    (rows,) = tmp_path.glob("keywords.*.rows.npy")
    rows.write_bytes(rows.read_bytes()[:200])
    with pytest.raises(ValueError):
        PostingsKeywordIndex.load(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="unreadable"):
        PostingsKeywordIndex.load(path)


def test_rows_added_between_searches_become_segments_that_rank_as_fts5() -> None:
    rng = random.Random(3)
    reference = fts5_index()
    index = PostingsKeywordIndex()
    chunk_id = 0
    for _ in range(2 * backend.DELTA_SEGMENTS + 3):  # a big file taken up in slices
        for _ in range(7):
            chunk_id += 1
            row = " ".join(terms(text(rng)))
            reference.add(chunk_id, row)
            index.add(chunk_id, row)
        assert_same(index, reference)  # a search between slices: the rows so far
        parts = index._delta_parts()
        assert 1 <= len(parts) <= backend.DELTA_SEGMENTS  # joined when there are more
    index.remove([3, 20, chunk_id])  # a removal of an added row: made again whole
    reference.remove([3, 20, chunk_id])
    assert_same(index, reference)
    assert len(index._delta_parts()) == 1
