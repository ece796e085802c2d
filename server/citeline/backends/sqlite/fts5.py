"""The :class:`~citeline.core.keywords.KeywordIndex` on SQLite FTS5.

One FTS5 row per chunk (rowid = chunk id) holding terms already produced by
``citeline.core.keywords``, so FTS5's own tokenizer (``unicode61``) only splits
on spaces; ``fts5vocab`` gives the document frequencies BM25 normalisation needs, and
the number of rows comes from FTS5's own record of it (what ``bm25()`` reads), not
from ``count(*)``, which reads every row (0.1 s at 100,000 chunks).
It shares the store's connection: writes made inside a store transaction commit
or roll back with the chunks they belong to.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(terms, tokenize = "unicode61");
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms_vocab USING fts5vocab(chunk_terms, row);
"""
TABLES = ("chunk_terms_vocab", "chunk_terms")


class Fts5KeywordIndex:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def add(self, chunk_id: int, terms: str) -> None:
        self._db.execute("INSERT INTO chunk_terms(rowid, terms) VALUES(?, ?)", (chunk_id, terms))

    def remove(self, ids: Sequence[int]) -> None:
        self._db.executemany("DELETE FROM chunk_terms WHERE rowid = ?", [(i,) for i in ids])

    def clear(self) -> None:
        self._db.execute("DELETE FROM chunk_terms")

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not terms or k <= 0:
            return []
        query = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self._db.execute(
            "SELECT rowid, -bm25(chunk_terms) FROM chunk_terms WHERE chunk_terms MATCH ?"
            " ORDER BY bm25(chunk_terms) LIMIT ?",
            (query, k),
        ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def all_terms(self, batch: int = 10_000) -> Iterator[tuple[int, str]]:
        """Every (chunk id, terms) row, in id order, read ``batch`` rows at a time."""
        after = -(2**63)
        while True:
            rows = self._db.execute(
                "SELECT rowid, terms FROM chunk_terms WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                return
            yield from ((int(r[0]), str(r[1])) for r in rows)
            after = int(rows[-1][0])

    def rows(self) -> int:
        """The number of rows: the first varint of FTS5's averages record (id 1 of its
        data table), which every insert and delete keeps current."""
        row = self._db.execute("SELECT block FROM chunk_terms_data WHERE id = 1").fetchone()
        count = _varint(row[0]) if row is not None and isinstance(row[0], bytes) else None
        if count is None:  # no record yet (an empty table), or one this code cannot read
            count = int(self._db.execute("SELECT count(*) FROM chunk_terms").fetchone()[0])
        return count

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        total = self.rows()
        if not terms:
            return total, {}
        marks = ",".join("?" * len(terms))
        rows = self._db.execute(
            f"SELECT term, doc FROM chunk_terms_vocab WHERE term IN ({marks})", list(terms)
        ).fetchall()
        return total, {str(t): int(d) for t, d in rows}


def _varint(data: bytes) -> int | None:
    """SQLite's variable-length integer at the start of ``data`` (None if cut short)."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return None
