"""Which workspace folders the language server serves, as pygls calls it with the real
models: one without a marker is not indexed and nothing is written into it (status
says why); one with citeline.toml is; ``citeline/indexFolder`` writes the minimal
file and serves the folder."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
import tomllib
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.app import ModelPool
from citeline.lsp.errors import REQUEST_FAILED
from citeline.lsp.server import CitelineServer, build_server
from citeline.service.selection import MINIMAL_SETTINGS, NO_MARKER
from corpora import GARDEN, KITCHEN, write_files
from inprocess import initialize
from recording import JsonCapture, settled


@dataclass
class Opened:
    ls: CitelineServer
    wire: JsonCapture
    marked: Path
    plain: Path

    def feature(self, method: str) -> Any:
        return self.ls.protocol.fm.features[method]


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


async def until(predicate: Any, what: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def ready(ls: CitelineServer, root: Path) -> bool:
    folder = ls.service.folders.get(root)
    return folder is not None and folder.state == "ready" and settled(folder)


@pytest.fixture()
async def workspace(tmp_path: Path, models: ModelPool) -> AsyncIterator[Opened]:
    marked = write_files(tmp_path / "garden", GARDEN)
    (marked / "citeline.toml").write_text("[search]\ntop_k = 3\n")
    plain = write_files(tmp_path / "kitchen", KITCHEN)
    ls = build_server(backends=models)
    wire = JsonCapture()
    ls.protocol.set_writer(wire)
    initialize(ls, types.ClientCapabilities(), [marked, plain])
    await ls.protocol.fm.features[types.INITIALIZED](types.InitializedParams())
    await until(lambda: ready(ls, marked), "the marked folder to be ready")
    yield Opened(ls, wire, marked, plain)
    await ls.service.shutdown(30)
    ls.service.stop(30)


async def test_a_folder_without_a_marker_is_not_served_and_not_written(
    workspace: Opened,
) -> None:
    before = listing(workspace.plain)
    status = await workspace.feature("citeline/status")({})
    assert [f["uri"] for f in status["folders"]] == [workspace.marked.as_uri()]
    assert status["unserved"] == [
        {"uri": workspace.plain.as_uri(), "docs": str(workspace.plain), "reason": NO_MARKER}
    ]
    # the notification says so too
    sent = workspace.wire.notifications("citeline/status")
    assert sent and sent[-1]["unserved"] == status["unserved"]
    # a save inside it, a search, an ask: nothing is indexed or written there
    workspace.feature(types.TEXT_DOCUMENT_DID_SAVE)(
        types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri=(workspace.plain / "kitchen.md").as_uri())
        )
    )
    hits = (await workspace.feature("citeline/search")({"query": "coffee machine descaled"}))[
        "hits"
    ]
    assert all(h["folder"] == workspace.marked.as_uri() for h in hits)
    await workspace.feature("citeline/ask")({"question": "How often is the coffee descaled?"})
    await asyncio.sleep(0.5)  # anything wrongly scheduled would have started by now
    assert listing(workspace.plain) == before == ["kitchen.md"]
    # the marked one was indexed, with its own settings
    assert (workspace.marked / ".citeline").is_dir()
    (served,) = workspace.ls.service.folders
    assert served.settings.search.top_k == 3


async def test_index_folder_writes_the_minimal_file_and_serves_the_folder(
    workspace: Opened,
) -> None:
    index_folder = workspace.feature("citeline/indexFolder")
    result = await index_folder({"folder": workspace.plain.as_uri()})
    assert result["uri"] == workspace.plain.as_uri() and result["docs"] == str(workspace.plain)
    assert result["state"] in ("indexing", "ready")
    text = (workspace.plain / "citeline.toml").read_text()
    assert text == MINIMAL_SETTINGS and tomllib.loads(text) == {}
    await until(lambda: ready(workspace.ls, workspace.plain), "the folder to be indexed")
    status = await workspace.feature("citeline/status")({})
    assert [f["uri"] for f in status["folders"]] == [
        workspace.marked.as_uri(),
        workspace.plain.as_uri(),
    ]
    assert status["unserved"] == []
    hits = (await workspace.feature("citeline/search")({"query": "coffee machine descaled"}))[
        "hits"
    ]
    assert hits[0]["folder"] == workspace.plain.as_uri() and hits[0]["path"] == "kitchen.md"
    # asked again: the same folder, the file left as it is
    again = await index_folder({"folder": workspace.plain.as_uri()})
    assert again["uri"] == workspace.plain.as_uri()
    assert (workspace.plain / "citeline.toml").read_text() == text
    assert len(workspace.ls.service.folders) == 2


async def test_a_saved_citeline_toml_makes_an_opened_folder_served(workspace: Opened) -> None:
    (workspace.plain / "citeline.toml").write_text("[search]\ntop_k = 2\n")
    workspace.feature(types.TEXT_DOCUMENT_DID_SAVE)(
        types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri=(workspace.plain / "citeline.toml").as_uri())
        )
    )
    await until(lambda: ready(workspace.ls, workspace.plain), "the folder to be served")
    assert workspace.ls.service.unserved == []


async def test_index_folder_errors(workspace: Opened, tmp_path: Path) -> None:
    index_folder = workspace.feature("citeline/indexFolder")
    with pytest.raises(JsonRpcInvalidParams, match="'folder' is required"):
        await index_folder({})
    with pytest.raises(JsonRpcInvalidParams, match="file:// URI"):
        await index_folder({"folder": "untitled:1"})
    for missing in (tmp_path / "missing", workspace.marked / "garden.md"):
        with pytest.raises(JsonRpcException) as info:
            await index_folder({"folder": missing.as_uri()})
        assert info.value.code == REQUEST_FAILED and "does not exist" in info.value.message
    assert not (tmp_path / "missing").exists()
    assert len(workspace.ls.service.folders) == 1


def rss_mib() -> float:
    """This process's resident memory (``VmRSS``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


