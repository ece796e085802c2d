"""FTS5 as the keyword index (the contract is tests/contracts/test_keyword_index.py):
terms are quoted for MATCH, and written in the store's transactions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.backends.sqlite.store import SqliteStore
from citeline.core.documents import Chunk
from citeline.core.index import NewChunk
from updates import file_update


def test_any_term_is_quoted_so_fts5_syntax_is_only_text(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    store.keywords.add(1, 'say "hello" AND or NEAR')
    assert [i for i, _ in store.keywords.search(['"hello"', "AND", "NEAR"], 5)] == [1]
    assert store.keywords.search(["*"], 5) == []


def test_terms_roll_back_with_their_chunks(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    good = NewChunk(Chunk("a.md", "T", (), "alpha", 1, 1, None, 0), "k1", "alpha")
    # a heading that cannot be stored fails the transaction after alpha's terms went in
    bad = NewChunk(Chunk("a.md", "T", (object(),), "beta", 2, 2, None, 1), "k1", "beta")  # type: ignore[arg-type]

    def put(chunks: list[NewChunk]) -> None:
        vectors = np.ones((len(chunks), 4), np.float32)
        store.replace_file(
            file_update("a.md", chunks, vectors, new_vectors={"k1": np.ones(4, np.float32)})
        )

    with pytest.raises(TypeError):
        put([good, bad])
    assert store.keywords.search(["alpha"], 5) == [] and store.files() == {}
    put([good])
    assert len(store.keywords.search(["alpha"], 5)) == 1
    store.forget_chunks()
    assert store.keywords.document_frequencies(["alpha"]) == (0, {})


def test_the_row_count_is_fts5_s_own_record_and_follows_every_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    keywords = store.keywords
    assert keywords.rows() == 0
    for chunk_id in range(1, 201):  # past one byte of varint
        keywords.add(chunk_id, "alpha beta")
    keywords.remove([3, 4])
    count = store._db.execute("SELECT count(*) FROM chunk_terms").fetchone()[0]
    assert keywords.rows() == count == 198
    assert keywords.document_frequencies(["alpha"]) == (198, {"alpha": 198})
    keywords.clear()
    assert keywords.rows() == 0
