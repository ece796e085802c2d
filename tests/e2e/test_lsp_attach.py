"""Several windows, one daemon (`citeline serve --attach`, lsp/attach.py): real
`citeline serve` processes over stdio, each driven by a real LSP client.  The first
serves the folder; later ones attach to it: their searches, asks and status are
answered by it, they load no model, and when it ends they say so and exit.  A
`citeline mcp --attach`, driven by the MCP SDK's own client, attaches the same way."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from lsp_harness import (
    ASK_TIMEOUT,
    CitelineClient,
    make_corpus,
    request,
    start,
    stop,
    wait_ready,
    wait_until,
)
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from citeline.lsp.attach import record_path

SUN = "How many hours of sun do tomatoes need?"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def pid_of(client: CitelineClient) -> int:
    assert client._server is not None
    return client._server.pid


async def exit_status(client: CitelineClient, timeout: float) -> int | None:
    assert client._server is not None
    return await asyncio.wait_for(client._server.wait(), timeout)


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime folder: records and sockets of this test only."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder / "citeline"


async def offering_daemon(tmp_path: Path, runtime: Path, log: Path) -> tuple[Path, CitelineClient]:
    """A documents folder and the first window's server (``--attach``, logging to
    ``log``), once it is ready and offers the folder to later windows."""
    corpus = make_corpus(tmp_path / "notes")
    owner = await start(
        "visual-studio-code", [corpus], extra_args=("--attach", "--log-file", str(log))
    )
    try:
        await wait_ready(owner, corpus)
        await wait_until(
            owner, lambda: record_path(corpus, runtime).exists(), 30, "the folder offered"
        )
    except BaseException:
        await stop(owner)
        raise
    return corpus, owner


async def test_a_second_window_attaches_is_answered_and_ends_with_its_daemon(
    tmp_path: Path, runtime: Path
) -> None:
    logs = [tmp_path / f"window{n}.log" for n in range(3)]
    corpus, owner = await offering_daemon(tmp_path, runtime, logs[0])
    try:
        assert record_path(corpus, runtime).stat().st_mode & 0o777 == 0o600

        second = await start(
            "visual-studio-code", [corpus], extra_args=("--attach", "--log-file", str(logs[1]))
        )
        # Status, search and ask, answered by the first window's daemon.
        status = await asyncio.wait_for(request(second, "citeline/status", {}), 60)
        assert [f["uri"] for f in status["folders"]] == [corpus.as_uri()]
        assert status["folders"][0]["state"] == "ready"
        found = await asyncio.wait_for(
            request(second, "citeline/search", {"query": "tomato sun"}), 60
        )
        assert found["hits"] and found["hits"][0]["path"] == "garden.md"
        token = "attached-ask"
        answer = await asyncio.wait_for(
            request(second, "citeline/ask", {"question": SUN, "partialResultToken": token}),
            ASK_TIMEOUT,
        )
        assert "six hours" in answer["answer"]
        assert second.deltas[token] == [answer["answer"]]  # its stream reached it, not the
        assert token not in owner.deltas  # first window
        # The model was loaded once: the attached server is a thin copy of bytes.
        log1 = logs[1].read_text()
        assert f"attached to the server with pid {pid_of(owner)}" in log1
        assert "serving stdio" not in log1  # it never built a server of its own
        owner_rss, second_rss = rss_mb(pid_of(owner)), rss_mb(pid_of(second))
        assert second_rss < owner_rss / 2, (owner_rss, second_rss)
        # The attached window leaves cleanly; the daemon and its own window go on.
        await stop(second)
        assert await exit_status(second, 30) == 0
        again = await asyncio.wait_for(
            request(owner, "citeline/search", {"query": "bread dough"}), 60
        )
        assert again["hits"][0]["path"] == "kitchen.md"

        third = await start(
            "visual-studio-code", [corpus], extra_args=("--attach", "--log-file", str(logs[2]))
        )
        await asyncio.wait_for(request(third, "citeline/status", {}), 60)
    finally:
        await stop(owner)
    # The daemon ended: the attached server says so in one line and exits.
    assert await exit_status(third, 60) == 1
    await third.stop()
    ended = [line for line in logs[2].read_text().splitlines() if "has ended" in line]
    assert len(ended) == 1 and str(corpus) in ended[0]
    assert "Traceback" not in "".join(log.read_text() for log in logs)
    assert not record_path(corpus, runtime).exists()  # the daemon withdrew its offer
    assert not any(runtime.glob("attach-*.sock"))


async def test_without_a_daemon_an_attach_window_serves_the_folder_itself(
    tmp_path: Path, runtime: Path
) -> None:
    corpus = make_corpus(tmp_path / "notes")
    log = tmp_path / "window.log"
    # What a daemon killed with -9 leaves: its record (not used) and its socket (removed).
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    runtime.mkdir(mode=0o700)
    left = runtime / f"attach-{gone.pid}.sock"
    record_path(corpus, runtime).write_text(
        json.dumps({"pid": gone.pid, "socket": str(left), "token": "x"})
    )
    left.write_text("")
    client = await start(
        "visual-studio-code", [corpus], extra_args=("--attach", "--log-file", str(log))
    )
    try:
        await wait_ready(client, corpus)
        found = await asyncio.wait_for(request(client, "citeline/search", {"query": "jupiter"}), 60)
        assert found["hits"][0]["path"] == "astronomy.md"
        assert "attached to" not in log.read_text()
        record = json.loads(record_path(corpus, runtime).read_text())
        assert record["pid"] == pid_of(client)  # it offers the folder in turn
        assert not left.exists()
    finally:
        await stop(client)


# -- citeline mcp --attach -----------------------------------------------------------


@asynccontextmanager
async def mcp_session(*args: str, log: Path) -> AsyncIterator[ClientSession]:
    """The MCP SDK's client over stdio to ``citeline mcp ARGS``, initialized."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "citeline.cli", "mcp", *args], env=dict(os.environ)
    )
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await asyncio.wait_for(client.initialize(), 60)
            yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def pid_with(argument: str) -> int:
    """The pid of the one process whose command line holds ``argument``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                words = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in words:
                found.append(int(proc.name))
    assert len(found) == 1, found
    return found[0]


async def wait_for_line(log: Path, words: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        lines = [line for line in log.read_text().splitlines() if words in line]
        if lines:
            return lines[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{words!r} not in {log}: {log.read_text()[-2000:]}")


async def test_citeline_mcp_attaches_to_the_daemon_is_answered_and_ends_with_it(
    tmp_path: Path, runtime: Path
) -> None:
    logs = [tmp_path / f"process{n}.log" for n in range(3)]
    corpus, owner = await offering_daemon(tmp_path, runtime, logs[0])
    try:
        args = ("--attach", "--docs", str(corpus), "--log-file")
        async with mcp_session(*args, str(logs[1]), log=tmp_path / "mcp1.err") as agent:
            tools = {t.name for t in (await agent.list_tools()).tools}
            assert tools == {"search", "ask", "status", "history"}
            found = await asyncio.wait_for(agent.call_tool("search", {"query": "tomato sun"}), 60)
            assert not found.isError, text_of(found)
            hits = found.structuredContent["hits"]  # type: ignore[index]
            assert hits[0]["path"] == "garden.md" and hits[0]["folder"] == str(corpus)
            asked = await asyncio.wait_for(agent.call_tool("ask", {"question": SUN}), ASK_TIMEOUT)
            assert not asked.isError, text_of(asked)
            assert "six hours" in asked.structuredContent["answer"]  # type: ignore[index]
            status = await asyncio.wait_for(agent.call_tool("status", {}), 60)
            (folder,) = status.structuredContent["folders"]  # type: ignore[index]
            assert folder["docs"] == str(corpus) and folder["state"] == "ready"
            bad = await agent.call_tool("search", {"query": "x", "folder": "/etc"})
            assert bad.isError and "not a documents" in text_of(bad)
            # The daemon answered: the MCP process loaded no model and opened no index.
            log1 = logs[1].read_text()
            assert f"attached to the server with pid {pid_of(owner)}" in log1
            assert "MCP on stdio" not in log1
            owner_rss, agent_rss = rss_mb(pid_of(owner)), rss_mb(pid_with(str(logs[1])))
            assert agent_rss < owner_rss / 2, (owner_rss, agent_rss)
        # The agent left; the daemon and its window go on.
        again = await asyncio.wait_for(
            request(owner, "citeline/search", {"query": "bread dough"}), 60
        )
        assert again["hits"][0]["path"] == "kitchen.md"
        # The ask was the daemon's: it is in the folder's one history.
        history = await asyncio.wait_for(request(owner, "citeline/history", {}), 60)
        assert [e["question"] for e in history["entries"]] == [SUN]

        async with mcp_session(*args, str(logs[2]), log=tmp_path / "mcp2.err") as agent:
            await asyncio.wait_for(agent.call_tool("status", {}), 60)
            await stop(owner)
            # The daemon ended: the attached MCP server says so in one line and exits.
            ended = await wait_for_line(logs[2], "has ended", 60)
            assert str(corpus) in ended and "MCP server" in ended
    finally:
        if not owner.stopped:
            await stop(owner)
    assert "Traceback" not in "".join(log.read_text() for log in logs)
    assert not record_path(corpus, runtime).exists()


async def test_without_a_daemon_citeline_mcp_attach_serves_the_folder_itself(
    tmp_path: Path, runtime: Path
) -> None:
    corpus = make_corpus(tmp_path / "notes")
    log = tmp_path / "mcp.log"
    args = ("--attach", "--docs", str(corpus), "--log-file", str(log))
    async with mcp_session(*args, log=tmp_path / "mcp.err") as agent:
        found = await asyncio.wait_for(agent.call_tool("search", {"query": "jupiter"}), 300)
        assert not found.isError, text_of(found)
        assert found.structuredContent["hits"][0]["path"] == "astronomy.md"  # type: ignore[index]
    said = log.read_text()
    assert "MCP on stdio" in said and "attached to" not in said and "Traceback" not in said
