"""``citeline/pauseIndexing``, ``citeline/resumeIndexing``: pause a folder's indexing
(nothing more is committed; changes keep collecting; searches and asks go on) and
resume it.

The rule is the service's (``Service.pause`` / ``Service.resume``, the scheduler's
``pause`` and ``resume``); this module checks params and answers with each
folder's status, as ``citeline/status`` lists it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from citeline.lsp.convert import path_to_uri
from citeline.lsp.errors import reported
from citeline.lsp.params import folder_param, object_params

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer
    from citeline.service.folders import Folder

PAUSE = "citeline/pauseIndexing"
RESUME = "citeline/resumeIndexing"


def _folders_json(ls: CitelineServer, folders: list[Folder]) -> dict[str, Any]:
    statuses = (ls.service.folder_status(f) for f in folders)
    return {"folders": [{"uri": path_to_uri(s.docs), **s.to_json()} for s in statuses]}


def register(ls: CitelineServer) -> None:
    @ls.feature(PAUSE)
    @reported(PAUSE)
    async def pause(ls: CitelineServer, params: Any) -> dict[str, Any]:
        args = object_params(PAUSE, params, ("folder",))
        return _folders_json(ls, ls.service.pause(folder_param(PAUSE, args, "folder")))

    @ls.feature(RESUME)
    @reported(RESUME)
    async def resume(ls: CitelineServer, params: Any) -> dict[str, Any]:
        args = object_params(RESUME, params, ("folder",))
        return _folders_json(ls, ls.service.resume(folder_param(RESUME, args, "folder")))
