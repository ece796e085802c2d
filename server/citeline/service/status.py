"""One status object for a documents folder, the same for the command line and
the language server.

``citeline status --json`` prints one :class:`FolderStatus`; ``citeline/status``
lists one per served folder (with its URI added).  The command line builds it
from the open index (:meth:`~citeline.service.workspace.Workspace.status`); the
language server from what its event loop keeps, so it answers at once while a
folder is indexing or an answer is generating.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import citeline.wire as wire

State = Literal["indexing", "ready", "error"]


@dataclass(frozen=True)
class ModelNames:
    """The models' file names; ``embedding`` is None until the index is open,
    ``reranking`` None when reranking is off."""

    embedding: str | None = None
    generation: str | None = None
    reranking: str | None = None
    embedding_reason: str | None = None  # why this embedding model serves the folder

    def to_json(self) -> wire.ModelNames:
        return {
            "embedding": self.embedding,
            "embedding_reason": self.embedding_reason,
            "generation": self.generation,
            "reranking": self.reranking,
        }


@dataclass(frozen=True)
class FolderStatus:
    docs: Path
    index: str  # where the index lives: a folder, or a team collection (URL#name, no secrets)
    state: State = "ready"
    message: str | None = None  # why the folder is in state "error"
    files: int = 0  # documents indexed without error
    chunks: int = 0
    pending: int = 0  # files waiting to be (re)indexed
    errors: tuple[tuple[str, str], ...] = ()  # (path, one-line message)
    notes: tuple[tuple[str, str], ...] = ()  # (path, what loading left out of the text)
    models: ModelNames = field(default_factory=ModelNames)
    dimension: int | None = None  # of the embedding vectors, once the index is open
    chunking: str = ""  # the chunk settings' fingerprint
    last_update: float | None = None  # when a file was last indexed
    collection: str | None = None  # a team index's collection (None: the folder's own)
    generation: int | None = None  # grows with every committed change, once open
    read_only: bool = False  # a reader of a team collection
    paused: bool = False  # indexing paused: nothing is committed until resumed

    def to_json(self) -> wire.FolderStatusFields:
        """The one builder of a status's JSON (the language server adds its URI)."""
        out: wire.FolderStatusFields = {
            "docs": str(self.docs),
            "index": self.index,
            "state": self.state,
            "files": self.files,
            "chunks": self.chunks,
            "pending": self.pending,
            "errors": [{"path": p, "message": m} for p, m in self.errors],
            "notes": [{"path": p, "message": m} for p, m in self.notes],
            "models": self.models.to_json(),
            "dimension": self.dimension,
            "chunking": self.chunking,
            "last_update": timestamp(self.last_update),
            "collection": self.collection,
            "generation": self.generation,
            "read_only": self.read_only,
            "paused": self.paused,
        }
        if self.message:
            out["message"] = self.message
        return out


def timestamp(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(seconds))
