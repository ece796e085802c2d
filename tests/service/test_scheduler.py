"""Keeping a folder fresh: the real watcher, registry and debouncer, with a recording
workspace.

No models: the scheduler's workspace opener gives a fake whose ``update`` records
each batch, so these tests show how changes on disk become batches.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from citeline.core import loaders
from citeline.core.errors import IndexUnavailable
from citeline.core.index import IndexCounts
from citeline.core.ingest import IngestReport
from citeline.service import scheduler as scheduler_module
from citeline.service.errors import ServiceError
from citeline.service.folders import Folder
from citeline.service.registry import Folders
from citeline.service.scheduler import IngestScheduler
from citeline.service.status import FolderStatus
from citeline.service.workers import Workers
from citeline.settings import Settings
from recording import RecordingEvents, StateEvents, settled


class FakeWorkspace:
    """Records update batches; ``errors`` is what the index reports after a batch."""

    def __init__(self) -> None:
        self.batches: list[list[str] | None] = []
        self.errors: list[tuple[str, str]] = []
        self.thread: str | None = None
        self.settings = Settings()
        self.ingestor = SimpleNamespace(batch_chunks=0, embed_chunks=0)
        self.index = SimpleNamespace(subscribe=lambda callback: False)
        self.closed = 0

    def apply_settings(self, settings: Settings) -> None:
        self.settings = settings

    def close(self) -> None:
        self.closed += 1

    def update(
        self,
        paths: list[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        between: Callable[[], None] | None = None,
        planned: Callable[[int], None] | None = None,
    ) -> IngestReport:
        self.thread = threading.current_thread().name
        self.batches.append(None if paths is None else sorted(paths))
        for i, path in enumerate(paths or []):
            if progress:
                progress(i + 1, len(paths or []), path)
        report = IngestReport(files_changed=len(paths or []))
        report.errors = list(self.errors)
        return report

    def counts(self) -> IndexCounts:
        return IndexCounts(0, 0)

    def status(self) -> FolderStatus:
        return FolderStatus(docs=Path("/"), index="fake", dimension=3)


class IndexedWorkspace(FakeWorkspace):
    """An index that already holds the folder; its start-up scan finds ``changed`` files."""

    def __init__(self, changed: int) -> None:
        super().__init__()
        self.changed = changed

    def update(self, paths: list[str] | None = None, **options: Any) -> IngestReport:
        planned = options.get("planned")
        if planned is not None:
            planned(self.changed)
            time.sleep(0.2)  # the changed files being indexed
        return super().update(paths, **options)

    def counts(self) -> IndexCounts:
        return IndexCounts(3, 12)

    def status(self) -> FolderStatus:
        return FolderStatus(docs=Path("/"), index="fake", files=3, chunks=12, dimension=3)


class FakeBackends:
    """Opens the one fake workspace for every folder (as ``app.ModelPool`` opens real ones)."""

    def __init__(self, fake: FakeWorkspace) -> None:
        self.fake = fake

    def open_workspace(self, docs_root: Path, settings: Settings) -> FakeWorkspace:
        self.fake.settings = settings
        return self.fake

    def release_unused(self) -> list[str]:
        return []  # the one fake workspace holds no models


def scheduler_over(
    workers: Workers, events: RecordingEvents, fake: FakeWorkspace
) -> IngestScheduler:
    return IngestScheduler(workers, events, FakeBackends(fake))  # type: ignore[arg-type]


@dataclass
class Setup:
    folders: Folders
    scheduler: IngestScheduler
    events: RecordingEvents
    fake: FakeWorkspace


@pytest.fixture()
def setup() -> Iterator[Setup]:
    workers = Workers()
    events = RecordingEvents()
    fake = FakeWorkspace()
    scheduler = scheduler_over(workers, events, fake)
    yield Setup(Folders(workers, scheduler, events), scheduler, events, fake)
    workers.stop(5)


async def settle(folder: Folder, timeout: float = 30) -> None:
    """Until nothing is pending or running (checked on the loop, not by sleeping a fixed time)."""
    deadline = time.monotonic() + timeout
    while not settled(folder):
        assert time.monotonic() < deadline, "the folder never settled"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("changed", [0, 2])
async def test_an_indexed_folder_is_ready_at_once_and_indexing_only_for_what_changed(
    tmp_path: Path, changed: int
) -> None:
    workers = Workers()
    events = StateEvents()
    fake = IndexedWorkspace(changed)
    scheduler = scheduler_over(workers, events, fake)
    try:
        events.watched = folder = Folders(workers, scheduler, events).add(tmp_path)
        events.states = [(folder.state, folder.files)]
        await settle(folder)
        # Searchable, with the index's counts, before the start-up scan ends; "indexing"
        # again only when that scan found something to index.
        expected = [("indexing", 0), ("ready", 3)] + ([("indexing", 3)] if changed else [])
        assert events.states[: len(expected)] == expected
        assert [state for state, _ in events.states] == [s for s, _ in expected] + (
            ["ready"] if changed else []
        )
        assert fake.batches == [None] and folder.state == "ready"
    finally:
        workers.stop(5)


class CatchUpWorkspace(FakeWorkspace):
    """Its whole-folder catch-up finds one file changed while no server ran."""

    def update(self, paths: list[str] | None = None, **options: Any) -> IngestReport:
        report = super().update(paths, **options)
        report.files_changed = 1 if paths is None else report.files_changed
        return report


async def test_a_start_takes_the_recorded_model_and_decides_again_after_changes(
    tmp_path: Path,
) -> None:
    from citeline.models.choice import E5, MINILM, choose_embedding_model

    docs = tmp_path / "docs"
    (docs / ".citeline").mkdir(parents=True)
    (docs / "a.md").write_text("Plain English notes about the garden. " * 20, "utf-8")
    assert choose_embedding_model(docs, docs / ".citeline").model == MINILM  # recorded
    chinese = "检索增强生成把文档切成段落，再用向量找出最相关的几段。"
    (docs / "b.md").write_text(chinese * 20, "utf-8")
    workers = Workers()
    events = RecordingEvents()
    fake = CatchUpWorkspace()
    scheduler = IngestScheduler(workers, events, FakeBackends(fake))  # type: ignore[arg-type]
    try:
        folder = Folders(workers, scheduler, events).add(docs)
        assert folder.settings.embedding.bundled == MINILM  # the record, not a walk
        await settle(folder)
        # the catch-up saw a change: the documents decided again, and the new model
        # asked for a whole-folder batch on the reopened index
        assert folder.settings.embedding.bundled == E5
        assert fake.batches == [None, None]
    finally:
        workers.stop(5)


async def test_a_burst_of_500_new_files_is_one_batch(setup: Setup, tmp_path: Path) -> None:
    fake = setup.fake
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    assert fake.batches == [None]  # the initial full scan
    assert fake.thread == "citeline-index"
    assert setup.events.progress[0].ended is not None  # the start-up scan shows progress
    for i in range(500):
        (tmp_path / f"note-{i:03}.md").write_text(f"# Note {i}\n")
    (tmp_path / ".hidden.md").write_text("ignored")
    (tmp_path / "picture.png").write_bytes(b"ignored")
    # Wait for the batches to start and finish.
    deadline = time.monotonic() + 60
    while sum(len(b or []) for b in fake.batches[1:]) < 500:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    await settle(folder)
    batches = fake.batches[1:]
    assert len(batches) <= 2, [len(b or []) for b in batches]  # a burst, not 500 re-indexes
    names = {p for b in batches for p in b or []}
    assert names == {f"note-{i:03}.md" for i in range(500)}
    setup.folders.remove(folder)


async def test_moves_and_deletes_name_both_ends(setup: Setup, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("a")
    (tmp_path / "b.md").write_text("b")
    fake = setup.fake
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    (tmp_path / "a.md").rename(tmp_path / "c.md")
    (tmp_path / "b.md").unlink()
    deadline = time.monotonic() + 30
    while {p for b in fake.batches[1:] for p in b or []} != {"a.md", "b.md", "c.md"}:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    setup.folders.remove(folder)


async def test_a_new_directory_asks_for_a_rescan(setup: Setup, tmp_path: Path) -> None:
    fake = setup.fake
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    moved_in = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    moved_in.mkdir()
    (moved_in / "x.md").write_text("x")
    moved_in.rename(tmp_path / "sub")
    deadline = time.monotonic() + 30
    while fake.batches[1:].count(None) == 0:
        assert time.monotonic() < deadline, fake.batches
        await asyncio.sleep(0.05)
    setup.folders.remove(folder)


async def test_saves_are_immediate_and_errors_follow_each_batch(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_module, "QUIET_SECONDS", 30.0)
    monkeypatch.setattr(scheduler_module, "MAX_WAIT_SECONDS", 60.0)
    fake = setup.fake
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    fake.errors = [("scan.pdf", "PDF has no text layer (scanned?)")]
    # as a save does: no debounce wait
    report = await setup.scheduler.run_now(folder, ["scan.pdf"])
    assert report.errors == fake.errors
    assert fake.batches[-1] == ["scan.pdf"]
    assert setup.events.errors[-1] == fake.errors
    assert folder.status("g.gguf").to_json()["errors"] == [
        {"path": "scan.pdf", "message": "PDF has no text layer (scanned?)"}
    ]
    fake.errors = []
    await setup.scheduler.run_now(folder, ["scan.pdf"])
    assert setup.events.errors[-1] == []
    setup.folders.remove(folder)
    assert setup.events.removed == [folder]


async def test_an_editor_save_of_a_document_is_scheduled_at_once(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_module, "QUIET_SECONDS", 30.0)
    monkeypatch.setattr(scheduler_module, "MAX_WAIT_SECONDS", 60.0)
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    for name in ("notes.md", ".hidden.md", "picture.png", ".citeline/x.md"):
        setup.folders.saved(tmp_path / name)
    setup.folders.saved(tmp_path.parent / "elsewhere.md")
    await settle(folder)
    assert setup.fake.batches[1:] == [["notes.md"]]
    setup.folders.remove(folder)


async def test_a_missing_folder_is_an_error_state_not_a_crash(setup: Setup, tmp_path: Path) -> None:
    folder = setup.folders.add(tmp_path / "nope")
    assert folder.state == "error"
    assert "does not exist" in (folder.message or "")
    assert folder.status("g.gguf").to_json()["message"] == folder.message


async def test_invalid_citeline_toml_is_a_warning(setup: Setup, tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text("[search]\ntop_k = 'lots'\n")
    folder = setup.folders.add(tmp_path)
    assert any("top_k" in w for w in setup.events.warnings)
    assert folder.settings.search.top_k == 5
    await settle(folder)
    setup.folders.remove(folder)


async def test_parsers_are_imported_on_the_index_worker_after_a_whole_folder_batch_only(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    monkeypatch.setattr(loaders, "preload", lambda: threads.append(threading.current_thread().name))
    folder = setup.folders.add(tmp_path)
    await settle(folder)
    await setup.scheduler.run_now(folder, ["notes.md"])
    await setup.scheduler.run_now(folder, None)
    deadline = time.monotonic() + 10
    while len(threads) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert threads == [setup.fake.thread] * 2  # the opening batch and the rescan


async def test_a_team_reader_refreshes_without_watching_and_retries_a_lost_server(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_module, "RETRY_SECONDS", 0.1)
    (tmp_path / "citeline.toml").write_text(
        '[index]\nstore = "postgresql://db.example.com/citeline"\ncollection = "docs"\n'
    )
    fake = setup.fake
    down = {"left": 3}
    update = fake.update

    def flaky(*args: object, **kwargs: object) -> IngestReport:
        if down["left"]:
            down["left"] -= 1
            raise IndexUnavailable(
                "the team index postgresql://db.example.com/citeline#docs cannot be reached"
            )
        return update(*args, **kwargs)  # type: ignore[arg-type]

    fake.update = flaky  # type: ignore[method-assign]
    folder = setup.folders.add(tmp_path)
    assert folder.watcher is None  # its writer indexes the canonical checkout
    assert folder.status("g.gguf").to_json()["index"] == "postgresql://db.example.com/citeline#docs"
    deadline = time.monotonic() + 30
    while folder.state != "error":
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert "cannot be reached" in (folder.message or "")
    while folder.state != "ready":  # retried on its own, nobody asked
        assert time.monotonic() < deadline, folder.message
        await asyncio.sleep(0.05)
    assert fake.batches == [None]
    # a writer's commit (the index's notification) is a refresh, never an "indexing" state
    states: list[str] = []
    monkeypatch.setattr(
        setup.events, "status_changed", lambda immediate=False: states.append(folder.state)
    )
    assert folder.on_index_change is not None
    folder.on_index_change()
    await asyncio.sleep(0.05)
    await settle(folder)
    assert fake.batches == [None, None] and "indexing" not in states
    setup.folders.saved(tmp_path / "notes.md")  # a reader does not index its clone
    await settle(folder)
    assert fake.batches == [None, None]
    setup.folders.remove(folder)


class SteppedWorkspace(FakeWorkspace):
    """Indexes ``files`` (or the paths asked) one file per step the test allows, and
    checks cancellation once allowed, before committing the file, as ingest does."""

    def __init__(self, files: list[str]) -> None:
        super().__init__()
        self.files = files
        self.steps = threading.Semaphore(0)
        self.committed: list[str] = []

    def update(
        self,
        paths: list[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        between: Callable[[], None] | None = None,
        planned: Callable[[int], None] | None = None,
    ) -> IngestReport:
        self.batches.append(None if paths is None else sorted(paths))
        todo = list(self.files) if paths is None else sorted(paths)
        if planned is not None:
            planned(len(todo))
        report = IngestReport()
        for done, rel in enumerate(todo, 1):
            assert self.steps.acquire(timeout=30), "the test never allowed the next file"
            if cancelled is not None and cancelled():
                report.cancelled = True
                break
            self.committed.append(rel)
            report.files_changed += 1
            if progress is not None:
                progress(done, len(todo), rel)
        report.files = len(set(self.committed))
        return report


@pytest.fixture()
def stepped() -> Iterator[tuple[Folders, IngestScheduler, RecordingEvents, SteppedWorkspace]]:
    workers = Workers()
    events = RecordingEvents()
    fake = SteppedWorkspace(["a.md", "b.md", "c.md", "d.md"])
    scheduler = scheduler_over(workers, events, fake)
    yield Folders(workers, scheduler, events), scheduler, events, fake
    fake.steps.release(100)
    workers.stop(5)


async def until(condition: Callable[[], object], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.02)


async def paused_after_one_file(
    folders: Folders, scheduler: IngestScheduler, fake: SteppedWorkspace, root: Path
) -> Folder:
    """The folder's start-up batch paused once its first file is committed."""
    folder = folders.add(root)
    fake.steps.release()
    await until(lambda: fake.committed == ["a.md"], "the first file committed")
    scheduler.pause(folder)
    assert folder.status("g").paused  # at once, while the batch finishes its file
    fake.steps.release()  # the batch may go on: it sees the pause and stops
    await until(lambda: not folder.queue.running, "the batch stopped")
    return folder


