"""``citeline/status``: the request, and the notification sent whenever it changes.

Status is the service's (``Service.status``: built from state the event loop
keeps, so it answers at once while a folder is indexing or an answer is
generating); each folder's entry is its ``FolderStatus`` with its URI.  The
notification goes out at once when a folder's state changes and at most a few
times a second for count updates while indexing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from citeline import wire
from citeline.lsp import convert
from citeline.lsp.routes import request

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

NOTIFY_INTERVAL = 0.25


def status_json(ls: CitelineServer) -> wire.StatusResult:
    status = ls.service.status()
    return wire.StatusResult(
        folders=[convert.folder_status(f) for f in status.folders],
        models=status.models.to_json(),
        unserved=[convert.unserved(u) for u in status.unserved],
    )


class StatusNotifier:
    """Sends ``citeline/status`` notifications: state changes at once, counts throttled."""

    def __init__(self, ls: CitelineServer) -> None:
        self.ls = ls
        self.enabled = False  # from `initialized` on
        self._timer: asyncio.TimerHandle | None = None
        self._last: wire.StatusResult | None = None

    def changed(self, *, immediate: bool = False) -> None:
        if not self.enabled:
            return
        if immediate:
            self.send()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(NOTIFY_INTERVAL, self.send)

    def send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        status = status_json(self.ls)
        if status == self._last or not (status["folders"] or status["unserved"]):
            return  # nothing to report until a folder is open (or one is not served)
        self._last = status
        self.ls.protocol.notify(wire.STATUS.name, status)


def register(ls: CitelineServer) -> None:
    @request(ls, wire.STATUS)
    async def status(ls: CitelineServer, params: None) -> wire.StatusResult:
        return status_json(ls)
