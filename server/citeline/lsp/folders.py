"""The documents folders being served: their state, their watchers, their diagnostics.

Each :class:`Folder` is one documents folder with its own index.  Its state lives
on the event loop (``indexing`` / ``ready`` / ``error``, counts, pending paths) so
status never waits on a worker; its :class:`~citeline.app.Workspace` is opened,
used and closed only on the index worker thread.

Changes reach a folder from its watcher, from ``textDocument/didSave`` and from
reindex requests.  They collect in a pending set and run as one ingest batch
after a quiet spell (or at most a few seconds after the first change), so a save
storm or a checkout of hundreds of files is one batch.  Only one batch per folder
runs at a time; what arrives meanwhile is the next batch.  After each batch the
folder's load errors are published as diagnostics and cleared when they go away.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lsprotocol import types

from citeline.app import Workspace, WorkspaceError, open_workspace
from citeline.core.ingest import IngestReport
from citeline.lsp.convert import folder_key, path_to_uri, relative_to
from citeline.lsp.progress import WorkDone
from citeline.lsp.watcher import FolderWatcher
from citeline.settings import Settings, load_settings

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

State = Literal["indexing", "ready", "error"]

QUIET_SECONDS = 0.3  # a batch starts after this long without a new change…
MAX_WAIT_SECONDS = 2.0  # …or this long after the first change of a burst
PROGRESS_MIN_FILES = 20  # smaller watcher batches do not show work-done progress
INGEST_BATCH_CHUNKS = 16  # chunks embedded per model call: searches wait at most one call
COUNTS_INTERVAL = 0.25  # seconds between count refreshes while indexing


@dataclass(eq=False)
class Folder:
    """One documents folder.  Fields are the event loop's except ``workspace``."""

    root: Path
    uri: str
    settings: Settings
    warnings: list[str] = field(default_factory=list)
    state: State = "indexing"
    message: str | None = None
    files: int = 0
    chunks: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    # Work waiting for the next batch.
    pending: set[str] = field(default_factory=set)
    rescan: bool = False
    urgent: bool = False
    want_progress: bool = False
    waiters: list[asyncio.Future[IngestReport]] = field(default_factory=list)
    # The batch running now.
    running: bool = False
    in_flight: int = 0
    cancel: threading.Event = field(default_factory=threading.Event)
    timer: asyncio.TimerHandle | None = None
    burst_started: float | None = None
    closed: bool = False
    watcher: FolderWatcher | None = None
    diagnosed: dict[str, str] = field(default_factory=dict)
    embedding_model: str | None = None
    # Index worker thread only.
    workspace: Workspace | None = None

    @property
    def key(self) -> str:
        return folder_key(self.root)

    @property
    def name(self) -> str:
        return self.root.name or str(self.root)

    @property
    def pending_count(self) -> int:
        return len(self.pending) + self.in_flight

    def status_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "uri": self.uri,
            "state": self.state,
            "files": self.files,
            "chunks": self.chunks,
            "pending": self.pending_count,
            "errors": [{"path": p, "message": m} for p, m in self.errors],
        }
        if self.message:
            out["message"] = self.message
        return out


def _needs_reopen(old: Settings, new: Settings) -> bool:
    return old.embedding != new.embedding or old.chunking != new.chunking or old.index != new.index


