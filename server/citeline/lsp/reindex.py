"""``citeline/reindex``: bring folders up to date with the disk now, and report."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from citeline.lsp import params as p
from citeline.lsp.ask import no_folders_error, resolve_folder
from citeline.lsp.errors import reported

if TYPE_CHECKING:
    from citeline.lsp.folders import Folder
    from citeline.lsp.server import CitelineServer

REINDEX = "citeline/reindex"


async def run_reindex(ls: CitelineServer, folder_uri: str | None) -> dict[str, Any]:
    named = resolve_folder(ls, REINDEX, folder_uri)
    folders = [named] if named is not None else list(ls.folders)
    if not folders:
        raise no_folders_error()

    async def one(folder: Folder) -> dict[str, Any]:
        report = await ls.folders.run_now(folder, None)
        return {
            "uri": folder.uri,
            "files": report.files,
            "chunks": report.chunks,
            "embedded": report.embedded,
            "reused": report.reused,
            "removed": report.removed,
            "errors": [{"path": path, "message": message} for path, message in report.errors],
        }

    return {"folders": list(await asyncio.gather(*(one(f) for f in folders)))}


def register(ls: CitelineServer) -> None:
    @ls.feature(REINDEX)
    @reported(REINDEX)
    async def reindex(ls: CitelineServer, params: Any) -> dict[str, Any]:
        args = p.as_object(REINDEX, params, ("folder",))
        return await run_reindex(ls, p.text(REINDEX, args, "folder", required=False))
