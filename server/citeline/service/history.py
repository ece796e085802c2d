"""Past answers: a folder's ask log (``core.records``) listed, searched, shown and deleted.

Both front ends read history through here: ``citeline history`` for one folder,
the language server (``Service.history`` and friends) for every served folder,
newest first.  An old answer says whether a source it cites changed since: the
file's content hash now (read as the indexer reads it, only inside the folder) is
compared with the hash the index held when the answer was made.

Everything here reads files: the language server calls it off the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeline.core.documents import LoadError
from citeline.core.ingest import content_hash
from citeline.core.records import AskRecord, delete_records, read_records
from citeline.service.workspace import LocalCopy
from citeline.settings import Settings

PREVIEW_CHARS = 200
DEFAULT_LIMIT = 50
MAX_LIMIT = 200

# Records made before answers carried a grade: what their grade was.
_LEGACY_GRADES = {True: ("refused", "Not found in the documents"), False: ("answer", "Answer")}


@dataclass(frozen=True)
class HistoryEntry:
    """One past ask as a list shows it."""

    id: str
    time: str  # ISO 8601, UTC
    folder: Path
    question: str
    grade: str
    grade_label: str  # the grade in words, as the answer gave it
    mode: str | None
    preview: str  # at most PREVIEW_CHARS of the answer, on one line
    sources: int  # the answer's citations

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "time": self.time,
            "folder": str(self.folder),
            "question": self.question,
            "grade": self.grade,
            "grade_label": self.grade_label,
            "mode": self.mode,
            "preview": self.preview,
            "sources": self.sources,
        }


@dataclass(frozen=True)
class HistoryPage:
    entries: list[HistoryEntry]  # newest first
    total: int  # every entry that matched, beyond this page too


@dataclass(frozen=True)
class RecordedAnswer:
    """A past answer as it was given, and whether each cited file changed since."""

    id: str
    time: str
    folder: Path
    answer: dict[str, Any]  # the answer object (``citeline ask --json``)
    passages: dict[int, str]  # each cited passage's text by its [n]
    copies: dict[str, LocalCopy]  # per cited or hit path: "same" as then, "differs", "missing"

    @property
    def stale(self) -> bool:
        """A cited source changed or vanished since the answer was made."""
        return any(self.changed(c) for c in self.answer.get("citations") or [])

    def changed(self, citation: dict[str, Any]) -> bool:
        return self.copies.get(str(citation.get("path")), "same") != "same"

    def to_json(self) -> dict[str, Any]:
        """The answer object with ``id``, ``time``, ``stale`` and each citation's ``changed``."""
        out = dict(self.answer)
        out["citations"] = [
            {**c, "changed": self.changed(c)} for c in self.answer.get("citations") or []
        ]
        return {"id": self.id, "time": self.time, **out, "stale": self.stale}


class FolderHistory:
    """One documents folder's ask log (it lives in the folder's index folder)."""

    @classmethod
    def of(cls, root: Path, settings: Settings) -> FolderHistory:
        return cls(root, settings.index_dir(root), int(settings.index.max_file_mb * 1024 * 1024))

    def __init__(self, root: Path, index_dir: Path, max_file_bytes: int) -> None:
        self.root = root
        self.index_dir = index_dir
        self.max_file_bytes = max_file_bytes

    def matching(self, query: str | None) -> list[tuple[HistoryEntry, AskRecord]]:
        """The asks whose question or answer holds ``query`` (any case), newest first."""
        wanted = query.casefold() if query else None
        out = []
        for record in reversed(read_records(self.index_dir)):
            if wanted is not None and not _matches(record, wanted):
                continue
            out.append((_entry(self.root, record), record))
        return out

    def entry(self, record_id: str) -> RecordedAnswer | None:
        """The recorded answer with ``record_id``, its sources compared with the disk."""
        for record in read_records(self.index_dir):
            if record.id == record_id:
                return self.recorded(record)
        return None

    def recorded(self, record: AskRecord) -> RecordedAnswer:
        answer = record.answer
        answer.setdefault("grade", _LEGACY_GRADES[bool(answer.get("refused"))][0])
        answer.setdefault("grade_label", _LEGACY_GRADES[bool(answer.get("refused"))][1])
        paths = {
            str(item.get("path"))
            for key in ("citations", "hits")
            for item in answer.get(key) or []
            if isinstance(item, dict)
        }
        return RecordedAnswer(
            id=record.id,
            time=record.time,
            folder=self.root,
            answer=answer,
            passages=record.passages,
            copies=self.compare(record.hashes, sorted(paths)),
        )

    def compare(self, hashes: dict[str, str], paths: Iterable[str]) -> dict[str, LocalCopy]:
        """For each path: is the file here the one the answer was made from?  A file
        gone (or no longer readable) is "missing"; without a recorded hash (an ask
        logged before hashes were kept) an existing file counts as the same."""
        out: dict[str, LocalCopy] = {}
        for rel in paths:
            try:
                digest = content_hash(self.root / rel, self.max_file_bytes, root=self.root)
            except (OSError, LoadError):
                out[rel] = "missing"
                continue
            recorded = hashes.get(rel)
            out[rel] = "same" if recorded is None or recorded == digest else "differs"
        return out

    def delete(self, record_id: str | None) -> int:
        """Delete one ask (by id), or all (None); how many were deleted."""
        return delete_records(self.index_dir, None if record_id is None else [record_id])


def page(
    histories: Iterable[FolderHistory],
    query: str | None = None,
    limit: int = DEFAULT_LIMIT,
    offset: int = 0,
) -> HistoryPage:
    """The asks of every folder that match ``query``, merged newest first; one page."""
    found = [entry for h in histories for entry, _ in h.matching(query)]
    found.sort(key=lambda e: e.time, reverse=True)
    return HistoryPage(found[offset : offset + limit], len(found))


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _entry(root: Path, record: AskRecord) -> HistoryEntry:
    data = record.data
    refused = bool(data.get("refused"))
    grade = data.get("grade")
    citations = data.get("citations")
    mode = data.get("mode")
    label = data.get("grade_label")
    return HistoryEntry(
        id=record.id,
        time=record.time,
        folder=root,
        question=str(data.get("question") or ""),
        grade=grade if isinstance(grade, str) else _LEGACY_GRADES[refused][0],
        grade_label=label if isinstance(label, str) else _LEGACY_GRADES[refused][1],
        mode=mode if isinstance(mode, str) else None,
        preview=preview(str(data.get("answer") or "")),
        sources=len(citations) if isinstance(citations, list) else 0,
    )


def _matches(record: AskRecord, wanted: str) -> bool:
    return any(
        wanted in str(record.data.get(key) or "").casefold() for key in ("question", "answer")
    )
