"""The documents folders being served: their state, settings, watchers and workspaces.

Each :class:`Folder` is one documents folder with its own index.  Its state lives
on the event loop (``indexing`` / ``ready`` / ``error``, counts, errors) so status
never waits on a worker; its :class:`~citeline.service.workspace.Workspace` is
opened, used and closed only on the index worker (:func:`ensure_open`).

:class:`Folders` is the registry: which folders are served (from the editor's
workspace, the ``folders`` setting, ``--docs``), which folder holds a path or is
named by a request, and each folder's lifecycle: settings (re)loaded, the
watcher started and stopped, the index reopened when settings change what it is.
Changes on disk go to the :class:`~citeline.service.scheduler.IngestScheduler`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from citeline.core.walking import DocumentFilter
from citeline.service.errors import ServiceError
from citeline.service.events import Events
from citeline.service.scheduler import IngestQueue, IngestScheduler, close_workspace
from citeline.service.status import FolderStatus, ModelNames, State
from citeline.service.watcher import FolderWatcher
from citeline.service.workers import Workers
from citeline.service.workspace import Backends, Workspace, reranker_name
from citeline.settings import SETTINGS_FILE, Settings, load_settings

log = logging.getLogger(__name__)

INGEST_BATCH_CHUNKS = 16  # chunks read, embedded and committed together
# Texts per embedding call while serving: queued searches run between calls, so one
# waits for at most one call (~70 ms quiet for two 256-token chunks on 2 cores).
INGEST_EMBED_CHUNKS = 2
SOURCES = ("editor settings", "command line")  # the layers over citeline.toml, in order


@dataclass(eq=False)
class Folder:
    """One documents folder.  Fields are the event loop's except ``workspace``."""

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


def ensure_open(folder: Folder, backends: Backends) -> Workspace:
    """The folder's workspace, opened on first use and reopened when its settings
    changed what the index is; other new settings are applied in place.

    Index worker thread only.
    """
    if folder.closed:
        raise ServiceError(f"{folder.root} is no longer served")
    ws = folder.workspace
    wanted = folder.settings
    if ws is not None and needs_reopen(ws.settings, wanted):
        ws.close()
        folder.workspace = ws = None
    if ws is None:
        ws = backends.open_workspace(folder.root, wanted)
        ws.ingestor.batch_chunks = INGEST_BATCH_CHUNKS
        ws.ingestor.embed_chunks = INGEST_EMBED_CHUNKS
        folder.workspace = ws
        if folder.on_index_change is not None:
            ws.index.subscribe(folder.on_index_change)
    elif ws.settings != wanted:
        ws.apply_settings(wanted)
    return ws


