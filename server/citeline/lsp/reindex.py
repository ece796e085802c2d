"""``citeline/reindex``: bring folders up to date with the disk now, and report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from citeline import wire
from citeline.lsp.convert import path_to_uri
from citeline.lsp.errors import reported
from citeline.lsp.params import folder_param, request_params

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

REINDEX = wire.REINDEX.name


async def reindex_request(ls: CitelineServer, folder: Path | None) -> wire.ReindexResult:
    """Each folder's ingest report (as ``citeline index --json`` prints it) and URI."""
    reports = await ls.service.reindex(folder)
    folders = [{"uri": path_to_uri(f.root), **report.to_json()} for f, report in reports]
    return wire.ReindexResult(folders=cast(list[wire.ReindexFolderReport], folders))


def register(ls: CitelineServer) -> None:
    @ls.feature(REINDEX)
    @reported(REINDEX)
    async def reindex(ls: CitelineServer, params: Any) -> wire.ReindexResult:
        args = request_params(wire.REINDEX, params)
        return await reindex_request(ls, folder_param(REINDEX, args, "folder"))
