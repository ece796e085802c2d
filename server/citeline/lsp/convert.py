"""Pure conversions of the core's and the service's typed values into the wire's
(``citeline.wire``'s ``TypedDict`` s): URIs, ranges, hover Markdown.

A citation or hit names a file relative to its folder and a 1-based inclusive
line span (or a 1-based PDF page).  On the wire it also carries a ``file://``
``uri`` (a PDF's ends in ``#page=N``) and an LSP ``range`` covering whole lines,
``(start_line - 1, 0)`` to ``(end_line, 0)``; PDFs get ``(0,0)-(0,0)``.  The shapes
and the texts clients show (mode label, fallback note, local-copy note) are
``citeline.wire``'s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict, cast
from urllib.parse import unquote_to_bytes, urlsplit

from citeline import wire
from citeline.service.history import HistoryEntry, RecordedAnswer
from citeline.service.results import SECONDS_DIGITS, Answer, Citation, Hit, IngestReport, rounded
from citeline.service.selection import Unserved
from citeline.service.status import FolderStatus


def path_to_uri(path: Path) -> str:
    return path.absolute().as_uri()


def uri_to_path(uri: str) -> Path | None:
    """The local path a ``file://`` URI names (fragment and query dropped), else None.

    Percent-escapes are bytes (a name that is not UTF-8 comes back as the same name,
    as ``path_to_uri`` wrote it); a path with a NUL names no file.
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme != "file":
        return None
    if parts.netloc not in ("", "localhost"):
        return None
    raw = unquote_to_bytes(parts.path)
    if not raw.startswith(b"/") or b"\0" in raw:
        return None
    return Path(os.fsdecode(raw))