async def test_pause_stops_the_batch_keeps_its_work_and_resume_plans_it_once(
    stepped: tuple[Folders, IngestScheduler, RecordingEvents, SteppedWorkspace],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduler_module, "PROGRESS_MIN_FILES", 1)
    folders, scheduler, events, fake = stepped
    folder = await paused_after_one_file(folders, scheduler, fake, tmp_path)
    assert fake.committed == ["a.md"]
    status = folder.status("g")
    assert (status.state, status.paused, status.files, status.pending) == ("ready", True, 1, 3)
    (progress,) = events.progress
    assert progress.ended is None  # the run is paused, not over
    assert progress.reports[-1] == (None, "paused · 3 files waiting")

    # Changes keep collecting; nothing runs, and a reindex is refused, not left waiting.
    folders.saved(tmp_path / "e.md")
    assert folder.status("g").pending == 4
    with pytest.raises(ServiceError, match="paused"):
        await scheduler.run_now(folder, None)
    await asyncio.sleep(0.5)
    assert len(fake.batches) == 1 and not folder.queue.running
    scheduler.pause(folder)  # pausing twice is one pause
    assert folder.queue.paused

    scheduler.resume(folder)
    assert not folder.status("g").paused
    fake.steps.release(100)
    await settle(folder)
    assert fake.batches == [None, None]  # one batch: the whole folder planned again
    assert progress.ended is not None and len(events.progress) == 1  # the same progress
    status = folder.status("g")
    assert (status.state, status.paused, status.pending) == ("ready", False, 0)


