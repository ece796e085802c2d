"""``citeline/pauseIndexing``, ``citeline/resumeIndexing``: pause a folder's indexing
(nothing more is committed; changes keep collecting; searches and asks go on) and
resume it.

The rule is the service's (``Service.pause`` / ``Service.resume``, the scheduler's
``pause`` and ``resume``); this module checks params and answers with each
folder's status, as ``citeline/status`` lists it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citeline import wire
from citeline.lsp.convert import folder_status
from citeline.lsp.params import folder
from citeline.lsp.routes import request

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer
    from citeline.service.folders import Folder


def _folders_json(ls: CitelineServer, folders: list[Folder]) -> wire.PauseIndexingResult:
    return {"folders": [folder_status(ls.service.folder_status(f)) for f in folders]}


def register(ls: CitelineServer) -> None:
    @request(ls, wire.PAUSE_INDEXING)
    async def pause(
        ls: CitelineServer, params: wire.PauseIndexingParams
    ) -> wire.PauseIndexingResult:
        return _folders_json(ls, ls.service.pause(folder(params.get("folder"))))

    @request(ls, wire.RESUME_INDEXING)
    async def resume(
        ls: CitelineServer, params: wire.PauseIndexingParams
    ) -> wire.PauseIndexingResult:
        return _folders_json(ls, ls.service.resume(folder(params.get("folder"))))
