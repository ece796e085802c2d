"""Watching a documents folder with watchdog, independently of the editor.

Neovim on Linux offers no file watching to servers, and editors that do only see
what they have open, so the daemon watches each folder itself.  Events are
reduced to relative document paths (both ends of a move, judged by the folder's
``DocumentFilter`` from the path alone) and handed to the event loop, which
debounces them into batches; a directory created, deleted or moved asks for a
rescan instead, since its files may never get events of their own.  Hidden paths
and the index folder are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from citeline.core.walking import DocumentFilter
from citeline.settings import SETTINGS_FILE

log = logging.getLogger(__name__)

# (changed relative document paths, rescan wanted, citeline.toml changed)
ChangeCallback = Callable[[set[str], bool, bool], None]

_IGNORED_EVENTS = frozenset({"opened", "closed", "closed_no_write"})


class FolderWatcher:
    """One watchdog observer over one folder, reporting changes on the event loop."""

    def __init__(
        self,
        documents: DocumentFilter,
        on_change: ChangeCallback,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.root = documents.root
        self._handler = _Handler(documents, on_change, loop)
        self._observer: BaseObserver | None = None

    def start(self) -> None:
        observer = Observer()
        observer.daemon = True
        observer.schedule(self._handler, str(self.root), recursive=True)
        observer.start()
        self._observer = observer
        log.info("watching %s", self.root)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer = None


class _Handler(FileSystemEventHandler):
    def __init__(
        self,
        documents: DocumentFilter,
        on_change: ChangeCallback,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.documents = documents
        self.on_change = on_change
        self.loop = loop

    def relative(self, path: str | bytes) -> str | None:
        """The path relative to the root, or None when it is outside, hidden or the index's."""
        try:
            rel = Path(os.fsdecode(path)).relative_to(self.documents.root).as_posix()
        except ValueError:
            return None
        return rel if self.documents.visible(rel) else None

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        ends = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            ends.append(dest)
        rels = [r for r in (self.relative(p) for p in ends) if r is not None]
        if not rels:
            return
        if event.is_directory:
            if event.event_type == "modified":
                return  # a file inside changed: it has its own event
            changed: set[str] = set()
            rescan, settings = True, False
        else:
            changed = {r for r in rels if self.documents.candidate(r)}
            rescan = False
            settings = SETTINGS_FILE in rels
            if not changed and not settings:
                return
        with contextlib.suppress(RuntimeError):  # the loop has closed: we are going away
            self.loop.call_soon_threadsafe(self.on_change, changed, rescan, settings)