def line_range(start_line: int | None, end_line: int | None) -> wire.Range:
    if start_line is None:
        return {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    end = end_line if end_line is not None else start_line
    return {
        "start": {"line": max(start_line - 1, 0), "character": 0},
        "end": {"line": max(end, start_line - 1, 0), "character": 0},
    }


def location_uri(root: Path, rel: str, page: int | None) -> str:
    uri = path_to_uri(root / rel)
    return f"{uri}#page={page}" if page is not None else uri


def _place(page: int | None, start: int | None, end: int | None) -> wire.Range:
    return line_range(None, None) if page is not None else line_range(start, end)


# -- the core's values as the wire's ----------------------------------------------------


def _location(
    root: Path,
    folder_uri: str,
    path: str,
    page: int | None,
    start: int | None,
    end: int | None,
    local_copy: str,
) -> _Located:
    """Where a hit or citation is, and whether the local copy is the indexed one."""
    copy = wire.LocalCopy(local_copy)
    return {
        "local_copy": copy,
        "local_copy_note": wire.local_copy_note(copy),
        "uri": location_uri(root, path, page),
        "range": _place(page, start, end),
        "folder": folder_uri,
    }


class _Located(TypedDict):
    local_copy: wire.LocalCopy
    local_copy_note: str | None
    uri: str
    range: wire.Range
    folder: str


def hit(h: Hit, root: Path, folder_uri: str, local_copy: str = "same") -> wire.Hit:
    """A retrieved passage (``Hit.to_json``), located in the folder at ``root`` (URI
    ``folder_uri``)."""
    c = h.chunk
    where = _location(root, folder_uri, c.path, c.page, c.start_line, c.end_line, local_copy)
    return {**h.to_json(), **where}


def citation(
    c: Citation, root: Path, folder_uri: str, local_copy: str = "same", text: str | None = None
) -> wire.Citation:
    """A citation (``Citation.to_json``), located; with the indexed passage's ``text``
    when the folder's own copy of the file is not the indexed one (``local_copy``
    "differs" or "missing"): clients show it, and its ``local_copy_note``, instead of
    jumping to lines that may hold something else."""
    where = _location(root, folder_uri, c.path, c.page, c.start_line, c.end_line, local_copy)
    # "text" is added below; "changed" only by the history (a recorded citation)
    out: wire.Citation = {**c.to_json(), **where}  # type: ignore[typeddict-item]
    if where["local_copy"] != wire.LocalCopy.SAME and text is not None:
        out["text"] = text
    return out


def answer(
    a: Answer,
    root: Path,
    folder_uri: str,
    copies: Mapping[str, str] | None = None,
    passages: Mapping[int, str] | None = None,
) -> wire.Answer:
    """The core's answer as the client gets it: with the folder, its mode label and
    fallback note, and every citation and hit located; ``copies`` says per path
    whether the local file is the indexed one, ``passages`` gives each citation's text
    by its ``n``."""
    copies = copies or {}
    passages = passages or {}
    return {
        "question": a.question,
        "language": a.language,
        "answer": a.text,
        "mode": a.mode,
        "model": a.model,
        "fallback": a.fallback,
        "refused": a.refused,
        "grade": a.grade or wire.Grade.ANSWER,
        "grade_label": a.grade_label,
        "refusal": a.refusal,
        "generator_called": a.generator_called,
        "degraded": a.degraded,
        "confidence": rounded(a.confidence, SECONDS_DIGITS),
        "citations": [
            citation(c, root, folder_uri, copies.get(c.path, "same"), passages.get(c.n))
            for c in a.citations
        ],
        "hits": [hit(h, root, folder_uri, copies.get(h.chunk.path, "same")) for h in a.hits],
        "timings": {k: rounded(v, SECONDS_DIGITS) for k, v in a.timings.items()},
        "folder": folder_uri,
        "mode_label": wire.mode_label(a.mode, a.model),
        "fallback_note": wire.fallback_note(a.mode, a.fallback, a.degraded),
    }


def _file_errors(items: Iterable[tuple[str, str]]) -> list[wire.FileError]:
    return [{"path": path, "message": message} for path, message in items]


def folder_status(s: FolderStatus) -> wire.FolderStatus:
    """A folder's status as ``citeline/status`` lists it: ``citeline status --json``'s
    object (``FolderStatus.to_json``) with its URI."""
    return {"uri": path_to_uri(s.docs), **s.to_json()}


def unserved(u: Unserved) -> wire.UnservedFolder:
    return {"uri": path_to_uri(u.root), "docs": str(u.root), "reason": u.reason}


def reindex_report(root: Path, r: IngestReport) -> wire.ReindexFolderReport:
    """A folder's ingest report (as ``citeline index --json`` prints it) with its URI."""
    return {
        "uri": path_to_uri(root),
        "files": r.files,
        "chunks": r.chunks,
        "embedded": r.embedded,
        "reused": r.reused,
        "removed": r.removed,
        "files_changed": r.files_changed,
        "files_removed": r.files_removed,
        "cancelled": r.cancelled,
        "seconds": round(r.seconds, 3),
        "errors": _file_errors(r.errors),
        "notes": _file_errors(r.notes),
    }


def history_item(e: HistoryEntry) -> wire.HistoryItem:
    return {
        "id": e.id,
        "time": e.time,
        "folder": path_to_uri(e.folder),
        "question": e.question,
        "grade": e.grade,
        "grade_label": e.grade_label,
        "mode": e.mode,
        "preview": e.preview,
        "sources": e.sources,
    }


# -- a recorded answer: JSON as it was written, read back from the ask log ------------


def located(
    item: Mapping[str, Any],
    root: Path,
    folder_uri: str,
    local_copy: str = "same",
    text: str | None = None,
) -> dict[str, Any]:
    """A recorded hit or citation (JSON) with ``uri``, ``range``, ``folder`` and
    ``local_copy`` added, as :func:`hit` and :func:`citation` locate the core's."""
    page = item.get("page")
    page = page if isinstance(page, int) else None
    out = dict(item)
    out["local_copy"] = local_copy
    out["local_copy_note"] = wire.local_copy_note(local_copy)
    if local_copy != "same" and text is not None:
        out["text"] = text
    out["uri"] = location_uri(root, str(item["path"]), page)
    out["range"] = _place(
        page, _int_or_none(item.get("start_line")), _int_or_none(item.get("end_line"))
    )
    out["folder"] = folder_uri
    return out


def recorded_answer(recorded: RecordedAnswer) -> wire.HistoryEntry:
    """A past answer as it was given (the ask log keeps its JSON, in whatever shape
    the version that wrote it had), located as :func:`answer` locates a new one."""
    root, folder_uri = recorded.folder, path_to_uri(recorded.folder)
    copies, passages = recorded.copies, recorded.passages
    out = recorded.to_json()
    out["folder"] = folder_uri
    mode, model = out.get("mode"), out.get("model")
    out["mode_label"] = wire.mode_label(mode, model)
    out["fallback_note"] = wire.fallback_note(mode, out.get("fallback"), out.get("degraded"))
    out["citations"] = [
        located(c, root, folder_uri, copies.get(str(c["path"]), "same"), passages.get(c["n"]))
        for c in out.get("citations") or []
    ]
    out["hits"] = [
        located(h, root, folder_uri, copies.get(str(h["path"]), "same"))
        for h in out.get("hits") or []
    ]
    return cast(wire.HistoryEntry, out)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- hover ---------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<|#])|^(>)")


def md_escape(text: str) -> str:
    """Text that renders as itself inside a Markdown paragraph."""
    return _MD_SPECIAL.sub(lambda m: "\\" + (m.group(1) or m.group(2)), text)


def link_target(hit: wire.Hit) -> str:
    """Where a hover link points: ``uri#Lline`` for text, the ``#page=N`` URI for PDFs;
    the file alone when the local copy is not the indexed one (its lines may differ)."""
    uri = hit["uri"]
    if hit["local_copy"] != wire.LocalCopy.SAME:
        return uri.split("#", 1)[0]
    if hit["page"] is None and hit["start_line"] is not None:
        return f"{uri}#L{hit['start_line']}"
    return uri


def link_label(hit: wire.Hit) -> str:
    path = hit["path"]
    if hit["page"] is not None:
        return f"{path}, page {hit['page']}"
    if hit["start_line"] is not None:
        return f"{path}:{hit['start_line']}"
    return path


def snippet(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def hover_markdown(hits: Iterable[wire.Hit], *, markdown: bool = True) -> str:
    """Top passages, each a link to its place, its section and a short quote."""
    parts: list[str] = []
    for hit in hits:
        section = hit["section"] or ""
        if note := hit["local_copy_note"]:
            section += f" ({note})"
        quote = snippet(hit["text"])
        if markdown:
            head = f"**[{md_escape(link_label(hit))}]({link_target(hit)})**"
            if section:
                head += f" — {md_escape(section)}"
            parts.append(f"{head}\n\n> {md_escape(quote)}")
        else:
            head = link_label(hit) + (f" — {section}" if section else "")
            parts.append(f"{head}\n  {quote}\n  {link_target(hit)}")
    return ("\n\n---\n\n" if markdown else "\n\n").join(parts)