class Folders:
    """Every served folder, keyed by its resolved path, in the order they were added."""

    def __init__(self, workers: Workers, scheduler: IngestScheduler, events: Events) -> None:
        self.workers = workers
        self.scheduler = scheduler
        self.events = events
        self.editor_settings: dict[str, Any] = {}  # the editor's settings layer
        self.command_line: dict[str, Any] = {}  # `citeline serve --store …`: the top layer
        self._folders: dict[str, Folder] = {}
        scheduler.documents_changed = self.reload_settings

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
        """Serve ``root``: read its settings, watch it, index it."""
        root = root.expanduser().absolute()
        # The model choice recorded with the index serves the start; the catch-up
        # decides again if it finds documents changed (documents_changed below).
        settings, warnings = load_settings(
            root, self.editor_settings, self.command_line, sources=SOURCES, recorded_choice=True
        )
        folder = Folder(root=root, settings=settings, warnings=warnings)
        self._folders[folder.key] = folder
        self.events.show_warnings(folder.name, warnings)
        log.info("serving %s", root)
        if not root.is_dir():
            folder.state = "error"
            folder.message = f"documents folder {root} does not exist"
            self.events.status_changed(immediate=True)
            return folder
        loop = asyncio.get_running_loop()

        def index_changed() -> None:  # any thread
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(self._on_index_change, folder)

        folder.on_index_change = index_changed
        self._watch(folder)
        # A team collection's reader only refreshes: no progress to show.
        team = folder.settings.index.team
        self.scheduler.schedule(folder, None, now=True, progress=not team)
        self.events.status_changed(immediate=True)
        return folder

    def _watch(self, folder: Folder) -> None:
        """Watch the folder's files unless it reads a team collection (its writer
        indexes the canonical checkout; this folder only backs citations)."""
        if folder.settings.index.team or folder.closed:
            if folder.watcher is not None:
                folder.watcher.stop()
                folder.watcher = None
            return
        if folder.watcher is not None:
            return
        try:
            folder.watcher = FolderWatcher(
                folder.documents,
                lambda paths, rescan, settings_file: self._on_disk_change(
                    folder, paths, rescan, settings_file
                ),
                asyncio.get_running_loop(),
            )
            folder.watcher.start()
        except OSError as exc:  # inotify limits and the like: saves still reach us
            log.warning("cannot watch %s: %s; changes are seen on save only", folder.root, exc)
            folder.watcher = None

    def _on_index_change(self, folder: Folder) -> None:
        """A team collection changed elsewhere (or its server went or came back)."""
        if not folder.closed and folder.settings.index.team:
            self.scheduler.schedule(folder, None)

    def remove(self, folder: Folder) -> None:
        """Stop serving ``folder``: its watcher, its pending work, what was shown of it."""
        folder.closed = True
        if folder.watcher is not None:
            folder.watcher.stop()
            folder.watcher = None
        self.scheduler.abandon(folder)
        self._folders.pop(folder.key, None)
        self.events.folder_removed(folder)
        self.workers.index.submit(lambda: _close(folder))
        log.info("no longer serving %s", folder.root)
        self.events.status_changed(immediate=True)

    async def close_all(self, timeout: float) -> None:
        """Stop every folder and close its index (on the index worker)."""
        for folder in list(self._folders.values()):
            self.remove(folder)
        try:
            await asyncio.wait_for(self.workers.index.call(lambda: None), timeout)
        except TimeoutError:
            log.warning("indexing did not stop within %.0fs", timeout)

    def stop(self) -> None:
        """Stop watching and indexing at once (the server is going away)."""
        for folder in list(self._folders.values()):
            folder.closed = True
            folder.queue.cancel.set()
            if folder.watcher is not None:
                folder.watcher.stop()
        folders = list(self._folders.values())

        def close_all() -> None:  # index worker
            for folder in folders:
                _close(folder)

        self.workers.index.submit(close_all)

    # -- settings and changes ----------------------------------------------------

    def reload_settings(self, folder: Folder | None = None) -> None:
        """Re-read citeline.toml and the editor's settings; reindex if the index must change."""
        for f in [folder] if folder is not None else list(self._folders.values()):
            settings, warnings = load_settings(
                f.root, self.editor_settings, self.command_line, sources=SOURCES
            )
            new_warnings = [w for w in warnings if w not in f.warnings]
            f.warnings = warnings
            self.events.show_warnings(f.name, new_warnings)
            if settings == f.settings:
                continue
            reopen = needs_reopen(f.settings, settings)
            f.settings = settings
            if f.root.is_dir():
                self._watch(f)
            if reopen and not f.closed and f.root.is_dir():
                log.info("%s: settings changed the index; updating it", f.name)
                self.scheduler.schedule(f, None, now=True, progress=True)

    def saved(self, path: Path) -> None:
        """The editor saved ``path``: index it now if it is a document of a folder."""
        found = self.containing(path)
        if found is None:
            return
        folder, rel = found
        if rel == SETTINGS_FILE:
            self.reload_settings(folder)
        elif folder.documents.candidate(rel) and not folder.settings.index.team:
            self.scheduler.schedule(folder, [rel], now=True)

    def _on_disk_change(
        self, folder: Folder, paths: set[str], rescan: bool, settings_file: bool
    ) -> None:
        if folder.closed:
            return
        if settings_file:
            self.reload_settings(folder)
        if paths or rescan:
            self.scheduler.schedule(folder, None if rescan else paths)


def _close(folder: Folder) -> None:  # index worker
    close_workspace(folder)
