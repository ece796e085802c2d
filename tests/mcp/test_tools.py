"""The MCP tools over a real service in this process (real models, real folders):
structured results and their readable text, argument checks, folder confinement."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from citeline.app import ModelPool
from citeline.mcp.tools import SPECS, ToolError, Tools, folder_path, passage
from citeline.service.service import Service
from corpora import GARDEN, KITCHEN, write_files
from recording import RecordingEvents, settled


@pytest.fixture()
async def tools(tmp_path: Path, models: ModelPool) -> AsyncIterator[Tools]:
    service = Service(models, RecordingEvents())
    service.serve(
        [write_files(tmp_path / "garden", GARDEN), write_files(tmp_path / "kitchen", KITCHEN)]
    )
    deadline = time.monotonic() + 600
    while any(f.state != "ready" or not settled(f) for f in service.folders):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    yield Tools(service, index_wait=60)
    await service.shutdown(30)
    service.stop(30)


def test_folder_arguments(tmp_path: Path) -> None:
    assert folder_path(None) is None
    assert folder_path("/a/b") == Path("/a/b")
    assert folder_path("file:///a/b%20c") == Path("/a/b c")
    assert folder_path("file://localhost/x") == Path("/x")
    assert folder_path("notes") == Path.cwd() / "notes"
    for bad, why in (
        ("", "path or file:// URI"),
        ("file://host/x", "local file:// URI"),
        ("https://example.org/x", "not 'https://example.org/x'"),
        ("/a\0b", "NUL"),
        (3, "path or file:// URI"),
    ):
        with pytest.raises(ToolError, match=why):
            folder_path(bad)


def test_a_passage_says_where_it_is() -> None:
    item = {"path": "a/b.md", "title": "B", "section": "B > C", "start_line": 3, "end_line": 5}
    out = passage(Path("/docs"), {**item, "page": None, "text": "Text."})
    assert out["file"] == "/docs/a/b.md" and out["folder"] == "/docs"
    assert (out["start_line"], out["end_line"], out["page"], out["text"]) == (3, 5, None, "Text.")
    assert passage(Path("/docs"), {**item, "page": 2}, "differs", "Then.")["text"] == "Then."


def test_every_tool_is_described_with_closed_schemas() -> None:
    assert [s.name for s in SPECS] == ["search", "ask", "status", "history"]
    for spec in SPECS:
        assert spec.input_schema["additionalProperties"] is False and spec.description
        assert set(spec.output_schema["required"]) <= set(spec.output_schema["properties"])


async def test_search_and_ask_return_cited_passages(tools: Tools, tmp_path: Path) -> None:
    text, found = await tools.call("search", {"query": "How much sun do tomatoes need?", "k": 2})
    assert [h["rank"] for h in found["hits"]] == [1, 2]
    top = found["hits"][0]
    assert top["folder"] == str(tmp_path / "garden") and top["path"] == "garden.md"
    assert "Tomatoes need six hours" in top["text"]
    assert f"1. {top['file']}:{top['start_line']}" in text and "Tomatoes need six hours" in text

    text, answer = await tools.call(
        "ask", {"question": "How often is the coffee machine descaled?"}
    )
    assert answer["folder"] == str(tmp_path / "kitchen") and not answer["refused"]
    assert answer["citations"] and answer["indexing"] == []
    citation = answer["citations"][0]
    assert citation["path"] == "kitchen.md" and "30 days" in citation["text"]
    assert answer["answer"].strip() in text and f"[{citation['n']}] {citation['file']}" in text

    only = await tools.call("search", {"query": "coffee", "folder": str(tmp_path / "kitchen")})
    assert {h["folder"] for h in only[1]["hits"]} == {str(tmp_path / "kitchen")}


async def test_status_and_history(tools: Tools, tmp_path: Path) -> None:
    text, status = await tools.call("status", {})
    assert [f["docs"] for f in status["folders"]] == [
        str(tmp_path / "garden"),
        str(tmp_path / "kitchen"),
    ]
    assert f"{tmp_path / 'garden'}: ready, 1 files" in text
    await tools.call("ask", {"question": "Where does basil grow best?"})
    text, history = await tools.call("history", {"limit": 5})
    assert history["total"] == 1 and history["entries"][0]["question"].startswith("Where does")
    assert text.startswith("1 past answer")


async def test_bad_calls_are_one_line_tool_errors(tools: Tools, tmp_path: Path) -> None:
    for name, args, why in (
        ("nope", {}, "unknown tool 'nope'"),
        ("search", {}, "'query' is required"),
        ("search", {"query": "x", "k": 0}, "'k' must be between 1 and 100"),
        ("search", {"query": "x", "k": True}, "'k' must be an integer"),
        ("search", {"query": 1}, "'query' must be a string"),
        ("search", {"query": "x", "extra": 1}, "unknown argument"),
        ("ask", {"question": " "}, "must not be empty"),
        ("ask", {"question": "x" * 10_001}, "too long"),
        ("search", {"query": "x", "folder": str(tmp_path)}, "not a documents folder"),
        ("ask", {"question": "x", "folder": "/etc"}, "not a documents folder"),
    ):
        with pytest.raises(ToolError, match=why):
            await tools.call(name, args)


async def test_a_call_waits_for_a_folder_being_indexed_and_says_so(
    tools: Tools, tmp_path: Path
) -> None:
    fresh = write_files(tmp_path / "fresh", {"owls.md": "# Owls\n\nBarn owls hunt at dusk.\n"})
    tools.service.serve([tmp_path / "garden", tmp_path / "kitchen", fresh])
    assert tools.service.folders.get(fresh).state == "indexing"  # type: ignore[union-attr]
    told: list[str] = []

    async def progress(message: str) -> None:
        told.append(message)

    _, found = await tools.call(
        "search", {"query": "when do barn owls hunt", "folder": str(fresh)}, progress
    )
    assert told and told[0].startswith(f"waiting for indexing: {fresh} (")
    assert found["indexing"] == [] and found["hits"][0]["path"] == "owls.md"
