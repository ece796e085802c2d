"""The documents folders being served: which they are, which holds a path, and what
reaches them (settings, saves, changes on disk).

:class:`Folders` is the registry: which folders are served (from the editor's
workspace, the ``folders`` setting, ``--docs``), which folder holds a path or is
named by a request; a folder added is watched and indexed, a folder removed is
closed (its workspace on the index worker).  Settings are (re)loaded here and a
folder whose new settings change what its index is gets a whole-folder batch.
Changes on disk go to the :class:`~citeline.service.scheduler.IngestScheduler`.
A folder's state changes only by its own transitions (``service/folders.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from citeline.service.events import Events
from citeline.service.folders import Folder, folder_key, needs_reopen, relative_to
from citeline.service.scheduler import IngestScheduler
from citeline.service.workers import Workers
from citeline.settings import SETTINGS_FILE, load_settings

log = logging.getLogger(__name__)

SOURCES = ("editor settings", "command line")  # the layers over citeline.toml, in order


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
            folder.failed(f"documents folder {root} does not exist")
            self.events.status_changed(immediate=True)
            return folder
        folder.listen(asyncio.get_running_loop(), self._on_index_change)
        self._watch(folder)
        # A team collection's reader only refreshes: no progress to show.
        self.scheduler.schedule(folder, None, now=True, progress=not folder.team)
        self.events.status_changed(immediate=True)
        return folder

    def _watch(self, folder: Folder) -> None:
        folder.watch(
            lambda paths, rescan, settings_file: self._on_disk_change(
                folder, paths, rescan, settings_file
            ),
            asyncio.get_running_loop(),
        )

    def _on_index_change(self, folder: Folder) -> None:
        """A team collection changed elsewhere (or its server went or came back)."""
        if not folder.closed and folder.team:
            self.scheduler.schedule(folder, None)

    def remove(self, folder: Folder) -> None:
        """Stop serving ``folder``: its watcher, its pending work, what was shown of it."""
        folder.close()
        self.scheduler.abandon(folder)
        self._folders.pop(folder.key, None)
        self.events.folder_removed(folder)
        backends = self.scheduler.backends
        self.workers.index.submit(lambda: folder.close_workspace(backends))
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
        folders = list(self._folders.values())
        for folder in folders:
            folder.close()

        def close_all() -> None:  # index worker
            for folder in folders:
                folder.close_workspace()

        self.workers.index.submit(close_all)

    # -- settings and changes ----------------------------------------------------

    def reload_settings(self, folder: Folder | None = None) -> None:
        """Re-read citeline.toml and the editor's settings; reindex if the index must change."""
        for f in [folder] if folder is not None else list(self._folders.values()):
            settings, warnings = load_settings(
                f.root, self.editor_settings, self.command_line, sources=SOURCES
            )
            before = f.settings
            new_warnings, changed = f.settings_loaded(settings, warnings)
            self.events.show_warnings(f.name, new_warnings)
            if not changed:
                continue
            if f.root.is_dir():
                self._watch(f)
            if needs_reopen(before, settings) and not f.closed and f.root.is_dir():
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
        elif folder.documents.candidate(rel) and not folder.team:
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
