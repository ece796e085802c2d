"""``citeline/reindex``: bring folders up to date with the disk now, and report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.lsp.convert import path_to_uri
from citeline.lsp.errors import reported
from citeline.lsp.params import folder_param, object_params

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

REINDEX = "citeline/reindex"


async def reindex_request(ls: CitelineServer, folder: Path | None) -> dict[str, Any]:
    """Each folder's ingest report (as ``citeline index --json`` prints it) and URI."""
    reports = await ls.service.reindex(folder)
    return {"folders": [{"uri": path_to_uri(f.root), **report.to_json()} for f, report in reports]}


def register(ls: CitelineServer) -> None:
    @ls.feature(REINDEX)
    @reported(REINDEX)
    async def reindex(ls: CitelineServer, params: Any) -> dict[str, Any]:
        args = object_params(REINDEX, params, ("folder",))
        return await reindex_request(ls, folder_param(REINDEX, args, "folder"))
