"""``citeline/search`` and hover, as pygls calls them (what hover searches with is
tests/service/test_hover.py's)."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from citeline.lsp.errors import RequestFailed
from inprocess import Served

# -- the handlers, in this process with the real models --------------------------


async def test_search_merges_the_folders_and_locates_each_hit(served: Served) -> None:
    search = served.feature("citeline/search")
    result = await search({"query": "How much sun do tomatoes need?", "k": 3})
    hits = result["hits"]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0]["folder"] == served.garden.as_uri()
    assert hits[0]["uri"] == (served.garden / "garden.md").as_uri()
    named = await search({"query": "bread", "folder": served.kitchen.as_uri()})
    assert {h["folder"] for h in named["hits"]} == {served.kitchen.as_uri()}
    with pytest.raises(JsonRpcInvalidParams, match="between 1 and 100"):
        await search({"query": "bread", "k": 0})


async def test_hover_shows_passages_from_elsewhere_as_markdown_links(served: Served) -> None:
    hover = served.feature(types.TEXT_DOCUMENT_HOVER)
    here = served.kitchen / "note.md"
    here.write_text("Does basil grow best next to tomatoes?\n")
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=here.as_uri()),
        position=types.Position(line=0, character=5),
    )
    result = await hover(params)
    assert result is not None
    text = result.contents.value
    assert "garden.md" in text and "#L" in text


def _hover_at(uri: str) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=0),
    )


async def test_hover_reads_only_regular_files_inside_the_folders(served: Served) -> None:
    """Outside the folders (a path, ``..``, a symlink out), a device, a FIFO, a folder:
    refused in one line, nothing outside opened, and a FIFO never blocks the loop."""
    hover = served.feature(types.TEXT_DOCUMENT_HOVER)
    garden = served.garden
    os.mkfifo(garden / "pipe.md")
    (garden / "out.md").symlink_to("/etc/passwd")
    (garden / "zero.md").symlink_to("/dev/zero")
    (garden / "sub.md").mkdir()
    refused = {
        "file:///etc/passwd": "outside",
        "file:///dev/zero": "outside",
        garden.as_uri() + "/../../../etc/passwd": "outside",
        (garden / "out.md").as_uri(): "outside",
        (garden / "zero.md").as_uri(): "outside",
        (garden / "pipe.md").as_uri(): "not a regular file",
        (garden / "sub.md").as_uri(): "not a regular file",
        (garden / "missing.md").as_uri(): "no such file",
    }
    for uri, why in refused.items():
        started = time.monotonic()
        with pytest.raises(RequestFailed, match=why):
            await asyncio.wait_for(hover(_hover_at(uri)), 10)
        assert time.monotonic() - started < 5, uri
    for uri in ("untitled:Untitled-1", "https://example.com/a.md", "file://host/etc/passwd"):
        assert await hover(_hover_at(uri)) is None


async def test_hover_over_an_opened_document_reads_the_editor_text_not_the_disk(
    served: Served,
) -> None:
    hover = served.feature(types.TEXT_DOCUMENT_HOVER)
    uri = "file:///etc/not-a-document.md"  # outside the folders, never read: the editor sent it
    served.ls.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text="Basil?\n")
    )
    result = await hover(_hover_at(uri))
    assert result is not None and "garden.md" in result.contents.value
