"""Documents that could not be indexed as editor warnings: only changes are sent."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from citeline.lsp.diagnostics import DiagnosticsPublisher
from citeline.service.folders import Folder
from citeline.settings import Settings


class Client:
    def __init__(self) -> None:
        self.sent: list[types.PublishDiagnosticsParams] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.sent.append(params)


def test_errors_come_and_go_and_a_removed_folder_takes_them_back(tmp_path: Path) -> None:
    client = Client()
    publisher = DiagnosticsPublisher(client)  # type: ignore[arg-type]
    folder = Folder(root=tmp_path, settings=Settings())
    folder.errors = [("scan.pdf", "PDF has no text layer (scanned?)"), ("b.md", "binary")]
    publisher.publish(folder)
    assert {p.uri for p in client.sent} == {
        (tmp_path / "scan.pdf").as_uri(),
        (tmp_path / "b.md").as_uri(),
    }
    warning = client.sent[0].diagnostics[0]
    assert warning.severity == types.DiagnosticSeverity.Warning and warning.source == "citeline"
    publisher.publish(folder)
    assert len(client.sent) == 2  # nothing changed, nothing sent
    folder.errors = [("scan.pdf", "PDF has no text layer (scanned?)")]
    publisher.publish(folder)
    assert client.sent[-1].uri == (tmp_path / "b.md").as_uri() and client.sent[-1].diagnostics == []
    publisher.clear(folder)
    assert client.sent[-1].uri == (tmp_path / "scan.pdf").as_uri()
    assert client.sent[-1].diagnostics == [] and len(client.sent) == 4
