"""``citeline/status``: the request, and the notification sent whenever it changes.

Status is built from state the event loop keeps (never touching a worker), so it
answers at once while a folder is indexing or an answer is generating.  The
notification goes out at once when a folder's state changes and at most a few
times a second for count updates while indexing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from citeline.app import generation_model_name, reranker_name
from citeline.lsp import params as p
from citeline.lsp.errors import reported

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

STATUS = "citeline/status"
NOTIFY_INTERVAL = 0.25


def build_status(ls: CitelineServer) -> dict[str, Any]:
    folders = list(ls.folders)
    embedding: str | None = None
    generation: str | None = None
    reranking: str | None = None
    for folder in folders:
        embedding = embedding or folder.embedding_model
        generation = generation or generation_model_name(folder.settings.generation)
        reranking = reranking or reranker_name(folder.settings.reranking)
    return {
        "folders": [f.status_json() for f in folders],
        "models": {"embedding": embedding, "generation": generation, "reranking": reranking},
    }


class StatusNotifier:
    """Sends ``citeline/status`` notifications: state changes at once, counts throttled."""

    def __init__(self, ls: CitelineServer) -> None:
        self.ls = ls
        self.enabled = False  # from `initialized` on
        self._timer: asyncio.TimerHandle | None = None
        self._last: dict[str, Any] | None = None

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
        status = build_status(self.ls)
        if status == self._last or not status["folders"]:
            return  # nothing to report until a folder is open
        self._last = status
        self.ls.protocol.notify(STATUS, status)


def register(ls: CitelineServer) -> None:
    @ls.feature(STATUS)
    @reported(STATUS)
    async def status(ls: CitelineServer, params: Any) -> dict[str, Any]:
        p.as_object(STATUS, params, ())
        return build_status(ls)
