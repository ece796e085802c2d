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
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from citeline.core import loaders
from citeline.core.errors import DiskFull, IndexDamaged, IndexUnavailable
from citeline.core.ingest import IngestReport
from citeline.service.errors import EXPECTED_ERRORS, ServiceError
from citeline.service.events import Events, Progress
from citeline.service.status import FolderStatus
from citeline.service.workers import Workers
from citeline.service.workspace import Workspace

if TYPE_CHECKING:
    from citeline.service.folders import Folder

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.3  # a batch starts after this long without a new change…
MAX_WAIT_SECONDS = 2.0  # …or this long after the first change of a burst
PROGRESS_MIN_FILES = 20  # smaller watcher batches do not show progress
COUNTS_INTERVAL = 0.25  # seconds between count refreshes while indexing
RETRY_SECONDS = 2.0  # an index whose server is unreachable is tried again this often
DISK_RETRY_SECONDS = 5.0  # an index whose disk is full, this often


@dataclass(eq=False)
class IngestQueue:
    """A folder's ingest work: waiting for the next batch, and the batch running now."""

    pending: set[str] = field(default_factory=set)
    rescan: bool = False
    urgent: bool = False
    want_progress: bool = False
    waiters: list[asyncio.Future[IngestReport]] = field(default_factory=list)
    running: bool = False
    in_flight: int = 0
    cancel: threading.Event = field(default_factory=threading.Event)
    timer: asyncio.TimerHandle | None = None
    burst_started: float | None = None
    paused: bool = False
    held: int = 0  # files a paused whole-folder batch left undone (its rescan redoes them)
    progress: Progress | None = None  # a paused batch's progress, carried on by the resume

    @property
    def pending_count(self) -> int:
        return len(self.pending) + self.in_flight + (self.held if self.rescan else 0)


