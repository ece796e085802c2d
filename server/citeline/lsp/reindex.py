"""``citeline/reindex``: bring folders up to date with the disk now, and report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from citeline import wire
from citeline.lsp.convert import reindex_report
from citeline.lsp.params import folder
from citeline.lsp.routes import request

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer


async def reindex_request(ls: CitelineServer, folder: Path | None) -> wire.ReindexResult:
    """Each folder's ingest report (as ``citeline index --json`` prints it) and URI."""
    reports = await ls.service.reindex(folder)
    return wire.ReindexResult(folders=[reindex_report(f.root, report) for f, report in reports])


def register(ls: CitelineServer) -> None:
    @request(ls, wire.REINDEX)
    async def reindex(ls: CitelineServer, params: wire.ReindexParams) -> wire.ReindexResult:
        return await reindex_request(ls, folder(params.get("folder")))
