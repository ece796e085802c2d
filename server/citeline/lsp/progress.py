"""Server-initiated work-done progress (``$/progress`` begin/report/end), cancellable.

:class:`WorkDone` is used from the event loop.  It asks the client for a token
(``window/workDoneProgress/create``) in the background, so the work it reports on
never waits for the editor; reports made before the token exists are folded into
the first one, and reports are throttled (a report held back goes out when the
interval is over, so the last one before a quiet spell is seen).
``window/workDoneProgress/cancel`` calls ``on_cancel``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

REPORT_INTERVAL = 0.2
CREATE_TIMEOUT = 10.0


def client_supports_progress(ls: LanguageServer) -> bool:
    try:
        window = ls.client_capabilities.window
    except AttributeError:
        return False
    return bool(window and window.work_done_progress)


class WorkDone:
    def __init__(
        self,
        ls: LanguageServer,
        title: str,
        on_cancel: Callable[[], None],
        message: str | None = None,
    ) -> None:
        self.ls = ls
        self.title = title
        self.on_cancel = on_cancel
        self.token: str | None = None
        self._first_message = message
        self._latest: tuple[int | None, str | None] | None = None
        self._last_sent = 0.0
        self._ended: str | None = None
        self._done = False
        self._task: asyncio.Task[None] | None = None
        self._trailing: asyncio.TimerHandle | None = None
        if client_supports_progress(ls):
            self._task = asyncio.ensure_future(self._create())

    async def _create(self) -> None:
        token = f"citeline-index-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(self.ls.work_done_progress.create_async(token), CREATE_TIMEOUT)
        except Exception as exc:  # the client refused or never answered: no progress UI
            log.info("no work-done progress (%s)", exc or type(exc).__name__)
            return
        self.token = token
        future: Future[Any] | None = self.ls.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(self._cancelled)
        percentage, message = self._latest or (0, self._first_message)
        self.ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=self.title, cancellable=True, message=message, percentage=percentage or 0
            ),
        )
        self._last_sent = time.monotonic()
        if self._ended is not None:
            self._send_end()

    def _cancelled(self, future: Future[Any]) -> None:
        if future.cancelled() and not self._done:
            log.info("%s: cancelled by the client", self.title)
            self.on_cancel()

    def report(self, percentage: int | None, message: str | None, *, force: bool = False) -> None:
        self._latest = (percentage, message)
        if self.token is None or self._ended is not None:
            return
        now = time.monotonic()
        wait = REPORT_INTERVAL - (now - self._last_sent)
        if not force and wait > 0:
            # Throttled: the latest report goes out when the interval is over, so the
            # last one before a quiet spell (a pause) is not lost.
            if self._trailing is None:
                self._trailing = asyncio.get_running_loop().call_later(wait, self._send_latest)
            return
        self._last_sent = now
        self.ls.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def _send_latest(self) -> None:
        self._trailing = None
        if self._latest is not None:
            self.report(*self._latest, force=True)

    def end(self, message: str) -> None:
        if self._ended is not None:
            return
        self._ended = message
        if self._trailing is not None:
            self._trailing.cancel()
            self._trailing = None
        if self.token is not None:
            self._send_end()
        elif self._task is not None and not self._task.done():
            pass  # _create sends the end once the token exists
        else:
            self._done = True

    def _send_end(self) -> None:
        if self._done or self.token is None:
            return
        self._done = True
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=self._ended))
        self.ls.work_done_progress.tokens.pop(self.token, None)
