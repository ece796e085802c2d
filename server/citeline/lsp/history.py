"""``citeline/history``, ``citeline/historyEntry``, ``citeline/historyDelete``: past
answers, listed newest first, shown as they were given (saying which cited sources
changed since), and deleted one by one or all at once.

Reading, merging and comparing are the service's (``Service.history`` and friends,
``service/history.py``); this module checks params and puts URIs on the results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from citeline import wire
from citeline.lsp.convert import answer_json, path_to_uri
from citeline.lsp.errors import invalid_params, reported
from citeline.lsp.params import folder_param, int_param, request_params, string_param
from citeline.service.history import DEFAULT_LIMIT, MAX_LIMIT

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

HISTORY = wire.HISTORY.name
HISTORY_ENTRY = wire.HISTORY_ENTRY.name
HISTORY_DELETE = wire.HISTORY_DELETE.name
MAX_OFFSET = 1_000_000
MAX_ID_CHARS = 64


def _id_param(method: str, args: Any, *, required: bool) -> str | None:
    value = string_param(method, args, "id", required=required)
    if value is not None and (len(value) > MAX_ID_CHARS or not value.strip()):
        raise invalid_params(f"{method}: 'id' must be a history entry's id")
    return value


def register(ls: CitelineServer) -> None:
    @ls.feature(HISTORY)
    @reported(HISTORY)
    async def history(ls: CitelineServer, params: Any) -> wire.HistoryResult:
        args = request_params(wire.HISTORY, params)
        folder = folder_param(HISTORY, args, "folder")
        query = string_param(HISTORY, args, "query", required=False)
        limit = int_param(HISTORY, args, "limit", low=1, high=MAX_LIMIT) or DEFAULT_LIMIT
        offset = int_param(HISTORY, args, "offset", low=0, high=MAX_OFFSET) or 0
        found = await ls.service.history(folder, query or None, limit, offset)
        entries = [{**e.to_json(), "folder": path_to_uri(e.folder)} for e in found.entries]
        return wire.HistoryResult(entries=cast(list[wire.HistoryItem], entries), total=found.total)

    @ls.feature(HISTORY_ENTRY)
    @reported(HISTORY_ENTRY)
    async def history_entry(ls: CitelineServer, params: Any) -> wire.HistoryEntry:
        args = request_params(wire.HISTORY_ENTRY, params)
        record_id = _id_param(HISTORY_ENTRY, args, required=True)
        assert record_id is not None
        recorded = await ls.service.history_entry(record_id)
        root = recorded.folder
        entry = answer_json(
            recorded.to_json(), root, path_to_uri(root), recorded.copies, recorded.passages
        )
        return cast(wire.HistoryEntry, entry)

    @ls.feature(HISTORY_DELETE)
    @reported(HISTORY_DELETE)
    async def history_delete(ls: CitelineServer, params: Any) -> wire.HistoryDeleteResult:
        args = request_params(wire.HISTORY_DELETE, params)
        record_id = _id_param(HISTORY_DELETE, args, required=False)
        folder = folder_param(HISTORY_DELETE, args, "folder")
        return wire.HistoryDeleteResult(deleted=await ls.service.delete_history(record_id, folder))
