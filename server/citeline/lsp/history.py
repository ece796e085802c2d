"""``citeline/history``, ``citeline/historyEntry``, ``citeline/historyDelete``: past
answers, listed newest first, shown as they were given (saying which cited sources
changed since), and deleted one by one or all at once.

Reading, merging and comparing are the service's (``Service.history`` and friends,
``service/history.py``); this module checks params and puts URIs on the results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citeline import wire
from citeline.lsp.convert import history_item, recorded_answer
from citeline.lsp.params import folder
from citeline.lsp.routes import request
from citeline.service.history import DEFAULT_LIMIT

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer


def register(ls: CitelineServer) -> None:
    @request(ls, wire.HISTORY)
    async def history(ls: CitelineServer, params: wire.HistoryParams) -> wire.HistoryResult:
        found = await ls.service.history(
            folder(params.get("folder")),
            params.get("query") or None,
            params.get("limit", DEFAULT_LIMIT),
            params.get("offset", 0),
        )
        entries = [history_item(e) for e in found.entries]
        return wire.HistoryResult(entries=entries, total=found.total)

    @request(ls, wire.HISTORY_ENTRY)
    async def history_entry(
        ls: CitelineServer, params: wire.HistoryEntryParams
    ) -> wire.HistoryEntry:
        return recorded_answer(await ls.service.history_entry(params["id"]))

    @request(ls, wire.HISTORY_DELETE)
    async def history_delete(
        ls: CitelineServer, params: wire.HistoryDeleteParams
    ) -> wire.HistoryDeleteResult:
        deleted = await ls.service.delete_history(params.get("id"), folder(params.get("folder")))
        return wire.HistoryDeleteResult(deleted=deleted)
