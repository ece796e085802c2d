"""Start-up indexing as an editor sees it: progress, requests answered meanwhile, cancel."""

from __future__ import annotations

import asyncio
import random
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


def indexing_token(client: CitelineClient) -> Any:
    for token, reports in client.progress_reports.items():
        first = reports[0] if reports else None
        if isinstance(first, types.WorkDoneProgressBegin) and first.title.startswith(
            "Citeline: indexing"
        ):
            return token
    return None


def reported_files(client: CitelineClient) -> bool:
    token = indexing_token(client)
    reports = client.progress_reports.get(token, []) if token is not None else []
    return any(
        isinstance(r, types.WorkDoneProgressReport) and (r.percentage or 0) > 0 for r in reports
    )


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

        def ended() -> Any:
            reports = client.progress_reports[token]
            return isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1]

        end = await wait_until(client, ended, CHANGE_TIMEOUT, "the progress to end")
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
