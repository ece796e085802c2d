"""Editor settings: the folders key, the citeline section, layering."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lsprotocol import types

from citeline.lsp.session import merge_layers, split_options
from inprocess import Served
from recording import settled


def test_split_options_takes_out_folders() -> None:
    layer, folders, warnings = split_options(
        {"folders": ["/a", "file:///b%20c"], "search": {"topK": 3}}, "init"
    )
    assert layer == {"search": {"topK": 3}}
    assert folders == [Path("/a"), Path("/b c")]
    assert warnings == []


def test_split_options_accepts_a_citeline_section_and_a_single_folder() -> None:
    layer, folders, _ = split_options({"citeline": {"folders": "/x", "answer": {}}}, "init")
    assert layer == {"answer": {}}
    assert folders == [Path("/x")]


def test_split_options_warns_instead_of_failing() -> None:
    assert split_options(None, "init") == ({}, None, [])
    assert split_options("nonsense", "init")[2] == ["init must be an object; ignored"]
    layer, folders, warnings = split_options({"folders": 3, "search": {}}, "init")
    assert layer == {"search": {}} and folders is None and "folders" in warnings[0]
    _, folders, warnings = split_options({"folders": ["untitled:x", "/ok"]}, "init")
    assert folders == [Path("/ok")] and "not a local path" in warnings[0]


def test_merge_layers_is_deep() -> None:
    assert merge_layers({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}, "c": 4}) == {
        "a": {"x": 1, "y": 3},
        "b": 1,
        "c": 4,
    }


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
