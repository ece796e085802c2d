"""Two editors, one team index: a writer (`citeline index --store … --collection …`) on
a canonical checkout, two daemons (real LSP clients, VS Code's and Neovim's
capabilities) serving the collection read-only from their own clones.

A file changed in the canonical checkout and indexed again by the writer is found by
both daemons within seconds (LISTEN/NOTIFY, no restart); citations jump to lines in a
clone whose copy is the indexed one, and carry the indexed passage (``local_copy``
"differs") in a clone whose copy is not.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import (
    GARDEN,
    KITCHEN,
    TEST_SETTINGS,
    CitelineClient,
    folder_status,
    lines_of,
    mark,
    request,
    search,
    start,
    stop,
    wait_ready,
    wait_until,
)
from lsprotocol import types

from postgres import TestServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

FRESHNESS_SECONDS = 10.0  # "within a few seconds" of the writer's commit
MARIGOLDS = "Marigolds planted between the tomatoes keep aphids and whiteflies away."


def write_checkout(root: Path) -> Path:
    root.mkdir(parents=True)
    mark(root)
    (root / "garden.md").write_text(GARDEN, "utf-8")
    (root / "kitchen.md").write_text(KITCHEN, "utf-8")
    return root


def writer(canon: Path, url: str, collection: str) -> dict[str, Any]:
    """One run of the collection's writer, as CI would run it."""
    import json

    command = [sys.executable, "-m", "citeline.cli", "index", "--docs", str(canon)]
    proc = subprocess.run(
        [*command, "--store", url, "--collection", collection, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def team_settings(url: str, collection: str) -> dict[str, Any]:
    return {**TEST_SETTINGS, "index": {"store": url, "collection": collection}}


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, postgres: TestServer) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("team")
    canon = write_checkout(base / "canonical")
    collection = postgres.fresh_collection()
    report = writer(canon, postgres.url, collection)
    assert report["files"] == 2 and report["embedded"] > 0
    clone_a = base / "alice"
    clone_b = base / "bob"
    shutil.copytree(canon, clone_a)
    shutil.copytree(canon, clone_b)
    return {
        "url": postgres.url,
        "collection": collection,
        "canon": canon,
        "a": clone_a,
        "b": clone_b,
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editors(team: dict[str, Any]) -> AsyncIterator[tuple[CitelineClient, CitelineClient]]:
    settings = team_settings(team["url"], team["collection"])
    alice = await start("visual-studio-code", [team["a"]], init_options=settings)
    try:
        bob = await start("neovim", [team["b"]], init_options=settings)
        try:
            await wait_ready(alice, team["a"])
            await wait_ready(bob, team["b"])
            yield alice, bob
        finally:
            await stop(bob)
    finally:
        await stop(alice)


async def test_both_daemons_serve_the_collection_read_only(
    team: dict[str, Any], editors: tuple[CitelineClient, CitelineClient]
) -> None:
    for client, clone in zip(editors, (team["a"], team["b"]), strict=True):
        entry = folder_status(client, clone)
        assert entry is not None
        assert entry["collection"] == team["collection"] and entry["read_only"] is True
        assert entry["index"].endswith("#" + team["collection"])
        assert entry["files"] == 2 and entry["generation"] > 0 and entry["last_update"]
        hits = await search(client, "how many hours of sun do tomatoes need", k=1)
        assert hits[0]["path"] == "garden.md" and hits[0]["local_copy"] == "same"
        assert "six hours" in lines_of(hits[0]["uri"], hits[0]["range"])
        # a reader indexes nothing of its own
        assert not (clone / ".citeline" / "index.sqlite3").exists()


async def test_a_change_indexed_by_the_writer_reaches_both_daemons_within_seconds(
    team: dict[str, Any], editors: tuple[CitelineClient, CitelineClient]
) -> None:
    alice, bob = editors
    generation = folder_status(alice, team["a"])["generation"]  # type: ignore[index]
    changed = GARDEN.replace("## Basil", f"## Marigolds\n\n{MARIGOLDS}\n\n## Basil")
    (team["canon"] / "garden.md").write_text(changed, "utf-8")
    (team["a"] / "garden.md").write_text(changed, "utf-8")  # Alice pulled; Bob did not
    report = writer(team["canon"], team["url"], team["collection"])
    assert report["files_changed"] == 1
    committed = time.monotonic()

    def found(client: CitelineClient) -> Any:
        entry = folder_status(client, team["a"] if client is alice else team["b"])
        return entry is not None and entry["generation"] > generation

    for client in editors:
        await wait_until(client, lambda c=client: found(c), FRESHNESS_SECONDS, "a new generation")
    for client in editors:
        hits = await search(client, "which flowers keep aphids away from tomatoes", k=3)
        assert hits and hits[0]["path"] == "garden.md", hits
        assert MARIGOLDS in hits[0]["text"]
    elapsed = time.monotonic() - committed
    assert elapsed < FRESHNESS_SECONDS, elapsed

    # Alice's copy is the indexed one: her citation jumps to the right lines.
    (hit,) = await search(alice, "which flowers keep aphids away from tomatoes", k=1)
    assert hit["local_copy"] == "same"
    assert MARIGOLDS in lines_of(hit["uri"], hit["range"])
    # Bob's copy is older: the passage comes with the hit, flagged, never a wrong jump.
    (hit,) = await search(bob, "which flowers keep aphids away from tomatoes", k=1)
    assert hit["local_copy"] == "differs" and MARIGOLDS in hit["text"]
    assert MARIGOLDS not in lines_of(hit["uri"], hit["range"])
    # An unchanged file is still "same" for Bob.
    (hit,) = await search(bob, "how long do you bake the loaf", k=1)
    assert hit["path"] == "kitchen.md" and hit["local_copy"] == "same"


async def test_a_citation_into_a_differing_copy_carries_the_passage(
    team: dict[str, Any], editors: tuple[CitelineClient, CitelineClient]
) -> None:
    _, bob = editors
    answer = await request(
        bob, "citeline/ask", {"question": "Which flowers keep aphids away from the tomatoes?"}
    )
    citations = [c for c in answer["citations"] if c["path"] == "garden.md"]
    assert citations, answer
    assert all(c["local_copy"] == "differs" and c["text"] for c in citations)
    assert any(MARIGOLDS in c["text"] for c in citations)
    # the server will not open it at a line either
    opened = await bob.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.openCitation", arguments=[citations[0]])
    )
    assert opened is False