class IngestScheduler:
    def __init__(
        self, workers: Workers, events: Events, open_workspace: Callable[[Folder], Workspace]
    ) -> None:
        """``open_workspace`` gives a folder's workspace on the index worker."""
        self.workers = workers
        self.events = events
        self.open_workspace = open_workspace
        #: Called (on the loop) after a whole-folder batch that changed or removed files:
        #: the documents' model choice may have changed with them.
        self.documents_changed: Callable[[Folder], None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def schedule(
        self,
        folder: Folder,
        paths: Iterable[str] | None,
        *,
        now: bool = False,
        progress: bool = False,
    ) -> None:
        """Queue ``paths`` (None: the whole folder) for the folder's next batch."""
        queue = folder.queue
        if folder.closed:
            return
        if paths is None:
            queue.rescan = True
        else:
            queue.pending.update(paths)
        queue.want_progress = queue.want_progress or progress
        queue.urgent = queue.urgent or now
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
        waiter: asyncio.Future[IngestReport] = asyncio.get_running_loop().create_future()
        folder.queue.waiters.append(waiter)
        self.schedule(folder, paths, now=True, progress=paths is None)
        return await waiter

    def abandon(self, folder: Folder) -> None:
        """Drop a folder's work: its timer, its running batch (cancelled), its waiters."""
        queue = folder.queue
        queue.cancel.set()
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        _fail(queue.waiters, ServiceError(f"{folder.root} is no longer served"))
        queue.waiters = []
        if queue.progress is not None:
            queue.progress.end("stopped")
            queue.progress = None

    def pause(self, folder: Folder) -> None:
        """Commit nothing more in ``folder`` until :meth:`resume`: a running batch stops
        after the file being committed and its undone work waits with new changes."""
        queue = folder.queue
        if folder.closed or queue.paused:
            return
        queue.paused = True
        log.info("%s: indexing paused", folder.name)
        self.events.status_changed(immediate=True)

    def resume(self, folder: Folder) -> None:
        """Index what waits in a paused ``folder`` now, and what changes from then on."""
        queue = folder.queue
        if folder.closed or not queue.paused:
            return
        queue.paused = False
        log.info("%s: indexing resumed", folder.name)
        self.events.status_changed(immediate=True)
        self._flush(folder)

    def cancel(self, folder: Folder) -> None:
        """The user cancelled the folder's indexing: the running batch stops after the
        current file; a paused folder's waiting work is dropped and the pause ends.
        What is dropped is indexed by the next reindex or when it changes again."""
        queue = folder.queue
        queue.cancel.set()
        if queue.paused and not queue.running:
            queue.pending = set()
            queue.rescan = queue.urgent = queue.want_progress = False
            queue.held = 0
            if queue.progress is not None:
                queue.progress.end("cancelled while paused")
                queue.progress = None
            log.info("%s: paused indexing cancelled", folder.name)
        queue.paused = False
        self.events.status_changed(immediate=True)

    def _arm(self, folder: Folder) -> None:
        queue = folder.queue
        loop = asyncio.get_running_loop()
        now = loop.time()
        if queue.burst_started is None:
            queue.burst_started = now
        due = min(now + QUIET_SECONDS, queue.burst_started + MAX_WAIT_SECONDS)
        if queue.timer is not None:
            queue.timer.cancel()
        queue.timer = loop.call_at(due, self._flush, folder)

    def _flush(self, folder: Folder) -> None:
        queue = folder.queue
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        queue.burst_started = None
        if folder.closed or queue.running or queue.paused:
            return  # a running batch flushes again when it ends; a paused folder on resume
        if not queue.pending and not queue.rescan:
            return
        paths = None if queue.rescan else sorted(queue.pending)
        progress = queue.want_progress
        waiters = queue.waiters
        queue.pending = set()
        queue.rescan = queue.urgent = queue.want_progress = False
        queue.held = 0
        queue.waiters = []
        queue.running = True
        task = asyncio.get_running_loop().create_task(self._batch(folder, paths, progress, waiters))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _batch(
        self,
        folder: Folder,
        paths: list[str] | None,
        progress: bool,
        waiters: list[asyncio.Future[IngestReport]],
    ) -> None:
        loop = asyncio.get_running_loop()
        worker = self.workers.index
        queue = folder.queue
        cancel = threading.Event()
        queue.cancel = cancel
        queue.in_flight = len(paths) if paths is not None else 0
        refresh_only = folder.settings.index.team  # a reader: nothing to index
        if folder.state != "indexing" and not refresh_only:
            folder.state = "indexing"
            self.events.status_changed(immediate=True)
        # A batch resumed after a pause reports on the paused batch's progress.
        shown: Progress | None = queue.progress
        queue.progress = None
        # What the batch got through (index worker; read on the loop once it returned).
        paused_stop = threading.Event()
        planned_count = 0
        committed: set[str] = set()
        last_done = 0

        def show_progress(message: str | None) -> Progress:
            title = f"Citeline: indexing {folder.name}"
            return self.events.start_progress(title, lambda: self.cancel(folder), message)

        if shown is not None:
            shown.report(None, "resuming…")
        elif progress:
            shown = show_progress("scanning…")

        def stopped() -> bool:  # index worker: checked before each file and model call
            if cancel.is_set() or folder.closed:
                return True
            if queue.paused:
                paused_stop.set()
                return True
            return False

        def on_progress_loop(done: int, total: int, rel: str, files: int, chunks: int) -> None:
            nonlocal shown
            if folder.closed:
                return
            queue.in_flight = max(total - done, 0)
            folder.files, folder.chunks = files, chunks
            if shown is None and total >= PROGRESS_MIN_FILES:
                shown = show_progress(rel)
            if shown is not None:
                shown.report(int(100 * done / total) if total else 100, rel)
            self.events.status_changed()

        last = 0.0

        def on_progress(done: int, total: int, rel: str) -> None:  # index worker
            nonlocal last, last_done
            if done > last_done:  # ``rel`` is done (else a report inside a large file)
                committed.add(rel)
                last_done = done
            worker.run_urgent()  # let searches in between files
            now = time.monotonic()
            if done < total and now - last < COUNTS_INTERVAL:
                return
            last = now
            ws = folder.workspace
            counts = ws.counts() if ws is not None else None
            files, chunks = (
                (counts.files, counts.chunks) if counts else (folder.files, folder.chunks)
            )
            loop.call_soon_threadsafe(on_progress_loop, done, total, rel, files, chunks)

        def on_searchable(opened: FolderStatus) -> None:  # loop
            if folder.closed:
                return
            folder.state = "ready"
            folder.opened = opened
            folder.files, folder.chunks = opened.files, opened.chunks
            folder.errors, folder.notes = list(opened.errors), list(opened.notes)
            self.events.status_changed(immediate=True)

        def on_planned(changed: int) -> None:  # loop
            if folder.closed or not changed:
                return
            queue.in_flight = changed
            folder.state = "indexing"
            self.events.status_changed(immediate=True)

        def planned(changed: int) -> None:  # index worker
            nonlocal planned_count
            planned_count = changed
            if catch_up:
                loop.call_soon_threadsafe(on_planned, changed)

        catch_up = False

        def work() -> tuple[IngestReport, FolderStatus]:  # index worker
            nonlocal catch_up
            before = folder.workspace
            ws = self.open_workspace(folder)
            # A start (or a reopen) on an index that holds the folder: searchable now,
            # while the whole-folder catch-up looks for what changed meanwhile.
            catch_up = paths is None and ws is not before and not refresh_only
            if catch_up and (opened := ws.status()).files:
                loop.call_soon_threadsafe(on_searchable, opened)
            report = ws.update(
                paths,
                progress=on_progress,
                cancelled=stopped,
                between=worker.run_urgent,  # searches wait for one model call at most
                planned=planned,
            )
            return report, ws.status()

        started = time.perf_counter()
        try:
            report, opened = await worker.call(work)
        except Exception as exc:
            if folder.closed:
                _fail(waiters, ServiceError(f"{folder.root} is no longer served"))
                return
            if isinstance(exc, IndexDamaged) and not folder.recovering:
                # Damage met while the index was in use: reopening moves it aside and
                # rebuilds it.  Once: damage again right after is reported as it is.
                log.warning("%s: %s; reopening it", folder.name, exc)
                folder.recovering = True
                await worker.call(lambda: close_workspace(folder))
                self.schedule(folder, None, now=True, progress=True)
                _fail(waiters, exc)
                return
            message = str(exc) or type(exc).__name__
            if isinstance(exc, DiskFull):  # reopened on the retry: read-only until space
                await worker.call(lambda: close_workspace(folder))
            if not isinstance(exc, EXPECTED_ERRORS):
                log.error("%s: indexing failed: %s", folder.name, exc, exc_info=exc)
            elif folder.message != message:
                # once per state: a team server that stays away is retried quietly
                log.error("%s: indexing failed: %s", folder.name, message)
            folder.state = "error"
            folder.message = message
            if isinstance(exc, IndexUnavailable):  # the server (or space) may come back:
                # try again, planning the whole folder, so that whatever changed
                # meanwhile (the edits a full disk refused included) is indexed then
                wait = DISK_RETRY_SECONDS if isinstance(exc, DiskFull) else RETRY_SECONDS
                loop.call_later(wait, self.schedule, folder, None)
            _fail(waiters, exc)
            if shown is not None:
                shown.end(f"failed: {folder.message}")
        else:
            if folder.closed:
                _fail(waiters, ServiceError(f"{folder.root} is no longer served"))
                return
            folder.state = "ready"
            folder.message = None
            folder.recovering = False
            if paths is None:  # idle now: a first save should not pay for its parser
                worker.submit(loaders.preload)
            folder.opened = opened
            folder.files, folder.chunks = report.files, report.chunks
            folder.errors = list(report.errors)
            folder.notes = list(report.notes)
            self.events.file_errors_changed(folder)
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(report)
            summary = (
                f"{report.files_changed} changed, {report.files_removed} removed,"
                f" {report.embedded} embedded"
            )
            if report.files_changed or report.files_removed or paths is None:
                log.info(
                    "%s: %s%s in %.1fs (%d files, %d chunks)",
                    folder.name,
                    summary,
                    (" (paused)" if paused_stop.is_set() else " (cancelled)")
                    if report.cancelled
                    else "",
                    time.perf_counter() - started,
                    report.files,
                    report.chunks,
                )
            if paused_stop.is_set() and not cancel.is_set():
                # Stopped by a pause: the undone work waits (with the batch's waiters'
                # report given now, as a cancel gives it) for the resume.
                if paths is None:
                    queue.rescan = True
                    queue.held = max(planned_count - len(committed), 0)
                else:
                    queue.pending.update(p for p in paths if p not in committed)
                queue.want_progress = queue.want_progress or progress
                queue.urgent = True
                queue.in_flight = 0
                if shown is not None:
                    queue.progress = shown
                    shown.report(None, f"paused · {queue.pending_count} files waiting")
            elif shown is not None:
                shown.end(("cancelled: " if report.cancelled else "") + summary)
            changed = report.files_changed or report.files_removed
            if paths is None and changed and self.documents_changed is not None:
                self.documents_changed(folder)
        finally:
            queue.running = False
            queue.in_flight = 0
            if not folder.closed:
                self.events.status_changed(immediate=True)
                if queue.pending or queue.rescan:
                    if queue.urgent:
                        self._flush(folder)
                    else:
                        self._arm(folder)


def _fail(waiters: list[asyncio.Future[IngestReport]], exc: BaseException) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_exception(exc)


def close_workspace(folder: Folder) -> None:
    """Close the folder's workspace; the next use opens it again.  Index worker only."""
    if folder.workspace is not None:
        folder.workspace.close()
        folder.workspace = None
