"""One documents folder being served: its state, its ingest queue and the named
steps of its life, the only code that changes them.

A :class:`Folder`'s state lives on the event loop (``indexing`` / ``ready`` /
``error``, counts, errors) so status never waits on a worker.  It changes by the
transitions below, in the order a folder lives them::

    served ─► begin_batch ─┬─► searchable ─► changes_found ─┐  (a start on an index
                           │                                │   that holds the folder)
                           └────────────────────────────────┴─► indexed | failed
    paused ⇄ resumed (commit nothing meanwhile)   recovering (damage met in use, once)
    settings_loaded (new settings; whether the index must be reopened)   closed

Its :class:`~citeline.service.workspace.Workspace` is opened, reopened when new
settings change what the index is, and closed only here
(:meth:`Folder.open_workspace`, :meth:`Folder.close_workspace`), on the index
worker.  The :class:`IngestQueue` is the folder's waiting and running ingest work;
the scheduler (``service/scheduler.py``) drives it through its methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from citeline.core.ingest import IngestReport
from citeline.core.walking import DocumentFilter
from citeline.service.errors import ServiceError
from citeline.service.status import FolderStatus, ModelNames, State
from citeline.service.watcher import ChangeCallback, FolderWatcher
from citeline.service.workspace import Backends, Workspace, reranker_name
from citeline.settings import Settings

log = logging.getLogger(__name__)

INGEST_BATCH_CHUNKS = 16  # chunks read, embedded and committed together
# Texts per embedding call while serving: queued searches run between calls, so one
# waits for at most one call (~70 ms quiet for two 256-token chunks on 2 cores).
INGEST_EMBED_CHUNKS = 2

Waiters = list[asyncio.Future[IngestReport]]


class Batch(NamedTuple):
    """What one ingest batch is given when it starts."""

    paths: list[str] | None  # None: the whole folder
    progress: bool  # show progress from the start
    waiters: Waiters  # told the batch's report (or its error)


@dataclass(eq=False)
class IngestQueue:
    """A folder's ingest work: waiting for the next batch, and the batch running now.
    Event loop only, except ``cancel`` and ``paused`` (read by the index worker)."""

    pending: set[str] = field(default_factory=set)
    rescan: bool = False
    urgent: bool = False
    want_progress: bool = False
    waiters: Waiters = field(default_factory=list)
    running: bool = False
    in_flight: int = 0
    cancel: threading.Event = field(default_factory=threading.Event)
    timer: asyncio.TimerHandle | None = None
    burst_started: float | None = None
    paused: bool = False
    held: int = 0  # files a paused whole-folder batch left undone (its rescan redoes them)

    @property
    def pending_count(self) -> int:
        return len(self.pending) + self.in_flight + (self.held if self.rescan else 0)

    @property
    def waiting(self) -> bool:
        """Whether work waits for a batch."""
        return bool(self.pending) or self.rescan

    def add(self, paths: Iterable[str] | None, *, now: bool, progress: bool) -> None:
        """Queue ``paths`` (None: the whole folder) for the next batch."""
        if paths is None:
            self.rescan = True
        else:
            self.pending.update(paths)
        self.want_progress = self.want_progress or progress
        self.urgent = self.urgent or now

    def arm(
        self, loop: asyncio.AbstractEventLoop, flush: Callable[[], None], quiet: float, most: float
    ) -> None:
        """Run ``flush`` after ``quiet`` seconds without a new change, or at most
        ``most`` seconds after the first change of a burst."""
        now = loop.time()
        if self.burst_started is None:
            self.burst_started = now
        if self.timer is not None:
            self.timer.cancel()
        self.timer = loop.call_at(min(now + quiet, self.burst_started + most), flush)

    def disarm(self) -> None:
        """No timer, no burst: the queue is flushed now (or dropped)."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.burst_started = None

    def take(self) -> Batch:
        """Everything waiting, as the batch that starts now (the queue is then running)."""
        batch = Batch(
            None if self.rescan else sorted(self.pending), self.want_progress, self.waiters
        )
        self.pending = set()
        self.rescan = self.urgent = self.want_progress = False
        self.held = 0
        self.waiters = []
        self.running = True
        self.cancel = threading.Event()
        self.in_flight = len(batch.paths) if batch.paths is not None else 0
        return batch

    def hold(self, batch: Batch, committed: set[str], planned: int) -> None:
        """A pause stopped ``batch``: what it did not commit waits for the resume."""
        if batch.paths is None:
            self.rescan = True
            self.held = max(planned - len(committed), 0)
        else:
            self.pending.update(p for p in batch.paths if p not in committed)
        self.want_progress = self.want_progress or batch.progress
        self.urgent = True
        self.in_flight = 0

    def drop(self) -> None:
        """Forget the waiting work (a cancel while paused)."""
        self.pending = set()
        self.rescan = self.urgent = self.want_progress = False
        self.held = 0

    def finished(self) -> None:
        """The running batch ended."""
        self.running = False
        self.in_flight = 0

    def wait(self) -> asyncio.Future[IngestReport]:
        """A future for the report of the next batch (or its error)."""
        waiter: asyncio.Future[IngestReport] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return waiter

    def fail_waiters(self, exc: BaseException) -> None:
        """The waiters not yet in a batch are told ``exc``."""
        fail(self.waiters, exc)
        self.waiters = []