async def test_a_paused_batch_of_paths_keeps_only_what_it_did_not_commit(
    stepped: tuple[Folders, IngestScheduler, RecordingEvents, SteppedWorkspace], tmp_path: Path
) -> None:
    folders, scheduler, _, fake = stepped
    folder = folders.add(tmp_path)
    fake.steps.release(4)
    await settle(folder)
    fake.committed.clear()
    scheduler.schedule(folder, ["x.md", "y.md", "z.md"], now=True)
    fake.steps.release()
    await until(lambda: fake.committed == ["x.md"], "x.md committed")
    scheduler.pause(folder)
    fake.steps.release()
    await until(lambda: not folder.queue.running, "the batch stopped")
    assert folder.queue.pending == {"y.md", "z.md"}
    assert folder.status("g").pending == 2
    scheduler.resume(folder)
    fake.steps.release(2)
    await settle(folder)
    assert fake.batches[-1] == ["y.md", "z.md"]
    assert fake.committed == ["x.md", "y.md", "z.md"]


async def test_cancel_while_paused_drops_the_waiting_work_and_ends_the_pause(
    stepped: tuple[Folders, IngestScheduler, RecordingEvents, SteppedWorkspace],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduler_module, "PROGRESS_MIN_FILES", 1)
    folders, scheduler, events, fake = stepped
    folder = await paused_after_one_file(folders, scheduler, fake, tmp_path)
    scheduler.cancel(folder)
    assert settled(folder)
    status = folder.status("g")
    assert (status.paused, status.pending, status.files) == (False, 0, 1)
    assert events.progress[0].ended == "cancelled while paused"
    await asyncio.sleep(0.3)
    assert len(fake.batches) == 1  # nothing left to run
    folders.saved(tmp_path / "later.md")  # later changes are indexed as usual
    fake.steps.release()
    await settle(folder)
    assert fake.batches[-1] == ["later.md"]


async def test_resume_of_a_folder_not_paused_and_pause_of_a_removed_one_do_nothing(
    stepped: tuple[Folders, IngestScheduler, RecordingEvents, SteppedWorkspace], tmp_path: Path
) -> None:
    folders, scheduler, _, fake = stepped
    folder = folders.add(tmp_path)
    fake.steps.release(4)
    await settle(folder)
    scheduler.resume(folder)
    assert len(fake.batches) == 1
    folders.remove(folder)
    scheduler.pause(folder)
    assert not folder.queue.paused
