"""What the service tells its front end, and asks of it.

The language server implements :class:`Events` (``citeline.lsp.server``): status
notifications, warnings shown to the user, diagnostics for documents that could
not be indexed, and work-done progress for long batches.  The service never
knows how they reach the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from citeline.service.folders import Folder


class Progress(Protocol):
    """A long job's progress as the user sees it."""

    def report(self, percentage: int | None, message: str | None) -> None: ...

    def end(self, message: str) -> None: ...


class Events(Protocol):
    def status_changed(self, *, immediate: bool = False) -> None:
        """A folder's state, counts or pending work changed (``immediate``: its state)."""
        ...

    def show_warnings(self, where: str | None, warnings: Iterable[str]) -> None:
        """Settings problems and the like, for the user; ``where`` names the folder."""
        ...

    def file_errors_changed(self, folder: Folder) -> None:
        """The folder's documents that could not be indexed (``folder.errors``) changed."""
        ...

    def folder_removed(self, folder: Folder) -> None:
        """The folder is no longer served: forget what was shown about it."""
        ...

    def start_progress(
        self, title: str, on_cancel: Callable[[], None], message: str | None
    ) -> Progress:
        """Show a cancellable long job; ``on_cancel`` is called if the user cancels it."""
        ...
