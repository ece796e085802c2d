"""One served folder: paths, what new settings change, its workspace opened (and
reopened) when the index needs it, and the named transitions of its life."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from citeline.app import ModelPool
from citeline.core.chunking import ChunkSettings
from citeline.core.ingest import IngestReport
from citeline.service.errors import ServiceError
from citeline.service.folders import Folder, IngestQueue, folder_key, needs_reopen, relative_to
from citeline.service.status import FolderStatus
from citeline.settings import RerankingSettings, SearchSettings, Settings
from corpora import GARDEN, write_files


def test_paths_are_spelled_one_way_and_made_relative(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert folder_key(tmp_path / "a" / ".." / "a") == str((tmp_path / "a").resolve())
    assert relative_to(tmp_path, tmp_path / "a" / "b" / "c.md") == "a/b/c.md"
    assert relative_to(tmp_path / "a", tmp_path / "x.md") is None
    assert relative_to(tmp_path, tmp_path) is None


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
    first = folder.open_workspace(models)
    assert folder.open_workspace(models) is first
    folder.settings_loaded(replace(folder.settings, search=SearchSettings(top_k=9)), [])
    assert folder.open_workspace(models) is first and first.settings.search.top_k == 9
    folder.settings_loaded(replace(folder.settings, chunking=ChunkSettings(max_cost=500)), [])
    second = folder.open_workspace(models)
    assert second is not first and second.settings.chunking.max_cost == 500
    folder.close_workspace()
    assert folder.workspace is None
    folder.close()
    with pytest.raises(ServiceError, match="no longer served"):
        folder.open_workspace(models)


def opened(files: int) -> FolderStatus:
    return FolderStatus(docs=Path("/"), index="i", files=files, chunks=2 * files)


def test_a_start_on_an_indexed_folder_is_ready_then_indexing_for_changes(tmp_path: Path) -> None:
    folder = Folder(root=tmp_path, settings=Settings(), state="ready")
    assert folder.begin_batch() and folder.state == "indexing"
    assert not folder.begin_batch()  # already indexing: nothing new to tell
    assert folder.searchable(opened(3)) and folder.state == "ready" and folder.files == 3
    assert not folder.changes_found(0) and folder.state == "ready"
    assert folder.changes_found(2) and folder.state == "indexing"
    assert folder.queue.in_flight == 2
    assert folder.progressed(1, 4, 8) and (folder.files, folder.chunks) == (4, 8)
    report = IngestReport(files=5, chunks=10)
    report.errors = [("b.pdf", "no text")]
    folder.indexed(report, opened(5))
    assert folder.state == "ready" and folder.errors == [("b.pdf", "no text")]
    assert folder.status("g").files == 5
    folder.close()
    assert not folder.searchable(opened(1)) and not folder.progressed(0, 1, 1)


def test_a_failure_is_said_once_and_damage_recovered_once(tmp_path: Path) -> None:
    folder = Folder(root=tmp_path, settings=Settings())
    assert folder.failed("server away") and not folder.failed("server away")
    assert folder.state == "error" and folder.status("g").message == "server away"
    assert folder.recover() and not folder.recover()
    folder.indexed(IngestReport(), opened(0))
    assert folder.message is None and folder.recover()


def test_pause_resume_and_a_cancel_while_paused(tmp_path: Path) -> None:
    folder = Folder(root=tmp_path, settings=Settings())
    assert folder.pause() and not folder.pause() and folder.status("g").paused
    folder.queue.add(["a.md"], now=False, progress=True)
    assert folder.resume() and not folder.resume()
    assert folder.pause()
    assert folder.cancel()  # paused, nothing running: the waiting work is dropped
    assert not folder.queue.waiting and not folder.queue.paused
    folder.close()
    assert not folder.pause() and folder.queue.cancel.is_set()


def test_new_settings_say_their_new_warnings_once(tmp_path: Path) -> None:
    folder = Folder(root=tmp_path, settings=Settings(), warnings=["old"])
    assert folder.settings_loaded(Settings(), ["old", "new"]) == (["new"], False)
    top = replace(Settings(), search=SearchSettings(top_k=9))
    assert folder.settings_loaded(top, ["new"]) == ([], True) and folder.settings == top


async def test_a_queue_takes_what_waits_and_holds_what_a_pause_left() -> None:
    queue = IngestQueue()
    queue.add(["b.md", "a.md"], now=False, progress=False)
    fired = asyncio.Event()
    queue.arm(asyncio.get_running_loop(), fired.set, 0.01, 1.0)
    await asyncio.wait_for(fired.wait(), 5)
    queue.disarm()
    batch = queue.take()
    assert batch.paths == ["a.md", "b.md"] and queue.running and not queue.waiting
    assert queue.in_flight == 2
    queue.hold(batch, {"a.md"}, 2)
    assert queue.pending == {"b.md"} and queue.urgent and queue.in_flight == 0
    queue.finished()
    queue.add(None, now=True, progress=True)
    whole = queue.take()  # b.md goes with the whole folder
    assert whole.paths is None and whole.progress and not queue.pending
    queue.hold(whole, {"a.md"}, 3)
    assert whole.paths is None and queue.rescan and queue.pending_count == 2  # its undone files
    loop = asyncio.get_running_loop()
    failed: asyncio.Future[IngestReport] = loop.create_future()
    queue.waiters.append(failed)
    queue.fail_waiters(ServiceError("gone"))
    assert isinstance(failed.exception(), ServiceError) and queue.waiters == []
