"""A team index under faults, with two daemons serving it (real LSP clients) and a
server of its own that this module stops and starts:

- the database goes away and comes back: the daemons say so in status, answer
  requests with a clear error meanwhile, and recover without a restart;
- a second writer fails at once, naming the first; the first, killed with -9 in the
  middle of its run, leaves a collection the daemons keep serving, and the next run
  completes it without embedding again what was committed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import (
    CHANGE_TIMEOUT,
    GARDEN,
    KITCHEN,
    TEST_SETTINGS,
    CitelineClient,
    expect_error,
    folder_status,
    mark,
    request,
    search,
    start,
    stop,
    wait_ready,
    wait_until,
)

from postgres import TestServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOTES = 240  # one short chunk each: the writer's run lasts a few seconds at least
REQUEST_FAILED = -32803
OUTAGE_TIMEOUT = 60.0


def writer_command(canon: Path, server: TestServer, collection: str) -> list[str]:
    return [
        *(sys.executable, "-m", "citeline.cli", "index", "--docs", str(canon)),
        *("--store", server.url, "--collection", collection, "--json"),
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[TestServer]:
    own = TestServer()
    yield own
    own.close()


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, server: TestServer) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("team-faults")
    canon = base / "canonical"
    canon.mkdir()
    mark(canon)
    (canon / "garden.md").write_text(GARDEN, "utf-8")
    (canon / "kitchen.md").write_text(KITCHEN, "utf-8")
    collection = server.fresh_collection()
    proc = subprocess.run(
        writer_command(canon, server, collection), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    clones = [base / "alice", base / "bob"]
    for clone in clones:
        shutil.copytree(canon, clone)
    return {"canon": canon, "collection": collection, "clones": clones}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editors(team: dict[str, Any], server: TestServer) -> AsyncIterator[list[CitelineClient]]:
    settings = {**TEST_SETTINGS, "index": {"store": server.url, "collection": team["collection"]}}
    clients: list[CitelineClient] = []
    try:
        for editor, clone in zip(("visual-studio-code", "neovim"), team["clones"], strict=True):
            clients.append(await start(editor, [clone], init_options=settings))
        for client, clone in zip(clients, team["clones"], strict=True):
            await wait_ready(client, clone)
        yield clients
    finally:
        for client in clients:
            await stop(client)


def state_of(client: CitelineClient, clone: Path) -> dict[str, Any]:
    return folder_status(client, clone) or {}


async def test_the_database_going_away_and_coming_back(
    team: dict[str, Any], server: TestServer, editors: list[CitelineClient]
) -> None:
    pairs = list(zip(editors, team["clones"], strict=True))
    for client, _ in pairs:
        assert (await search(client, "how long does the dough rise", k=1))[0][
            "path"
        ] == "kitchen.md"
    server.stop()
    try:
        for client, clone in pairs:
            entry = await wait_until(
                client,
                lambda c=client, f=clone: state_of(c, f).get("state") == "error" and state_of(c, f),
                OUTAGE_TIMEOUT,
                "status to report the outage",
            )
            assert "cannot be reached" in entry["message"], entry
            error = await expect_error(
                request(client, "citeline/search", {"query": "dough", "k": 1}), REQUEST_FAILED
            )
            assert (
                "cannot be reached" in error.message and "#" + team["collection"] in error.message
            )
    finally:
        server.start()
    for client, clone in pairs:
        await wait_until(
            client,
            lambda c=client, f=clone: state_of(c, f).get("state") == "ready",
            OUTAGE_TIMEOUT,
            "recovery without a restart",
        )
        assert (await search(client, "how long does the dough rise", k=1))[0][
            "path"
        ] == "kitchen.md"


def collection_files(server: TestServer, collection: str) -> int:
    rows = server.execute(f"SELECT count(*) FROM citeline_{collection}.files")
    return int(rows[0][0])  # type: ignore[call-overload]


def writer_holds_the_lock(server: TestServer) -> bool:
    rows = server.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'citeline writer'"
    )
    return bool(rows[0][0])


async def test_a_second_writer_fails_clearly_and_a_killed_writer_leaves_a_usable_collection(
    team: dict[str, Any], server: TestServer, editors: list[CitelineClient]
) -> None:
    canon, collection = team["canon"], team["collection"]
    for i in range(NOTES):
        (canon / f"note-{i:03}.md").write_text(
            f"# Note {i}\n\nField note {i}: the heron number {i} waded at dawn.\n", "utf-8"
        )
    first = subprocess.Popen(
        writer_command(canon, server, collection), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while not writer_holds_the_lock(server):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the writer never took its lock"
            time.sleep(0.05)
        # A second writer on the same collection fails at once, naming the first.
        second = subprocess.run(
            writer_command(canon, server, collection), capture_output=True, text=True, timeout=600
        )
        assert second.returncode == 2, second.stderr
        assert "another writer" in second.stderr and "citeline writer" in second.stderr
        assert "Traceback" not in second.stderr
        # Kill the first once it has committed part of its work.
        while collection_files(server, collection) <= 2:
            assert first.poll() is None, "the writer finished before it could be killed"
            assert time.monotonic() < deadline, "the writer never committed"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    partial = collection_files(server, collection)
    assert 2 < partial < NOTES + 2, partial
    # The daemons keep serving it, and learn of what was committed.
    for client, clone in zip(editors, team["clones"], strict=True):
        await wait_until(
            client,
            lambda c=client, f=clone: state_of(c, f).get("files") == partial,
            CHANGE_TIMEOUT,
            "the committed part",
        )
        assert state_of(client, clone)["state"] == "ready"
        assert (await search(client, "how many hours of sun", k=1))[0]["path"] == "garden.md"
    # The next run completes, embedding only what was never committed.
    done = subprocess.run(
        writer_command(canon, server, collection), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files"] == NOTES + 2
    assert report["embedded"] <= NOTES + 2 - partial
    for client, clone in zip(editors, team["clones"], strict=True):
        await wait_until(
            client,
            lambda c=client, f=clone: state_of(c, f).get("files") == NOTES + 2,
            CHANGE_TIMEOUT,
            "the completed collection",
        )