def fail(waiters: Waiters, exc: BaseException) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_exception(exc)


@dataclass(eq=False)
class Folder:
    """One documents folder.  Fields are the event loop's except ``workspace``; every
    change is one of the methods below."""

    root: Path
    settings: Settings
    warnings: list[str] = field(default_factory=list)
    state: State = "indexing"
    message: str | None = None
    files: int = 0
    chunks: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    queue: IngestQueue = field(default_factory=IngestQueue)
    closed: bool = False
    watcher: FolderWatcher | None = None
    opened: FolderStatus | None = None  # the index's own status after the last batch
    recovering: bool = False  # reopening an index found damaged while in use
    # Called from any thread when a team collection changed elsewhere (or its server
    # was lost or came back): the folder refreshes.
    on_index_change: Callable[[], None] | None = None
    # Index worker thread only.
    workspace: Workspace | None = None

    @property
    def key(self) -> str:
        return folder_key(self.root)

    @property
    def name(self) -> str:
        return self.root.name or str(self.root)

    @property
    def documents(self) -> DocumentFilter:
        return DocumentFilter(self.root, self.settings.index_dir(self.root))

    @property
    def team(self) -> bool:
        """A reader of a team collection: it refreshes, never indexes its files."""
        return self.settings.index.team

    def status(self, generation_name: str) -> FolderStatus:
        """The folder's status from what the event loop knows (no worker involved)."""
        team = self.settings.index
        opened = self.opened or FolderStatus(
            docs=self.root,
            index=team.location() if team.team else str(self.settings.index_dir(self.root)),
            collection=team.collection_name if team.team else None,
            read_only=team.team,
        )
        return replace(
            opened,
            docs=self.root,
            state=self.state,
            message=self.message if self.state == "error" else None,
            files=self.files,
            chunks=self.chunks,
            pending=self.queue.pending_count,
            paused=self.queue.paused,
            errors=tuple(self.errors),
            notes=tuple(self.notes),
            models=ModelNames(
                embedding=opened.models.embedding,
                generation=generation_name,
                reranking=reranker_name(self.settings.reranking),
                embedding_reason=self.settings.embedding.reason,
            ),
            chunking=self.settings.chunking.fingerprint(),
        )

    # -- its life, on the event loop ---------------------------------------------

    def begin_batch(self) -> bool:
        """A batch starts: "indexing" (a team reader only refreshes and stays as it
        is).  Whether the state changed."""
        if self.state == "indexing" or self.team:
            return False
        self.state = "indexing"
        return True

    def searchable(self, opened: FolderStatus) -> bool:
        """The index is open and holds the folder: "ready" on it as it is, while the
        catch-up looks for what changed.  False once closed."""
        if self.closed:
            return False
        self.state = "ready"
        self._take(opened, opened.files, opened.chunks, opened.errors, opened.notes)
        return True

    def changes_found(self, changed: int) -> bool:
        """The catch-up found ``changed`` files to read or remove: "indexing" again."""
        if self.closed or not changed:
            return False
        self.queue.in_flight = changed
        self.state = "indexing"
        return True

    def progressed(self, in_flight: int, files: int, chunks: int) -> bool:
        """Counts while a batch runs.  False once closed."""
        if self.closed:
            return False
        self.queue.in_flight = in_flight
        self.files, self.chunks = files, chunks
        return True

    def indexed(self, report: IngestReport, opened: FolderStatus) -> None:
        """A batch ended (done, cancelled or paused): "ready" with what it reported."""
        self.state = "ready"
        self.message = None
        self.recovering = False
        self._take(opened, report.files, report.chunks, report.errors, report.notes)

    def failed(self, message: str) -> bool:
        """ "error" with ``message``.  Whether the message is new (a failure that stays,
        a team server that stays away, is said once)."""
        new = self.message != message
        self.state = "error"
        self.message = message
        return new

    def recover(self) -> bool:
        """Damage met while the index was in use: True the first time (reopen it,
        moving the damage aside); False right after a recovery (report it as it is)."""
        if self.recovering:
            return False
        self.recovering = True
        return True

    def pause(self) -> bool:
        """Commit nothing more until :meth:`resume`.  Whether it was not paused."""
        if self.closed or self.queue.paused:
            return False
        self.queue.paused = True
        return True

    def resume(self) -> bool:
        """Commit again.  Whether it was paused."""
        if self.closed or not self.queue.paused:
            return False
        self.queue.paused = False
        return True

    def cancel(self) -> bool:
        """The user cancelled its indexing: the running batch stops after the current
        file; a paused folder's waiting work is dropped and the pause ends.  Whether
        waiting work was dropped."""
        queue = self.queue
        queue.cancel.set()
        dropped = queue.paused and not queue.running
        if dropped:
            queue.drop()
        queue.paused = False
        return dropped

    def settings_loaded(self, settings: Settings, warnings: list[str]) -> tuple[list[str], bool]:
        """Settings read again: the warnings not shown before, and whether the settings
        changed (then they are the folder's)."""
        new_warnings = [w for w in warnings if w not in self.warnings]
        self.warnings = warnings
        if settings == self.settings:
            return new_warnings, False
        self.settings = settings
        return new_warnings, True

    def watch(self, on_change: ChangeCallback, loop: asyncio.AbstractEventLoop) -> None:
        """Watch its files unless it reads a team collection (its writer indexes the
        canonical checkout; this folder only backs citations) or is closed."""
        if self.team or self.closed:
            self.stop_watching()
            return
        if self.watcher is not None:
            return
        try:
            watcher = FolderWatcher(self.documents, on_change, loop)
            watcher.start()
        except OSError as exc:  # inotify limits and the like: saves still reach us
            log.warning("cannot watch %s: %s; changes are seen on save only", self.root, exc)
            return
        self.watcher = watcher

    def listen(self, loop: asyncio.AbstractEventLoop, on_change: Callable[[Folder], None]) -> None:
        """Hand each change of its index made elsewhere (a team collection's writer, its
        server lost or back; told on any thread) to ``on_change`` on the loop."""

        def changed() -> None:  # any thread
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(on_change, self)

        self.on_index_change = changed

    def stop_watching(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None

    def close(self) -> None:
        """No longer served: not watched; its running batch stops."""
        self.closed = True
        self.queue.cancel.set()
        self.stop_watching()

    def _take(
        self,
        opened: FolderStatus,
        files: int,
        chunks: int,
        errors: Iterable[tuple[str, str]],
        notes: Iterable[tuple[str, str]],
    ) -> None:
        self.opened = opened
        self.files, self.chunks = files, chunks
        self.errors, self.notes = list(errors), list(notes)

    # -- its workspace, on the index worker -----------------------------------------

    def open_workspace(self, backends: Backends) -> Workspace:
        """The folder's workspace, opened on first use and reopened when its settings
        changed what the index is; other new settings are applied in place."""
        if self.closed:
            raise ServiceError(f"{self.root} is no longer served")
        ws = self.workspace
        wanted = self.settings
        reopened = ws is not None and needs_reopen(ws.settings, wanted)
        if reopened:
            self.close_workspace()
            ws = None
        if ws is None:
            ws = backends.open_workspace(self.root, wanted)
            ws.ingestor.batch_chunks = INGEST_BATCH_CHUNKS
            ws.ingestor.embed_chunks = INGEST_EMBED_CHUNKS
            self.workspace = ws
            if self.on_index_change is not None:
                ws.index.subscribe(self.on_index_change)
        elif ws.settings != wanted:
            ws.apply_settings(wanted)
            reopened = True  # the generator or reranker may have changed
        if reopened:  # the models the old settings chose, if no other folder uses them
            backends.release_unused()
        return ws

    def close_workspace(self, backends: Backends | None = None) -> None:
        """Close the workspace (a removed folder, damage, a full disk); the next use
        opens it again.  With ``backends``, the models no other folder uses are
        released (a folder no longer served)."""
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
        if backends is not None:
            backends.release_unused()


def folder_key(path: Path) -> str:
    """One spelling per folder, for comparing folders named by different URIs or paths."""
    try:
        return str(path.expanduser().resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return str(path.expanduser().absolute())


def relative_to(root: Path, path: Path) -> str | None:
    """``path`` relative to ``root`` with forward slashes, or None when outside it."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
        return None
    text = rel.as_posix()
    return None if text == "." else text


def needs_reopen(old: Settings, new: Settings) -> bool:
    """Whether new settings change what the index is (so it must be opened again)."""
    return old.embedding != new.embedding or old.chunking != new.chunking or old.index != new.index
