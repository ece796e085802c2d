"""Keeping folders fresh: changes collected, debounced and indexed as one batch.

Changes reach a folder from its watcher, from editor saves and from reindex
requests.  They collect in the folder's :class:`IngestQueue` and run as one
ingest batch on the index worker after a quiet spell (or at most a few seconds
after the first change), so a save storm or a checkout of hundreds of files is
one batch, planned once.  Only one batch per folder runs at a time; what arrives
meanwhile is the next batch.  While a batch runs, the folder's counts follow it
and searches get in between files; after it, the folder's load errors go to the
front end (diagnostics).

A start on a folder whose index already holds it is "ready" (searchable on the
index as it is) as soon as the index is open; the whole-folder catch-up that
follows (what changed while no server ran) turns the folder to "indexing" only
when it finds something to read or remove, as a save does.

A paused folder (:meth:`IngestScheduler.pause`) commits nothing more: its running
batch stops as a cancel does (after the file being committed; embedded vectors
are kept), what that batch left undone goes back to the queue, and changes keep
collecting there.  The folder stays searchable on what is indexed.  Resume plans
the queue as one batch: committed files are unchanged on disk, so they are
neither read nor embedded again.  Pausing lasts until resumed or the server
stops; nothing of it is written down.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable

from citeline.core import loaders
from citeline.core.errors import DiskFull, IndexDamaged, IndexUnavailable
from citeline.core.ingest import IngestReport
from citeline.service.errors import EXPECTED_ERRORS, ServiceError
from citeline.service.events import Events, Progress
from citeline.service.folders import Batch, Folder, fail
from citeline.service.status import FolderStatus
from citeline.service.workers import Worker, Workers
from citeline.service.workspace import Backends

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.3  # a batch starts after this long without a new change…
MAX_WAIT_SECONDS = 2.0  # …or this long after the first change of a burst
PROGRESS_MIN_FILES = 20  # smaller watcher batches do not show progress
COUNTS_INTERVAL = 0.25  # seconds between count refreshes while indexing
RETRY_SECONDS = 2.0  # an index whose server is unreachable is tried again this often
DISK_RETRY_SECONDS = 5.0  # an index whose disk is full, this often


class IngestScheduler:
    def __init__(self, workers: Workers, events: Events, backends: Backends) -> None:
        """``backends`` opens a folder's workspace (on the index worker)."""
        self.workers = workers
        self.events = events
        self.backends = backends
        #: Called (on the loop) after a whole-folder batch that changed or removed files:
        #: the documents' model choice may have changed with them.
        self.documents_changed: Callable[[Folder], None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # A paused batch's progress, carried on by the resume.
        self._paused_progress: dict[Folder, Progress] = {}

    def schedule(
        self,
        folder: Folder,
        paths: Iterable[str] | None,
        *,
        now: bool = False,
        progress: bool = False,
    ) -> None:
        """Queue ``paths`` (None: the whole folder) for the folder's next batch."""
        if folder.closed:
            return
        folder.queue.add(paths, now=now, progress=progress)
        self.events.status_changed()
        if now:
            self._flush(folder)
        else:
            self._arm(folder)

    async def run_now(self, folder: Folder, paths: Iterable[str] | None) -> IngestReport:
        """Bring ``paths`` (None: the whole folder) up to date now; the batch's report.
        A paused folder is refused (it would wait until resumed)."""
        if folder.queue.paused:
            raise ServiceError(f"indexing of {folder.root} is paused: resume it first")
        waiter = folder.queue.wait()
        self.schedule(folder, paths, now=True, progress=paths is None)
        return await waiter

    def abandon(self, folder: Folder) -> None:
        """Drop a folder's work: its timer, its running batch (cancelled), its waiters."""
        queue = folder.queue
        queue.cancel.set()
        queue.disarm()
        queue.fail_waiters(ServiceError(f"{folder.root} is no longer served"))
        self._end_paused_progress(folder, "stopped")

    def pause(self, folder: Folder) -> None:
        """Commit nothing more in ``folder`` until :meth:`resume`: a running batch stops
        after the file being committed and its undone work waits with new changes."""
        if folder.pause():
            log.info("%s: indexing paused", folder.name)
            self.events.status_changed(immediate=True)

    def resume(self, folder: Folder) -> None:
        """Index what waits in a paused ``folder`` now, and what changes from then on."""
        if folder.resume():
            log.info("%s: indexing resumed", folder.name)
            self.events.status_changed(immediate=True)
            self._flush(folder)

    def cancel(self, folder: Folder) -> None:
        """The user cancelled the folder's indexing: the running batch stops after the
        current file; a paused folder's waiting work is dropped and the pause ends.
        What is dropped is indexed by the next reindex or when it changes again."""
        if folder.cancel():
            self._end_paused_progress(folder, "cancelled while paused")
            log.info("%s: paused indexing cancelled", folder.name)
        self.events.status_changed(immediate=True)

    def _end_paused_progress(self, folder: Folder, message: str) -> None:
        progress = self._paused_progress.pop(folder, None)
        if progress is not None:
            progress.end(message)

    def _arm(self, folder: Folder) -> None:
        loop = asyncio.get_running_loop()
        flush = functools.partial(self._flush, folder)
        folder.queue.arm(loop, flush, QUIET_SECONDS, MAX_WAIT_SECONDS)

    def _flush(self, folder: Folder) -> None:
        queue = folder.queue
        queue.disarm()
        if folder.closed or queue.running or queue.paused or not queue.waiting:
            return  # a running batch flushes again when it ends; a paused folder on resume
        run = _Run(self, folder, queue.take())
        task = asyncio.get_running_loop().create_task(self._batch(run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one batch, in named steps -----------------------------------------------------

    async def _batch(self, run: _Run) -> None:
        """Run one batch on the index worker and take in its outcome."""
        self._begin(run)
        try:
            report, opened = await self.workers.index.call(run.work)
        except Exception as exc:
            await self._failed(run, exc)
        else:
            self._indexed(run, report, opened)
        finally:
            self._ended(run.folder)

    def _begin(self, run: _Run) -> None:
        if run.folder.begin_batch():
            self.events.status_changed(immediate=True)
        # A batch resumed after a pause reports on the paused batch's progress.
        run.shown = self._paused_progress.pop(run.folder, None)
        if run.shown is not None:
            run.shown.report(None, "resuming…")
        elif run.batch.progress:
            run.shown = run.show("scanning…")

    async def _failed(self, run: _Run, exc: Exception) -> None:
        folder, waiters = run.folder, run.batch.waiters
        if folder.closed:
            fail(waiters, ServiceError(f"{folder.root} is no longer served"))
            return
        if isinstance(exc, IndexDamaged) and folder.recover():
            # Damage met while the index was in use: reopening moves it aside and
            # rebuilds it.  Once: damage again right after is reported as it is.
            log.warning("%s: %s; reopening it", folder.name, exc)
            await self.workers.index.call(folder.close_workspace)
            self.schedule(folder, None, now=True, progress=True)
            fail(waiters, exc)
            return
        message = str(exc) or type(exc).__name__
        if isinstance(exc, DiskFull):  # reopened on the retry: read-only until space
            await self.workers.index.call(folder.close_workspace)
        new = folder.failed(message)
        if not isinstance(exc, EXPECTED_ERRORS):
            log.error("%s: indexing failed: %s", folder.name, exc, exc_info=exc)
        elif new:  # once per state: a team server that stays away is retried quietly
            log.error("%s: indexing failed: %s", folder.name, message)
        if isinstance(exc, IndexUnavailable):  # the server (or space) may come back:
            # try again, planning the whole folder, so that whatever changed
            # meanwhile (the edits a full disk refused included) is indexed then
            wait = DISK_RETRY_SECONDS if isinstance(exc, DiskFull) else RETRY_SECONDS
            asyncio.get_running_loop().call_later(wait, self.schedule, folder, None)
        fail(waiters, exc)
        if run.shown is not None:
            run.shown.end(f"failed: {message}")

    def _indexed(self, run: _Run, report: IngestReport, opened: FolderStatus) -> None:
        folder, batch = run.folder, run.batch
        if folder.closed:
            fail(batch.waiters, ServiceError(f"{folder.root} is no longer served"))
            return
        folder.indexed(report, opened)
        if batch.paths is None:  # idle now: a first save should not pay for its parser
            self.workers.index.submit(loaders.preload)
        self.events.file_errors_changed(folder)
        for waiter in batch.waiters:
            if not waiter.done():
                waiter.set_result(report)
        summary = (
            f"{report.files_changed} changed, {report.files_removed} removed,"
            f" {report.embedded} embedded"
        )
        paused = run.paused.is_set() and not run.cancel.is_set()
        if report.files_changed or report.files_removed or batch.paths is None:
            log.info(
                "%s: %s%s in %.1fs (%d files, %d chunks)",
                folder.name,
                summary,
                (" (paused)" if run.paused.is_set() else " (cancelled)")
                if report.cancelled
                else "",
                time.perf_counter() - run.started,
                report.files,
                report.chunks,
            )
        if paused:
            # Stopped by a pause: the undone work waits (with the batch's waiters'
            # report given now, as a cancel gives it) for the resume.
            folder.queue.hold(batch, run.committed, run.planned)
            if run.shown is not None:
                self._paused_progress[folder] = run.shown
                run.shown.report(None, f"paused · {folder.queue.pending_count} files waiting")
        elif run.shown is not None:
            run.shown.end(("cancelled: " if report.cancelled else "") + summary)
        changed = report.files_changed or report.files_removed
        if batch.paths is None and changed and self.documents_changed is not None:
            self.documents_changed(folder)

    def _ended(self, folder: Folder) -> None:
        """The batch is over: the next one if work waits."""
        queue = folder.queue
        queue.finished()
        if not folder.closed:
            self.events.status_changed(immediate=True)
            if queue.waiting:
                if queue.urgent:
                    self._flush(folder)
                else:
                    self._arm(folder)


class _Run:
    """One batch as it runs.  The index worker runs :meth:`work` and the hooks ingest
    calls (:meth:`stopped`, :meth:`progress`, :meth:`planned_files`); they hand what
    the loop shows to it.  ``planned``, ``committed`` and ``paused`` are written on the
    index worker and read on the loop once the batch returned."""

    def __init__(self, scheduler: IngestScheduler, folder: Folder, batch: Batch) -> None:
        self.scheduler = scheduler
        self.folder = folder
        self.batch = batch
        self.loop = asyncio.get_running_loop()
        self.worker: Worker = scheduler.workers.index
        self.cancel = folder.queue.cancel
        self.started = time.perf_counter()
        self.shown: Progress | None = None  # loop
        self.paused = threading.Event()  # stopped by a pause, not a cancel
        self.planned = 0  # files the plan found to index or remove
        self.committed: set[str] = set()  # paths committed so far
        self._done = 0
        self._counted = 0.0  # when counts were last sent to the loop
        self._catch_up = False  # a start on an index that already holds the folder

    def show(self, message: str | None) -> Progress:  # loop
        title = f"Citeline: indexing {self.folder.name}"
        return self.scheduler.events.start_progress(
            title, functools.partial(self.scheduler.cancel, self.folder), message
        )

    def work(self) -> tuple[IngestReport, FolderStatus]:  # index worker
        folder = self.folder
        before = folder.workspace
        ws = folder.open_workspace(self.scheduler.backends)
        # A start (or a reopen) on an index that holds the folder: searchable now,
        # while the whole-folder catch-up looks for what changed meanwhile.
        self._catch_up = self.batch.paths is None and ws is not before and not folder.team
        if self._catch_up and (opened := ws.status()).files:
            self.loop.call_soon_threadsafe(self._searchable, opened)
        report = ws.update(
            self.batch.paths,
            progress=self.progress,
            cancelled=self.stopped,
            between=self.worker.run_urgent,  # searches wait for one model call at most
            planned=self.planned_files,
        )
        return report, ws.status()

    def stopped(self) -> bool:  # index worker: checked before each file and model call
        if self.cancel.is_set() or self.folder.closed:
            return True
        if self.folder.queue.paused:
            self.paused.set()
            return True
        return False

    def planned_files(self, changed: int) -> None:  # index worker
        self.planned = changed
        if self._catch_up:
            self.loop.call_soon_threadsafe(self._changes_found, changed)

    def progress(self, done: int, total: int, rel: str) -> None:  # index worker
        if done > self._done:  # ``rel`` is done (else a report inside a large file)
            self.committed.add(rel)
            self._done = done
        self.worker.run_urgent()  # let searches in between files
        now = time.monotonic()
        if done < total and now - self._counted < COUNTS_INTERVAL:
            return
        self._counted = now
        ws = self.folder.workspace
        counts = ws.counts() if ws is not None else None
        files, chunks = (
            (counts.files, counts.chunks) if counts else (self.folder.files, self.folder.chunks)
        )
        self.loop.call_soon_threadsafe(self._counts, done, total, rel, files, chunks)

    def _searchable(self, opened: FolderStatus) -> None:  # loop
        if self.folder.searchable(opened):
            self.scheduler.events.status_changed(immediate=True)

    def _changes_found(self, changed: int) -> None:  # loop
        if self.folder.changes_found(changed):
            self.scheduler.events.status_changed(immediate=True)

    def _counts(self, done: int, total: int, rel: str, files: int, chunks: int) -> None:  # loop
        if not self.folder.progressed(max(total - done, 0), files, chunks):
            return
        if self.shown is None and total >= PROGRESS_MIN_FILES:
            self.shown = self.show(rel)
        if self.shown is not None:
            self.shown.report(int(100 * done / total) if total else 100, rel)
        self.scheduler.events.status_changed()
