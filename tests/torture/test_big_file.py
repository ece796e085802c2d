"""Torture: one big PDF never holds the searches of the rest.  A 3,000-page PDF is
indexed into a folder with a real search run every time the index worker lets work
in; searches are answered in every stage of the file's indexing: while the parse
child reads it, while its chunks are written to the store, and while the in-memory
indexes take them up after the commit (each stage sliced, not one block)."""

from __future__ import annotations

from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.parsing import shared_child
from citeline.settings import Settings
from torture.hostile import PROSE
from torture.pdf_crashes import plain_pdf

PAGES = 3000


def test_searches_are_answered_in_every_stage_of_a_big_pdfs_indexing(
    tmp_path: Path, models: ModelPool
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keeper.md").write_text("# Keeper\n\n" + PROSE)
    ws = open_workspace(docs, Settings(), models)
    try:
        ws.update()
        index = ws.index
        assert isinstance(index, EmbeddedIndex)
        before = index.counts().chunks
        (docs / "big.pdf").write_bytes(plain_pdf(PAGES))
        seen: list[tuple[bool, int, int, list[str]]] = []

        def between() -> None:  # what the daemon's queued searches do here
            hits = ws.search("keeper logs dawn", 5)
            stored = index.counts().chunks - before  # this connection sees its own writes
            mirrored = len(index.vectors) - before
            seen.append((shared_child().busy, stored, mirrored, [h.chunk.path for h in hits]))

        report = ws.update(between=between)
        assert report.files_changed == 1 and not report.errors
        total = index.counts().chunks - before
        assert total >= PAGES  # a chunk a page at least
        assert all("keeper.md" in paths for *_, paths in seen)  # every search answered
        parsing = [s for s in seen if s[0]]
        storing = [s for s in seen if 0 < s[1] < total]
        mirroring = [s for s in seen if s[1] == total and 0 < s[2] < total]
        assert len(parsing) >= 3, "no search while the parse child read the file"
        assert len(storing) >= 3, "no search between the store's slices"
        assert len(mirroring) >= 3, "no search while the in-memory indexes took it up"
        assert len(index.vectors) - before == total
    finally:
        ws.close()
