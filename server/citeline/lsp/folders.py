"""``citeline/indexFolder``: serve a folder because the user asked ("Citeline: Index
This Folder…"), writing the minimal ``citeline.toml`` that keeps it served.

The rule for which folders are served, and the file written, are the service's
(``Service.index_folder``, ``service/selection.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from citeline import wire
from citeline.lsp.convert import path_to_uri
from citeline.lsp.errors import invalid_params, reported
from citeline.lsp.params import folder_param, request_params

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

INDEX_FOLDER = wire.INDEX_FOLDER.name


def register(ls: CitelineServer) -> None:
    @ls.feature(INDEX_FOLDER)
    @reported(INDEX_FOLDER)
    async def index_folder(ls: CitelineServer, params: Any) -> wire.FolderStatus:
        args = request_params(wire.INDEX_FOLDER, params)
        folder = folder_param(INDEX_FOLDER, args, "folder")
        if folder is None:
            raise invalid_params(f"{INDEX_FOLDER}: 'folder' is required")
        status = await ls.service.index_folder(folder)
        return cast(wire.FolderStatus, {"uri": path_to_uri(status.docs), **status.to_json()})
