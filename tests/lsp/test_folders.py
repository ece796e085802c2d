"""Keeping a folder fresh: the real watcher and debouncer, with a recording workspace.

No models: ``Folders.workspace`` is replaced by a fake whose ``update`` records
each batch, so these tests show how changes on disk become batches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from citeline.core.index import IndexCounts
from citeline.core.ingest import IngestReport
from citeline.lsp import folders as folders_module
from citeline.lsp.folders import Folder, Folders
from citeline.lsp.workers import Worker


class FakeIndex:
    def __init__(self) -> None:
        self.store = self

    def counts(self) -> IndexCounts:
        return IndexCounts(0, 0)

    def file_errors(self) -> list[tuple[str, str]]:
        return []


class FakeWorkspace:
    """Records update batches; ``errors`` is what the store reports after a batch."""

    def __init__(self) -> None:
        self.batches: list[list[str] | None] = []
        self.errors: list[tuple[str, str]] = []
        self.index = FakeIndex()
        self.thread: str | None = None

    def update(
        self,
        paths: list[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> IngestReport:
        self.thread = threading.current_thread().name
        self.batches.append(None if paths is None else sorted(paths))
        for i, path in enumerate(paths or []):
            if progress:
                progress(i + 1, len(paths or []), path)
        report = IngestReport(files_changed=len(paths or []))
        report.errors = list(self.errors)
        return report


class FakeStatus:
    def __init__(self) -> None:
        self.changes = 0

    def changed(self, *, immediate: bool = False) -> None:
        self.changes += 1


class FakeServer:
    def __init__(self) -> None:
        self.editor_settings: dict[str, Any] = {}
        self.index_worker = Worker("index-test")
        self.models = None
        self.status = FakeStatus()
        self.warnings: list[str] = []
        self.published: list[types.PublishDiagnosticsParams] = []
        self.wake = asyncio.Event()

    def show_warnings(self, where: str | None, warnings: list[str]) -> None:
        self.warnings.extend(warnings)

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.published.append(params)
        self.wake.set()


class RecordingFolders(Folders):
    def __init__(self, ls: FakeServer, workspace: FakeWorkspace) -> None:
        super().__init__(ls)  # type: ignore[arg-type]
        self.fake = workspace

    def workspace(self, folder: Folder) -> Any:
        return self.fake


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    ls = FakeServer()
    yield ls
    ls.index_worker.stop(5)


async def settle(folders: RecordingFolders, folder: Folder, timeout: float = 30) -> None:
    """Until nothing is pending or running (checked on the loop, not by sleeping a fixed time)."""
    deadline = time.monotonic() + timeout
    while folder.running or folder.pending or folder.rescan or folder.timer is not None:
        assert time.monotonic() < deadline, "the folder never settled"
        await asyncio.sleep(0.05)


async def test_a_burst_of_500_new_files_is_one_batch(server: FakeServer, tmp_path: Path) -> None:
    fake = FakeWorkspace()
    folders = RecordingFolders(server, fake)
    folder = folders.add(tmp_path)
    await settle(folders, folder)
    assert fake.batches == [None]  # the initial full scan
    assert fake.thread == "citeline-index-test"
    for i in range(500):
        (tmp_path / f"note-{i:03}.md").write_text(f"# Note {i}\n")
    (tmp_path / ".hidden.md").write_text("ignored")
    (tmp_path / "picture.png").write_bytes(b"ignored")
    # Wait for the batches to start and finish.
    deadline = time.monotonic() + 60
    while sum(len(b or []) for b in fake.batches[1:]) < 500:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    await settle(folders, folder)
    batches = fake.batches[1:]
    assert len(batches) <= 2, [len(b or []) for b in batches]  # a burst, not 500 re-indexes
    names = {p for b in batches for p in b or []}
    assert names == {f"note-{i:03}.md" for i in range(500)}
    folders.remove(folder)


async def test_moves_and_deletes_name_both_ends(server: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "b.md").write_text("b")
    fake = FakeWorkspace()
    folders = RecordingFolders(server, fake)
    folder = folders.add(tmp_path)
    await settle(folders, folder)
    (tmp_path / "a.md").rename(tmp_path / "c.md")
    (tmp_path / "b.md").unlink()
    deadline = time.monotonic() + 30
    while {p for b in fake.batches[1:] for p in b or []} != {"a.md", "b.md", "c.md"}:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    folders.remove(folder)


async def test_a_new_directory_asks_for_a_rescan(server: FakeServer, tmp_path: Path) -> None:
    fake = FakeWorkspace()
    folders = RecordingFolders(server, fake)
    folder = folders.add(tmp_path)
    await settle(folders, folder)
    moved_in = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    moved_in.mkdir()
    (moved_in / "x.md").write_text("x")
    moved_in.rename(tmp_path / "sub")
    deadline = time.monotonic() + 30
    while fake.batches[1:].count(None) == 0:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    folders.remove(folder)


async def test_saves_are_immediate_and_diagnostics_follow_the_errors(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folders_module, "QUIET_SECONDS", 30.0)
    monkeypatch.setattr(folders_module, "MAX_WAIT_SECONDS", 60.0)
    fake = FakeWorkspace()
    folders = RecordingFolders(server, fake)
    folder = folders.add(tmp_path)
    await settle(folders, folder)
    fake.errors = [("scan.pdf", "PDF has no text layer (scanned?)")]
    report = await folders.run_now(folder, ["scan.pdf"])  # as didSave does: no debounce wait
    assert report.errors == fake.errors
    assert fake.batches[-1] == ["scan.pdf"]
    (published,) = server.published
    assert published.uri == (tmp_path / "scan.pdf").as_uri()
    assert published.diagnostics[0].message == "PDF has no text layer (scanned?)"
    assert folder.status_json()["errors"] == [
        {"path": "scan.pdf", "message": "PDF has no text layer (scanned?)"}
    ]
    fake.errors = []
    await folders.run_now(folder, ["scan.pdf"])
    assert server.published[-1].diagnostics == []
    assert len(server.published) == 2
    folders.remove(folder)


async def test_a_missing_folder_is_an_error_state_not_a_crash(
    server: FakeServer, tmp_path: Path
) -> None:
    folders = RecordingFolders(server, FakeWorkspace())
    folder = folders.add(tmp_path / "nope")
    assert folder.state == "error"
    assert "does not exist" in (folder.message or "")
    assert folder.status_json()["message"] == folder.message


async def test_invalid_citeline_toml_is_a_warning(server: FakeServer, tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text("[search]\ntop_k = 'lots'\n")
    folders = RecordingFolders(server, FakeWorkspace())
    folder = folders.add(tmp_path)
    assert any("top_k" in w for w in server.warnings)
    assert folder.settings.search.top_k == 5
    await settle(folders, folder)
    folders.remove(folder)