async def test_a_model_no_folder_uses_after_a_settings_change_is_released(
    tmp_path: Path,
) -> None:
    """Two folders on MiniLM; one's citeline.toml picks multilingual-e5-small: MiniLM
    stays (the other uses it); the other's does too: MiniLM is released, freed."""
    garden = write_files(tmp_path / "garden", GARDEN)
    kitchen = write_files(tmp_path / "kitchen", KITCHEN)
    for root in (garden, kitchen):
        (root / "citeline.toml").write_text("")
    pool = ModelPool()  # its own models: what it releases is freed
    ls = build_server(backends=pool)
    ls.protocol.set_writer(JsonCapture())
    initialize(ls, types.ClientCapabilities(), [garden, kitchen])
    await ls.protocol.fm.features[types.INITIALIZED](types.InitializedParams())

    def on(root: Path, model: str) -> bool:
        folder = ls.service.folders.get(root)
        return (
            ready(ls, root)
            and folder is not None
            and folder.workspace is not None
            and folder.workspace.embedder.name.startswith(model)
        )

    async def choose_e5(root: Path) -> None:
        (root / "citeline.toml").write_text('[embedding]\nmodel = "multilingual-e5-small"\n')
        ls.protocol.fm.features[types.TEXT_DOCUMENT_DID_SAVE](
            types.DidSaveTextDocumentParams(
                types.TextDocumentIdentifier(uri=(root / "citeline.toml").as_uri())
            )
        )
        await until(lambda: on(root, "multilingual-e5-small"), f"{root.name} on e5")

    try:
        await until(lambda: on(garden, "all-MiniLM") and on(kitchen, "all-MiniLM"), "MiniLM")
        (minilm,) = pool.embedders.values()
        released = weakref.ref(minilm)
        del minilm
        before = rss_mib()
        await choose_e5(garden)
        both = rss_mib()
        names = sorted(e.name.split(".")[0] for e in pool.embedders.values())
        assert names == ["all-MiniLM-L6-v2", "multilingual-e5-small"]  # kitchen uses MiniLM
        await choose_e5(kitchen)
        gc.collect()
        after = rss_mib()
        assert [e.name.split(".")[0] for e in pool.embedders.values()] == ["multilingual-e5-small"]
        assert released() is None  # freed, not only dropped from the pool
        logging.getLogger(__name__).warning(
            f"RSS: {before:.0f} MiB on MiniLM, {both:.0f} MiB with both models,"
            f" {after:.0f} MiB after MiniLM was released ({both - after:+.0f} MiB)"
        )
        # the folders still answer, each on e5
        hits = (await ls.protocol.fm.features["citeline/search"]({"query": "roses"}))["hits"]
        assert hits
    finally:
        await ls.service.shutdown(30)
        ls.service.stop(30)
