"""``citeline/indexFolder``: serve a folder because the user asked ("Citeline: Index
This Folder…"), writing the minimal ``citeline.toml`` that keeps it served.

The rule for which folders are served, and the file written, are the service's
(``Service.index_folder``, ``service/selection.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citeline import wire
from citeline.lsp.convert import folder_status
from citeline.lsp.params import folder
from citeline.lsp.routes import request

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer


def register(ls: CitelineServer) -> None:
    @request(ls, wire.INDEX_FOLDER)
    async def index_folder(ls: CitelineServer, params: wire.IndexFolderParams) -> wire.FolderStatus:
        named = folder(params["folder"])
        assert named is not None
        status = await ls.service.index_folder(named)
        return folder_status(status)
