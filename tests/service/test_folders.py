"""The folder registry: which folder holds a path, what new settings change, and a
folder's workspace opened (and reopened) when the index needs it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from citeline.app import ModelPool
from citeline.core.chunking import ChunkSettings
from citeline.service.errors import ServiceError
from citeline.service.folders import (
    Folder,
    Folders,
    ensure_open,
    folder_key,
    needs_reopen,
    relative_to,
)
from citeline.service.scheduler import IngestScheduler
from citeline.service.workers import Workers
from citeline.settings import RerankingSettings, SearchSettings, Settings
from corpora import GARDEN, write_files
from recording import RecordingEvents


@pytest.fixture()
def folders() -> Iterator[Folders]:
    workers = Workers()
    events = RecordingEvents()
    scheduler = IngestScheduler(workers, events, lambda folder: pytest.fail("no indexing here"))
    yield Folders(workers, scheduler, events)
    workers.stop(5)


def test_paths_are_spelled_one_way_and_made_relative(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert folder_key(tmp_path / "a" / ".." / "a") == str((tmp_path / "a").resolve())
    assert relative_to(tmp_path, tmp_path / "a" / "b" / "c.md") == "a/b/c.md"
    assert relative_to(tmp_path / "a", tmp_path / "x.md") is None
    assert relative_to(tmp_path, tmp_path) is None


async def test_the_innermost_folder_holds_a_path(folders: Folders, tmp_path: Path) -> None:
    outer, inner = tmp_path / "docs", tmp_path / "docs" / "team"
    folders.reconcile([outer / "missing"])  # served in state "error": no watcher, no batch
    folders.reconcile([outer / "missing", inner / "missing"])
    assert len(folders) == 2
    found = folders.containing(inner / "missing" / "notes" / "a.md")
    assert found is not None and found[1] == "notes/a.md"
    assert found[0].root == inner / "missing"
    assert folders.containing(tmp_path / "elsewhere.md") is None
    folders.reconcile([inner / "missing"])
    assert [f.root for f in folders] == [inner / "missing"]
    assert folders.get(outer / "missing") is None


def test_only_embedding_chunking_and_index_settings_change_the_index() -> None:
    base = Settings()
    assert not needs_reopen(base, replace(base, search=SearchSettings(top_k=9)))
    assert not needs_reopen(base, replace(base, reranking=RerankingSettings(model="r.gguf")))
    assert needs_reopen(base, replace(base, chunking=ChunkSettings(max_cost=500)))


def test_a_workspace_is_opened_once_and_reopened_for_a_new_index(
    tmp_path: Path, models: ModelPool
) -> None:
    docs = write_files(tmp_path / "garden", GARDEN)
    folder = Folder(root=docs, settings=Settings())
    first = ensure_open(folder, models)
    assert ensure_open(folder, models) is first
    folder.settings = replace(folder.settings, search=SearchSettings(top_k=9))
    assert ensure_open(folder, models) is first and first.settings.search.top_k == 9
    folder.settings = replace(folder.settings, chunking=ChunkSettings(max_cost=500))
    second = ensure_open(folder, models)
    assert second is not first and second.settings.chunking.max_cost == 500
    second.close()
    folder.closed = True
    with pytest.raises(ServiceError, match="no longer served"):
        ensure_open(folder, models)


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