class Folders:
    """Every served folder, keyed by its resolved path, in the order they were added."""

    def __init__(self, ls: CitelineServer) -> None:
        self.ls = ls
        self._folders: dict[str, Folder] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __iter__(self) -> Iterator[Folder]:
        return iter(list(self._folders.values()))

    def __len__(self) -> int:
        return len(self._folders)

    def get(self, path: Path) -> Folder | None:
        return self._folders.get(folder_key(path))

    def containing(self, path: Path) -> tuple[Folder, str] | None:
        """The folder holding ``path`` (the innermost one) and the path relative to it."""
        best: tuple[Folder, str] | None = None
        for folder in self._folders.values():
            rel = relative_to(folder.root, path)
            if rel is not None and (best is None or len(folder.key) > len(best[0].key)):
                best = (folder, rel)
        return best

    # -- which folders -------------------------------------------------------

    def reconcile(self, roots: Iterable[Path]) -> None:
        """Serve exactly ``roots`` (in order): add the new ones, drop the others."""
        wanted: dict[str, Path] = {}
        for root in roots:
            wanted.setdefault(folder_key(root), root)
        for key, folder in list(self._folders.items()):
            if key not in wanted:
                self.remove(folder)
        for key, root in wanted.items():
            if key not in self._folders:
                self.add(root)

    def add(self, root: Path) -> Folder:
        root = root.expanduser().absolute()
        settings, warnings = load_settings(root, self.ls.editor_settings)
        folder = Folder(root=root, uri=path_to_uri(root), settings=settings, warnings=warnings)
        self._folders[folder.key] = folder
        self.ls.show_warnings(folder.name, warnings)
        log.info("serving %s", root)
        if not root.is_dir():
            folder.state = "error"
            folder.message = f"documents folder {root} does not exist"
            self.ls.status.changed(immediate=True)
            return folder
        try:
            folder.watcher = FolderWatcher(
                root,
                settings.index_dir(root),
                lambda paths, rescan, settings_file: self._on_disk_change(
                    folder, paths, rescan, settings_file
                ),
                asyncio.get_running_loop(),
            )
            folder.watcher.start()
        except OSError as exc:  # inotify limits and the like: saves still reach us
            log.warning("cannot watch %s: %s; changes are seen on save only", root, exc)
            folder.watcher = None
        self.schedule(folder, None, now=True, progress=True)
        self.ls.status.changed(immediate=True)
        return folder

    def remove(self, folder: Folder) -> None:
        """Stop serving ``folder``: its watcher, its pending work, its diagnostics."""
        folder.closed = True
        folder.cancel.set()
        if folder.timer is not None:
            folder.timer.cancel()
            folder.timer = None
        if folder.watcher is not None:
            folder.watcher.stop()
            folder.watcher = None
        for waiter in folder.waiters:
            if not waiter.done():
                waiter.set_exception(WorkspaceError(f"{folder.root} is no longer served"))
        folder.waiters = []
        self._folders.pop(folder.key, None)
        for rel in folder.diagnosed:
            self._publish(folder, rel, None)
        folder.diagnosed = {}
        self.ls.index_worker.submit(lambda: self._close(folder))
        log.info("no longer serving %s", folder.root)
        self.ls.status.changed(immediate=True)

    async def close_all(self, timeout: float) -> None:
        """Stop every folder and close its index (on the index thread)."""
        for folder in list(self._folders.values()):
            self.remove(folder)
        try:
            await asyncio.wait_for(self.ls.index_worker.call(lambda: None), timeout)
        except TimeoutError:
            log.warning("indexing did not stop within %.0fs", timeout)

    def _close(self, folder: Folder) -> None:  # index thread
        if folder.workspace is not None:
            folder.workspace.close()
            folder.workspace = None

    # -- settings ------------------------------------------------------------

    def reload_settings(self, folder: Folder | None = None) -> None:
        """Re-read citeline.toml and the editor's settings; reindex if the index must change."""
        for f in [folder] if folder is not None else list(self._folders.values()):
            settings, warnings = load_settings(f.root, self.ls.editor_settings)
            new_warnings = [w for w in warnings if w not in f.warnings]
            f.warnings = warnings
            self.ls.show_warnings(f.name, new_warnings)
            if settings == f.settings:
                continue
            reopen = _needs_reopen(f.settings, settings)
            f.settings = settings
            if reopen and not f.closed and f.root.is_dir():
                log.info("%s: settings changed the index; updating it", f.name)
                self.schedule(f, None, now=True, progress=True)

    # -- the index thread's side -----------------------------------------------

    def workspace(self, folder: Folder) -> Workspace:
        """The folder's workspace, opened (or reopened for new settings) on first use.

        Index worker thread only.
        """
        if folder.closed:
            raise WorkspaceError(f"{folder.root} is no longer served")
        ws = folder.workspace
        wanted = folder.settings
        if ws is not None and _needs_reopen(ws.settings, wanted):
            ws.close()
            folder.workspace = ws = None
        if ws is None:
            ws = open_workspace(folder.root, wanted, self.ls.models)
            ws.ingestor.batch_chunks = INGEST_BATCH_CHUNKS
            folder.workspace = ws
            folder.embedding_model = ws.embedder.name
        elif ws.settings != wanted:
            ws.apply_settings(wanted)
        return ws

    # -- keeping the index fresh ---------------------------------------------

    def _on_disk_change(
        self, folder: Folder, paths: set[str], rescan: bool, settings_file: bool
    ) -> None:
        if folder.closed:
            return
        if settings_file:
            self.reload_settings(folder)
        if paths or rescan:
            self.schedule(folder, None if rescan else paths)

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
        if paths is None:
            folder.rescan = True
        else:
            folder.pending.update(paths)
        folder.want_progress = folder.want_progress or progress
        folder.urgent = folder.urgent or now
        self.ls.status.changed()
        if now:
            self._flush(folder)
        else:
            self._arm(folder)

    async def run_now(self, folder: Folder, paths: Iterable[str] | None) -> IngestReport:
        """Bring ``paths`` (None: the whole folder) up to date now; the batch's report."""
        waiter: asyncio.Future[IngestReport] = asyncio.get_running_loop().create_future()
        folder.waiters.append(waiter)
        self.schedule(folder, paths, now=True, progress=paths is None)
        return await waiter

    def _arm(self, folder: Folder) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if folder.burst_started is None:
            folder.burst_started = now
        due = min(now + QUIET_SECONDS, folder.burst_started + MAX_WAIT_SECONDS)
        if folder.timer is not None:
            folder.timer.cancel()
        folder.timer = loop.call_at(due, self._flush, folder)

    def _flush(self, folder: Folder) -> None:
        if folder.timer is not None:
            folder.timer.cancel()
            folder.timer = None
        folder.burst_started = None
        if folder.closed or folder.running:
            return  # a running batch flushes again when it ends
        if not folder.pending and not folder.rescan:
            return
        paths = None if folder.rescan else sorted(folder.pending)
        progress = folder.want_progress
        waiters = folder.waiters
        folder.pending = set()
        folder.rescan = folder.urgent = folder.want_progress = False
        folder.waiters = []
        folder.running = True
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
        worker = self.ls.index_worker
        cancel = threading.Event()
        folder.cancel = cancel
        folder.in_flight = len(paths) if paths is not None else 0
        if folder.state != "indexing":
            folder.state = "indexing"
            self.ls.status.changed(immediate=True)
        work_done: WorkDone | None = None

        def start_progress(message: str | None) -> WorkDone:
            return WorkDone(
                self.ls, f"Citeline: indexing {folder.name}", cancel.set, message=message
            )

        if progress:
            work_done = start_progress("scanning…")

        def on_progress_loop(done: int, total: int, rel: str, counts: tuple[int, int]) -> None:
            nonlocal work_done
            if folder.closed:
                return
            folder.in_flight = max(total - done, 0)
            folder.files, folder.chunks = counts
            if work_done is None and total >= PROGRESS_MIN_FILES:
                work_done = start_progress(rel)
            if work_done is not None:
                work_done.report(int(100 * done / total) if total else 100, rel)
            self.ls.status.changed()

        last = 0.0

        def on_progress(done: int, total: int, rel: str) -> None:  # index thread
            nonlocal last
            worker.run_urgent()  # let searches in between files
            now = time.monotonic()
            if done < total and now - last < COUNTS_INTERVAL:
                return
            last = now
            ws = folder.workspace
            if ws is not None:
                held = ws.index.counts()
                counts = (held.files, held.chunks)
            else:
                counts = (folder.files, folder.chunks)
            loop.call_soon_threadsafe(on_progress_loop, done, total, rel, counts)

        def work() -> IngestReport:  # index thread
            ws = self.workspace(folder)
            return ws.update(
                paths, progress=on_progress, cancelled=lambda: cancel.is_set() or folder.closed
            )

        def abandon() -> None:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(WorkspaceError(f"{folder.root} is no longer served"))

        started = time.perf_counter()
        try:
            report = await worker.call(work)
        except Exception as exc:
            if folder.closed:
                abandon()
                return
            log.error("%s: indexing failed: %s", folder.name, exc, exc_info=exc)
            folder.state = "error"
            folder.message = str(exc) or type(exc).__name__
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            if work_done is not None:
                work_done.end(f"failed: {folder.message}")
        else:
            if folder.closed:
                abandon()
                return
            folder.state = "ready"
            folder.message = None
            folder.files, folder.chunks = report.files, report.chunks
            folder.errors = list(report.errors)
            self._publish_errors(folder)
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
                    " (cancelled)" if report.cancelled else "",
                    time.perf_counter() - started,
                    report.files,
                    report.chunks,
                )
            if work_done is not None:
                work_done.end(("cancelled: " if report.cancelled else "") + summary)
        finally:
            folder.running = False
            folder.in_flight = 0
            if not folder.closed:
                self.ls.status.changed(immediate=True)
                if folder.pending or folder.rescan:
                    if folder.urgent:
                        self._flush(folder)
                    else:
                        self._arm(folder)

    # -- diagnostics ---------------------------------------------------------

    def _publish_errors(self, folder: Folder) -> None:
        current = dict(folder.errors)
        for rel, message in current.items():
            if folder.diagnosed.get(rel) != message:
                self._publish(folder, rel, message)
        for rel in folder.diagnosed.keys() - current.keys():
            self._publish(folder, rel, None)
        folder.diagnosed = current

    def _publish(self, folder: Folder, rel: str, message: str | None) -> None:
        diagnostics = []
        if message is not None:
            diagnostics.append(
                types.Diagnostic(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                    message=message,
                    severity=types.DiagnosticSeverity.Warning,
                    source="citeline",
                )
            )
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=path_to_uri(folder.root / rel), diagnostics=diagnostics
            )
        )
