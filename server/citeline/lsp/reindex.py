"""``citeline/reindex``: bring folders up to date with the disk now, and report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from citeline import wire
from citeline.lsp.convert import path_to_uri
from citeline.lsp.params import folder
from citeline.lsp.routes import request

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer


async def reindex_request(ls: CitelineServer, folder: Path | None) -> wire.ReindexResult:
    """Each folder's ingest report (as ``citeline index --json`` prints it) and URI."""
    reports = await ls.service.reindex(folder)
    folders = [{"uri": path_to_uri(f.root), **report.to_json()} for f, report in reports]
    return wire.ReindexResult(folders=cast(list[wire.ReindexFolderReport], folders))


def register(ls: CitelineServer) -> None:
    @request(ls, wire.REINDEX)
    async def reindex(ls: CitelineServer, params: wire.ReindexParams) -> wire.ReindexResult:
        return await reindex_request(ls, folder(params.get("folder")))
