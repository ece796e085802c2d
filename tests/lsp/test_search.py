"""``citeline/search`` and hover: what hover searches with (the sentence under the
cursor, else the line), and both handlers as pygls calls them."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from citeline.lsp.errors import RequestFailed
from citeline.lsp.search import hover_query
from inprocess import Served

TEXT = """\
# Notes

Tomatoes need sun. Basil likes
warm soil and regular water! Mint spreads.

- Short
"""
LINES = TEXT.splitlines(keepends=True)


def test_the_sentence_under_the_cursor_even_across_lines() -> None:
    assert hover_query(LINES, 2, 3) == "Tomatoes need sun."
    assert hover_query(LINES, 2, 22) == "Basil likes warm soil and regular water!"
    assert hover_query(LINES, 3, 5) == "Basil likes warm soil and regular water!"
    assert hover_query(LINES, 3, 35) == "Mint spreads."


def test_a_heading_or_short_line_is_searched_whole() -> None:
    assert hover_query(LINES, 0, 3) == "Notes"
    assert hover_query(LINES, 5, 3) == "Short"


def test_blank_lines_and_out_of_range_give_nothing() -> None:
    assert hover_query(LINES, 1, 0) == ""
    assert hover_query(LINES, 99, 0) == ""
    assert hover_query([], 0, 0) == ""


def test_cjk_sentences() -> None:
    lines = ["索引保存在文档文件夹里。模型只加载一次，之后一直使用。\n"]
    assert hover_query(lines, 0, 2) == "索引保存在文档文件夹里。"
    assert hover_query(lines, 0, 15) == "模型只加载一次，之后一直使用。"


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
