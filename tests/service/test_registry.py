"""The folder registry: which folder holds a path, and settings read again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.service.registry import Folders
from citeline.service.scheduler import IngestScheduler
from citeline.service.workers import Workers
from recording import RecordingEvents


class NoBackends:
    def open_workspace(self, docs_root: Path, settings: object) -> None:
        pytest.fail("no indexing here")

    def release_unused(self) -> list[str]:
        return []  # nothing was loaded


@pytest.fixture()
def folders() -> Iterator[Folders]:
    workers = Workers()
    events = RecordingEvents()
    scheduler = IngestScheduler(workers, events, NoBackends())  # type: ignore[arg-type]
    yield Folders(workers, scheduler, events)
    workers.stop(5)


async def test_the_innermost_folder_holds_a_path(folders: Folders, tmp_path: Path) -> None:
    outer, inner = tmp_path / "docs", tmp_path / "docs" / "team"
    folders.reconcile([outer / "missing"])  # served in state "error": no watcher, no batch
    folders.reconcile([outer / "missing", inner / "missing"])
    assert len(folders) == 2
    found = folders.containing(inner / "missing" / "notes" / "a.md")
    assert found is not None and found[1] == "notes/a.md"
    assert found[0].root == inner / "missing"
    assert found[0].state == "error" and "does not exist" in (found[0].message or "")
    assert folders.containing(tmp_path / "elsewhere.md") is None
    folders.reconcile([inner / "missing"])
    assert [f.root for f in folders] == [inner / "missing"]
    assert folders.get(outer / "missing") is None


async def test_new_warnings_are_shown_once(folders: Folders, tmp_path: Path) -> None:
    docs = tmp_path / "gone"
    folder = folders.add(docs)
    docs.mkdir()
    (docs / "citeline.toml").write_text("[search]\ntop_k = 'lots'\n")
    folders.reload_settings(folder)
    folders.reload_settings(folder)
    events = folders.events
    assert isinstance(events, RecordingEvents)
    assert sum("top_k" in w for w in events.warnings) == 1


async def test_a_removed_folder_is_closed_and_forgotten(folders: Folders, tmp_path: Path) -> None:
    folder = folders.add(tmp_path / "missing")
    folders.remove(folder)
    assert folder.closed and folder.queue.cancel.is_set() and len(folders) == 0
    events = folders.events
    assert isinstance(events, RecordingEvents) and events.removed == [folder]
