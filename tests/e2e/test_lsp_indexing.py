"""Start-up indexing as an editor sees it: progress, requests answered meanwhile,
cancel, pause and resume."""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from lsp_harness import (
    CHANGE_TIMEOUT,
    READY_TIMEOUT,
    CitelineClient,
    folder_status,
    mark,
    request,
    search,
    start,
    stop,
    wait_until,
)
from lsprotocol import types

from torture.crashes import index_command, snapshot

FILES = 200
TOPICS = ["harbour", "glacier", "violin", "orchard", "comet", "bakery", "canal", "falcon"]


def write_many(root: Path) -> None:
    rng = random.Random(5)
    root.mkdir(parents=True)
    mark(root)
    for i in range(FILES):
        topic = TOPICS[i % len(TOPICS)]
        words = " ".join(rng.choice(TOPICS) for _ in range(12))
        (root / f"note-{i:03}.md").write_text(
            f"# Note {i}\n\nThis note {i} is about the {topic}. {words}.\n", "utf-8"
        )


def indexing_tokens(client: CitelineClient) -> list[Any]:
    """The tokens of every indexing progress so far, oldest first."""
    out = []
    for token, reports in client.progress_reports.items():
        first = reports[0] if reports else None
        if isinstance(first, types.WorkDoneProgressBegin) and first.title.startswith(
            "Citeline: indexing"
        ):
            out.append(token)
    return out


def indexing_token(client: CitelineClient) -> Any:
    tokens = indexing_tokens(client)
    return tokens[0] if tokens else None


def reported_files(client: CitelineClient, token: Any = None) -> bool:
    token = token if token is not None else indexing_token(client)
    reports = client.progress_reports.get(token, []) if token is not None else []
    return any(
        isinstance(r, types.WorkDoneProgressReport) and (r.percentage or 0) > 0 for r in reports
    )


def ended(client: CitelineClient, token: Any) -> Any:
    reports = client.progress_reports[token]
    return isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1]


async def test_requests_are_answered_while_indexing_and_progress_cancels(tmp_path: Path) -> None:
    docs = tmp_path / "many"
    write_many(docs)
    client = await start("visual-studio-code", [docs])
    try:
        await wait_until(client, lambda: reported_files(client), READY_TIMEOUT, "a progress report")
        token = indexing_token(client)
        begin = client.progress_reports[token][0]
        assert begin.cancellable is True
        # The index answers from what is indexed so far; the loop is not blocked.
        started = time.monotonic()
        status = await request(client, "citeline/status", {})
        (folder,) = status["folders"]
        hits = await search(client, "a note about the harbour", k=3)
        assert time.monotonic() - started < 60
        assert folder["state"] == "indexing"
        assert 0 < folder["files"] < FILES
        assert hits, "search found nothing while indexing"
        # Cancel from the editor's progress UI: the work stops, what was done stays.
        client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
        )

        end = await wait_until(client, lambda: ended(client, token), CHANGE_TIMEOUT, "the end")
        assert (end.message or "").startswith("cancelled")
        await wait_until(
            client,
            lambda: (folder_status(client, docs) or {}).get("state") == "ready",
            CHANGE_TIMEOUT,
            "ready after cancelling",
        )
        entry = folder_status(client, docs)
        assert entry is not None and 0 < entry["files"] < FILES
    finally:
        await asyncio.wait_for(stop(client), 120)


async def test_pause_stops_commits_while_searches_go_on_and_resume_finishes_the_index(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "many"
    write_many(docs)
    client = await start("visual-studio-code", [docs])

    def entry() -> dict[str, Any]:
        return folder_status(client, docs) or {}

    try:
        await wait_until(client, lambda: reported_files(client), READY_TIMEOUT, "a progress report")
        token = indexing_token(client)
        paused = await request(client, "citeline/pauseIndexing", {"folder": docs.as_uri()})
        assert [f["paused"] for f in paused["folders"]] == [True]
        # The running batch stops after the file being committed; the folder is
        # searchable ("ready") on what is indexed, and says it is paused.
        await wait_until(
            client,
            lambda: entry().get("paused") and entry().get("state") == "ready",
            CHANGE_TIMEOUT,
            "the batch to stop",
        )
        (before,) = (await request(client, "citeline/status", {}))["folders"]
        assert 0 < before["files"] < FILES and before["pending"] > 0, before
        hits = await search(client, "a note about the harbour", k=3)
        assert hits, "search found nothing while paused"
        (docs / "note-new.md").write_text("# New\n\nA note about the lighthouse.\n", "utf-8")
        await wait_until(
            client,
            lambda: entry().get("pending") == before["pending"] + 1,
            CHANGE_TIMEOUT,
            "the new file to wait with the rest",
        )
        await asyncio.sleep(3)  # time for many commits, were any made
        (after,) = (await request(client, "citeline/status", {}))["folders"]
        assert (after["files"], after["chunks"], after["generation"]) == (
            before["files"],
            before["chunks"],
            before["generation"],
        )
        last = client.progress_reports[token][-1]
        assert isinstance(last, types.WorkDoneProgressReport), last  # not ended: paused
        assert (last.message or "").startswith("paused · ")
        reindex = request(client, "citeline/reindex", {"folder": docs.as_uri()})
        try:
            await reindex
        except Exception as exc:
            assert "paused" in str(exc)
        else:
            raise AssertionError("a reindex of a paused folder was not refused")

        resumed = await request(client, "citeline/resumeIndexing", {})
        assert [f["paused"] for f in resumed["folders"]] == [False]
        await wait_until(
            client,
            lambda: entry().get("state") == "ready" and entry().get("files") == FILES + 1,
            READY_TIMEOUT,
            "every file indexed after the resume",
        )
        end = await wait_until(client, lambda: ended(client, token), CHANGE_TIMEOUT, "the end")
        assert not (end.message or "").startswith("cancelled")
        assert entry()["pending"] == 0 and not entry()["paused"]
        # The same index as a fresh run over the same files.
        fresh = tmp_path / "fresh"
        shutil.copytree(docs, fresh, ignore=shutil.ignore_patterns(".citeline"))
        done = subprocess.run(index_command(fresh), capture_output=True, timeout=900)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        assert snapshot(fresh) == snapshot(docs)

        # Cancel while paused: the waiting work is dropped and the pause ends.
        for i in range(60):
            (docs / f"note-{i:03}.md").write_text(f"# Note {i}\n\nRewritten about comets.\n")
        await wait_until(
            client,
            lambda: (
                len(indexing_tokens(client)) > 1
                and reported_files(client, indexing_tokens(client)[-1])
            ),
            CHANGE_TIMEOUT,
            "the rewrite's progress",
        )
        second = indexing_tokens(client)[-1]
        await request(client, "citeline/pauseIndexing", {"folder": docs.as_uri()})
        await wait_until(
            client,
            lambda: entry().get("paused") and entry().get("state") == "ready",
            CHANGE_TIMEOUT,
            "the rewrite to stop",
        )
        generation = entry()["generation"]
        client.protocol.notify(
            types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=second)
        )
        end = await wait_until(client, lambda: ended(client, second), CHANGE_TIMEOUT, "the end")
        assert end.message == "cancelled while paused"
        await wait_until(
            client,
            lambda: not entry().get("paused") and entry().get("pending") == 0,
            CHANGE_TIMEOUT,
            "no pause and nothing waiting",
        )
        await asyncio.sleep(2)
        assert entry()["generation"] == generation and len(indexing_tokens(client)) == 2
    finally:
        await asyncio.wait_for(stop(client), 120)
