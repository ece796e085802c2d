"""Documents that could not be indexed, and what indexing left out, in the editor.

After each ingest batch a folder's load errors (``Folder.errors``) are published
as ``textDocument/publishDiagnostics`` on the documents themselves (severity
Warning), and its notes (``Folder.notes``: text loading left out, such as a PDF's
running headers) as Information; both are cleared when they go away or the
folder is no longer served.  Only changes are sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from citeline.lsp.convert import path_to_uri
from citeline.service.folders import Folder

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

Shown = tuple[types.DiagnosticSeverity, str]


class DiagnosticsPublisher:
    def __init__(self, ls: LanguageServer) -> None:
        self.ls = ls
        self._shown: dict[str, dict[str, Shown]] = {}  # folder key -> {path: what}

    def publish(self, folder: Folder) -> None:
        """Show the folder's current errors and notes, sending only what changed."""
        shown = self._shown.get(folder.key, {})
        current: dict[str, Shown] = {
            rel: (types.DiagnosticSeverity.Information, note) for rel, note in folder.notes
        }
        current.update(
            (rel, (types.DiagnosticSeverity.Warning, message)) for rel, message in folder.errors
        )
        for rel, what in current.items():
            if shown.get(rel) != what:
                self._send(folder, rel, what)
        for rel in shown.keys() - current.keys():
            self._send(folder, rel, None)
        self._shown[folder.key] = current

    def clear(self, folder: Folder) -> None:
        """Take back everything shown for the folder."""
        for rel in self._shown.pop(folder.key, {}):
            self._send(folder, rel, None)

    def _send(self, folder: Folder, rel: str, what: Shown | None) -> None:
        diagnostics = []
        if what is not None:
            severity, message = what
            diagnostics.append(
                types.Diagnostic(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                    message=message,
                    severity=severity,
                    source="citeline",
                )
            )
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=path_to_uri(folder.root / rel), diagnostics=diagnostics
            )
        )
