"""``citeline mcp`` end to end, driven by the MCP SDK's own client over stdio: a real
index of the samples, the real models, every tool, and the error cases (bad
arguments, a folder outside the served ones, an unknown tool): clear tool errors,
nothing read, and the server keeps serving."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, ListRootsResult, Root, TextContent

from conftest import copy_samples

QUESTION = "Where does Citeline store its index?"


@asynccontextmanager
async def session(
    *args: str, cwd: Path, log: Path, roots: list[Path] | None = None
) -> AsyncIterator[ClientSession]:
    """A client over stdio to ``citeline mcp ARGS`` started in ``cwd``; with ``roots``,
    a client that offers them (as VS Code offers its workspace folders)."""

    async def list_roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=p.as_uri(), name=p.name) for p in roots or []])

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline.cli", "mcp", *args],
        env=dict(os.environ),
        cwd=cwd,
    )
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, list_roots_callback=list_roots if roots is not None else None
            ) as client,
        ):
            yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def lines_of(item: dict[str, Any]) -> str:
    lines = Path(item["file"]).read_text("utf-8").splitlines()
    return "\n".join(lines[item["start_line"] - 1 : item["end_line"]])


async def expect_error(client: ClientSession, tool: str, args: Any, *words: str) -> str:
    result = await client.call_tool(tool, args)
    text = text_of(result)
    assert result.isError, f"{tool} {args}: expected an error, got {text[:200]}"
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    for word in words:
        assert word in text, text
    return text


async def test_the_tools_over_stdio(tmp_path: Path) -> None:
    samples = copy_samples(tmp_path / "samples")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is 4711.\n")
    log = tmp_path / "mcp.log"
    async with session("--docs", str(samples), cwd=tmp_path, log=log) as client:
        init = await client.initialize()
        assert init.serverInfo.name == "citeline" and init.capabilities.tools is not None
        assert init.instructions and "citations" in init.instructions

        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"search", "ask", "status", "history"}
        for tool in tools.values():
            assert tool.annotations is not None and tool.annotations.readOnlyHint is True
            assert tool.inputSchema["additionalProperties"] is False and tool.outputSchema
        assert tools["search"].inputSchema["required"] == ["query"]

        # search: the first call waits for the folder's first indexing, then answers
        told: list[str | None] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            told.append(message)

        found = await client.call_tool(
            "search", {"query": QUESTION, "k": 3}, progress_callback=progress
        )
        assert not found.isError, text_of(found)
        # while the samples were being indexed, the call said so (if it had to wait)
        assert all(m and m.startswith(f"waiting for indexing: {samples} (") for m in told)
        hits = found.structuredContent["hits"]  # type: ignore[index]
        assert [h["rank"] for h in hits] == [1, 2, 3]
        assert found.structuredContent["indexing"] == []  # type: ignore[index]
        for hit in hits:
            assert hit["folder"] == str(samples) and hit["file"] == str(samples / hit["path"])
            if hit["page"] is None:
                assert hit["text"].split()[0] in lines_of(hit)
        top = hits[0]
        assert top["path"] == "getting-started.md" and top["section"]
        readable = text_of(found)
        assert f"{top['file']}:{top['start_line']}-{top['end_line']}" in readable

        # ask: a cited answer, each citation with its place and the quoted passage
        asked = await client.call_tool("ask", {"question": QUESTION})
        assert not asked.isError, text_of(asked)
        answer = asked.structuredContent
        assert answer is not None and answer["question"] == QUESTION
        assert answer["refused"] is False and answer["folder"] == str(samples)
        assert ".citeline" in answer["answer"] and answer["citations"]
        for citation in answer["citations"]:
            assert f"[{citation['n']}]" in answer["answer"]
            assert citation["text"] and citation["local_copy"] == "same"
            assert citation["text"].split()[0] in lines_of(citation)
        readable = text_of(asked)
        assert readable.startswith(answer["answer"].strip()[:40]) and "Sources:" in readable
        assert citation["file"] in readable

        # status, and the ask in the history
        status = await client.call_tool("status", {})
        (folder,) = status.structuredContent["folders"]  # type: ignore[index]
        assert folder["docs"] == str(samples) and folder["state"] == "ready"
        assert folder["files"] >= 8 and folder["chunks"] > 20
        assert status.structuredContent["unserved"] == []  # type: ignore[index]
        assert f"{samples}: ready" in text_of(status)
        history = await client.call_tool("history", {"query": "store its INDEX"})
        assert history.structuredContent["total"] == 1  # type: ignore[index]
        (entry,) = history.structuredContent["entries"]  # type: ignore[index]
        assert entry["question"] == QUESTION and entry["sources"] == len(answer["citations"])

        # errors: one line each, nothing read outside the folders, and serving goes on
        for where in (str(outside), outside.as_uri(), str(samples / ".." / "outside")):
            await expect_error(
                client, "search", {"query": "vault code", "folder": where}, "not a documents"
            )
        await expect_error(client, "ask", {"question": "vault?", "folder": "/etc"}, "not a")
        await expect_error(client, "search", {"query": "x", "folder": "https://example.org/"})
        await expect_error(client, "search", {"query": "x", "k": 0}, "Input validation error")
        await expect_error(client, "search", {"k": 3}, "'query' is a required property")
        await expect_error(client, "search", {"query": "x", "colour": "red"}, "colour")
        await expect_error(client, "ask", {"question": 42}, "42")
        await expect_error(client, "ask", {"question": "   "}, "must not be empty")
        await expect_error(client, "ask", {"question": "x" * 10_001}, "Input validation error")
        await expect_error(client, "history", {"limit": 500}, "Input validation error")
        await expect_error(client, "delete_everything", {}, "unknown tool")
        assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]  # nothing written
        again = await client.call_tool("search", {"query": "vault code 4711"})
        assert not again.isError
        hits = again.structuredContent["hits"]  # type: ignore[index]
        assert hits and all(h["folder"] == str(samples) and "4711" not in h["text"] for h in hits)
    assert "Traceback" not in log.read_text()


async def test_the_current_folder_is_served_only_with_a_marker(tmp_path: Path) -> None:
    plain = tmp_path / "code"
    plain.mkdir()
    (plain / "notes.md").write_text("# Notes\n\nThe build runs with make.\n")
    async with session(cwd=plain, log=tmp_path / "plain.log") as client:
        await client.initialize()
        status = await client.call_tool("status", {})
        assert status.structuredContent["folders"] == []  # type: ignore[index]
        (unserved,) = status.structuredContent["unserved"]  # type: ignore[index]
        assert unserved["docs"] == str(plain) and "citeline.toml" in unserved["reason"]
        await expect_error(client, "search", {"query": "build"}, "no documents folder")
    assert sorted(p.name for p in plain.iterdir()) == ["notes.md"]  # nothing written into it

    (plain / "citeline.toml").write_text("# served\n")
    async with session(cwd=plain, log=tmp_path / "marked.log") as client:
        await client.initialize()
        found = await client.call_tool("search", {"query": "how does the build run"})
        assert not found.isError, text_of(found)
        assert found.structuredContent["hits"][0]["path"] == "notes.md"  # type: ignore[index]


async def test_the_clients_roots_are_its_opened_folders(tmp_path: Path) -> None:
    """Without --docs, a client's roots are served when they hold a marker, as an
    editor's workspace folders are; a root added later is picked up."""
    marked = tmp_path / "notes"
    marked.mkdir()
    (marked / "citeline.toml").write_text("# served\n")
    (marked / "lighthouse.md").write_text("# Lighthouse\n\nThe keeper climbs 120 steps.\n")
    plain = tmp_path / "code"
    plain.mkdir()
    (plain / "main.md").write_text("# Main\n\nThe build runs with make.\n")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    roots = [marked, plain]
    async with session(cwd=elsewhere, log=tmp_path / "roots.log", roots=roots) as client:
        await client.initialize()
        status = (await client.call_tool("status", {})).structuredContent
        assert status is not None
        assert [f["docs"] for f in status["folders"]] == [str(marked)]
        assert [u["docs"] for u in status["unserved"]] == [str(plain)]
        found = await client.call_tool("search", {"query": "how many steps does the keeper climb"})
        assert found.structuredContent["hits"][0]["path"] == "lighthouse.md"  # type: ignore[index]

        (plain / "citeline.toml").write_text("# served now\n")
        await client.send_roots_list_changed()
        found = await client.call_tool("search", {"query": "how does the build run"})
        assert not found.isError, text_of(found)
        hits = found.structuredContent["hits"]  # type: ignore[index]
        assert hits[0]["folder"] == str(plain) and hits[0]["path"] == "main.md"
    assert sorted(p.name for p in elsewhere.iterdir()) == []
