"""Work-done progress: a token asked for in the background, reports folded until it
exists, throttled, always ended; a client without the capability gets nothing."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

from lsprotocol import types

from citeline.lsp.progress import WorkDone


class Progress:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.tokens: dict[str, Future[Any]] = {}

    async def create_async(self, token: str) -> None:
        self.tokens[token] = Future()

    def begin(self, token: str, value: Any) -> None:
        self.sent.append((token, value))

    report = begin
    end = begin


def client(work_done_progress: bool) -> Any:
    capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=work_done_progress)
    )
    return SimpleNamespace(client_capabilities=capabilities, work_done_progress=Progress())


async def test_reports_before_the_token_fold_into_begin_and_end_is_sent() -> None:
    ls = client(True)
    cancelled: list[bool] = []
    work = WorkDone(ls, "Citeline: indexing notes", lambda: cancelled.append(True), "scanning…")
    work.report(40, "a.md")  # before the client answered
    work.end("3 changed")
    await asyncio.sleep(0.05)
    kinds = [type(value).__name__ for _, value in ls.work_done_progress.sent]
    assert kinds == ["WorkDoneProgressBegin", "WorkDoneProgressEnd"]
    begin = ls.work_done_progress.sent[0][1]
    assert begin.percentage == 40 and begin.message == "a.md" and begin.cancellable
    assert ls.work_done_progress.sent[1][1].message == "3 changed"
    assert cancelled == []


async def test_the_client_cancels_through_the_token() -> None:
    ls = client(True)
    cancelled: list[bool] = []
    work = WorkDone(ls, "t", lambda: cancelled.append(True))
    await asyncio.sleep(0.05)
    assert work.token is not None
    ls.work_done_progress.tokens[work.token].cancel()
    assert cancelled == [True]


async def test_a_client_without_progress_gets_nothing() -> None:
    ls = client(False)
    work = WorkDone(ls, "t", lambda: None)
    work.report(50, "x")
    work.end("done")
    await asyncio.sleep(0.05)
    assert ls.work_done_progress.sent == [] and work.token is None


async def test_a_throttled_report_goes_out_when_the_interval_is_over() -> None:
    ls = client(True)
    work = WorkDone(ls, "t", lambda: None)
    await asyncio.sleep(0.05)
    work.report(10, "a.md")
    work.report(20, "b.md")
    work.report(None, "paused · 3 files waiting")  # then nothing for a while
    await asyncio.sleep(0.5)
    reports = [
        v for _, v in ls.work_done_progress.sent if isinstance(v, types.WorkDoneProgressReport)
    ]
    assert reports[-1].message == "paused · 3 files waiting"
    assert len(reports) <= 2  # still throttled
    work.end("done")
    assert isinstance(ls.work_done_progress.sent[-1][1], types.WorkDoneProgressEnd)
