"""Front ends that record: what the service tells its front end (``service.events.Events``),
and what a language server writes to its client."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from citeline.service.folders import Folder


@dataclass
class RecordingProgress:
    reports: list[tuple[int | None, str | None]] = field(default_factory=list)
    ended: str | None = None

    def report(self, percentage: int | None, message: str | None) -> None:
        self.reports.append((percentage, message))

    def end(self, message: str) -> None:
        self.ended = message


@dataclass
class RecordingEvents:
    changes: int = 0
    warnings: list[str] = field(default_factory=list)
    errors: list[list[tuple[str, str]]] = field(default_factory=list)
    removed: list[Folder] = field(default_factory=list)
    progress: list[RecordingProgress] = field(default_factory=list)

    def status_changed(self, *, immediate: bool = False) -> None:
        self.changes += 1

    def show_warnings(self, where: str | None, warnings: Iterable[str]) -> None:
        self.warnings.extend(warnings)

    def file_errors_changed(self, folder: Folder) -> None:
        self.errors.append(list(folder.errors))

    def folder_removed(self, folder: Folder) -> None:
        self.removed.append(folder)

    def start_progress(
        self, title: str, on_cancel: Callable[[], None], message: str | None
    ) -> RecordingProgress:
        self.progress.append(RecordingProgress())
        return self.progress[-1]


class StateEvents(RecordingEvents):
    """Events that also record the watched folder's state (with its file count) at
    every status change where it differs from the last one recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.watched: Folder | None = None
        self.states: list[tuple[str, int]] = []

    def status_changed(self, *, immediate: bool = False) -> None:
        super().status_changed(immediate=immediate)
        if self.watched is not None:
            now = (self.watched.state, self.watched.files)
            if not self.states or self.states[-1][0] != now[0]:
                self.states.append(now)


class JsonCapture:
    """A writer for a pygls protocol that keeps every JSON-RPC message it sends."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        body = data.split(b"\r\n\r\n", 1)[1]
        self.sent.append(json.loads(body))

    def close(self) -> None:
        pass

    def notifications(self, method: str) -> list[Any]:
        return [m["params"] for m in self.sent if m.get("method") == method]


def settled(folder: Folder) -> bool:
    """Nothing waiting or running in the folder's ingest queue."""
    queue = folder.queue
    return not (queue.running or queue.pending or queue.rescan or queue.timer is not None)
