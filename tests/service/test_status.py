"""One status object, the same JSON for the command line and the language server."""

from __future__ import annotations

import time
from pathlib import Path

from citeline.service.status import FolderStatus, ModelNames


def test_the_json_has_every_field_and_a_message_only_in_trouble() -> None:
    status = FolderStatus(
        docs=Path("/home/me/notes"),
        index="/home/me/notes/.citeline",
        files=3,
        chunks=12,
        pending=1,
        errors=(("scan.pdf", "PDF has no text layer (scanned?)"),),
        notes=(("guide.pdf", "left out 8 running header/footer line(s)"),),
        models=ModelNames("mini.gguf", "smol.gguf", None),
        dimension=384,
        chunking="v1:1000:150:1",
        last_update=0.0,
    )
    out = status.to_json()
    assert out == {
        "docs": "/home/me/notes",
        "index": "/home/me/notes/.citeline",
        "state": "ready",
        "files": 3,
        "chunks": 12,
        "pending": 1,
        "errors": [{"path": "scan.pdf", "message": "PDF has no text layer (scanned?)"}],
        "notes": [{"path": "guide.pdf", "message": "left out 8 running header/footer line(s)"}],
        "models": {
            "embedding": "mini.gguf",
            "embedding_reason": None,
            "generation": "smol.gguf",
            "reranking": None,
        },
        "dimension": 384,
        "chunking": "v1:1000:150:1",
        "last_update": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(0.0)),
        "collection": None,
        "generation": None,
        "read_only": False,
        "paused": False,
    }
    broken = FolderStatus(docs=Path("/x"), index="/x/.citeline", state="error", message="gone")
    assert broken.to_json()["message"] == "gone" and broken.to_json()["last_update"] is None


def test_a_team_index_reports_its_collection_and_generation() -> None:
    status = FolderStatus(
        docs=Path("/home/me/clone"),
        index="postgresql://ci@db/citeline#docs",
        collection="docs",
        generation=42,
        read_only=True,
        last_update=0.0,
    )
    out = status.to_json()
    assert (out["index"], out["collection"], out["generation"], out["read_only"]) == (
        "postgresql://ci@db/citeline#docs",
        "docs",
        42,
        True,
    )
