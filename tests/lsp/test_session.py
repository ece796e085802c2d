"""What the editor tells the server: saves (the settings policy is tested in
tests/service/test_session.py, the whole exchange over stdio in tests/e2e)."""

from __future__ import annotations

import asyncio
import os
import time

from lsprotocol import types

from inprocess import Served
from recording import settled


async def test_saves_index_only_regular_documents_of_the_folders(served: Served) -> None:
    """didSave of paths outside the folders, `..` out, a symlink out, a FIFO or a
    device: nothing is read or indexed, nothing blocks; a real document is indexed."""
    did_save = served.feature(types.TEXT_DOCUMENT_DID_SAVE)
    garden = served.garden
    os.mkfifo(garden / "pipe.md")
    (garden / "out.md").symlink_to("/etc/passwd")
    (garden / "new.md").write_text("# New\n\nQuinces ripen in late autumn.\n")
    for uri in (
        "file:///etc/passwd",
        "file:///dev/zero",
        garden.as_uri() + "/../../../etc/passwd",
        (garden / "out.md").as_uri(),
        (garden / "pipe.md").as_uri(),
        (garden / "new.md").as_uri(),
    ):
        did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    deadline = time.monotonic() + 60
    while not all(settled(f) for f in served.ls.service.folders):
        assert time.monotonic() < deadline, "a save never finished"
        await asyncio.sleep(0.05)
    (folder,) = [f for f in served.ls.service.folders if f.root == garden]
    files = await served.ls.service.workers.index.call(lambda: set(folder.workspace.index.files()))
    assert "new.md" in files
    assert not {"out.md", "pipe.md"} & files
