"""The MCP tools: what each takes (a JSON Schema), what it returns (structured content
and the same as readable text), and the one service call behind it.

Every tool is read-only and confined to the served folders exactly as the language
server is: a ``folder`` argument must name a folder Citeline serves (nothing is
read otherwise), and results only ever come from the folders' indexes.  Bad
arguments and expected problems are a :class:`ToolError` with one line for the
agent; anything else is logged with its traceback and reported in one line too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from citeline.service.errors import EXPECTED_ERRORS
from citeline.service.folders import Folder
from citeline.service.history import MAX_LIMIT
from citeline.service.service import Service
from citeline.service.workspace import cited_passages

log = logging.getLogger(__name__)

MAX_TEXT_CHARS = 10_000  # a query, a question, a folder (as the language server)
MAX_K = 100
DEFAULT_HISTORY = 20
QUOTE_CHARS = 600  # of each passage in the readable text (the structured one is whole)
INDEX_WAIT = 900.0  # seconds a search or ask waits for a folder still being indexed

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+:")


class ToolError(Exception):
    """A tool call that cannot be served as asked; the message is one line."""


# -- what the tools take and return ------------------------------------------------

_FOLDER = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_TEXT_CHARS,
    "description": "A documents folder Citeline serves (its path or file:// URI); "
    "default: every served folder.",
}
_NULLABLE_INT = {"type": ["integer", "null"]}
_PASSAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "relative to its folder"},
        "file": {"type": "string", "description": "the absolute path"},
        "folder": {"type": "string"},
        "title": {"type": "string"},
        "section": {"type": "string", "description": "the heading path"},
        "start_line": _NULLABLE_INT,
        "end_line": _NULLABLE_INT,
        "page": _NULLABLE_INT,
        "text": {"type": "string", "description": "the passage, quoted from the index"},
        "local_copy": {"type": "string", "enum": ["same", "differs", "missing"]},
    },
    "required": ["path", "file", "folder", "section", "start_line", "end_line", "page", "text"],
}
_HIT = {
    **_PASSAGE,
    "properties": {**_PASSAGE["properties"], "rank": {"type": "integer"}, "score": {}},
}
_CITATION = {
    **_PASSAGE,
    "properties": {**_PASSAGE["properties"], "n": {"type": "integer"}},
}
_INDEXING = {
    "type": "array",
    "items": {"type": "string"},
    "description": "folders still being indexed when the tool answered (results may be incomplete)",
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


SPECS = [
    ToolSpec(
        "search",
        "Search the documents",
        "Search the user's documents (Markdown, HTML, PDF, text) for passages about a"
        " query, by meaning and by keywords. Each hit names its file, section, line"
        " range (or PDF page) and quotes the passage.",
        _object(
            {
                "query": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS},
                "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": "hits"},
                "folder": _FOLDER,
            },
            ["query"],
        ),
        {
            "type": "object",
            "properties": {"hits": {"type": "array", "items": _HIT}, "indexing": _INDEXING},
            "required": ["hits", "indexing"],
        },
    ),
    ToolSpec(
        "ask",
        "Ask the documents",
        "Answer a question from the user's documents, with citations: the answer quotes"
        " (or, with a configured model, is checked against) passages, each cited as [n]"
        " with its file, section, line range (or PDF page) and the quoted text. When the"
        " documents do not hold the answer it says so (refused) instead of guessing.",
        _object(
            {
                "question": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS},
                "folder": _FOLDER,
            },
            ["question"],
        ),
        {
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "answer": {"type": "string"},
                "mode": {"type": ["string", "null"]},
                "refused": {"type": "boolean"},
                "folder": {"type": "string"},
                "citations": {"type": "array", "items": _CITATION},
                "indexing": _INDEXING,
            },
            "required": ["question", "answer", "refused", "folder", "citations", "indexing"],
        },
    ),
    ToolSpec(
        "status",
        "Citeline status",
        "The documents folders Citeline serves: state (indexing, ready, error), files,"
        " chunks, documents that could not be read, the models; and folders it does not"
        " serve, with why.",
        _object({}, []),
        {
            "type": "object",
            "properties": {
                "folders": {"type": "array", "items": {"type": "object"}},
                "unserved": {"type": "array", "items": {"type": "object"}},
                "models": {"type": "object"},
            },
            "required": ["folders", "unserved", "models"],
        },
    ),
    ToolSpec(
        "history",
        "Past answers",
        "Questions asked of these documents before (by the user's editor or by agents),"
        " newest first, optionally only those whose question or answer contains a text.",
        _object(
            {
                "query": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                "folder": _FOLDER,
            },
            [],
        ),
        {
            "type": "object",
            "properties": {
                "entries": {"type": "array", "items": {"type": "object"}},
                "total": {"type": "integer"},
            },
            "required": ["entries", "total"],
        },
    ),
]

Result = tuple[str, dict[str, Any]]  # readable text, structured content
Progress = Callable[[str], Awaitable[None]]  # tells the client what a call waits for
Handler = Callable[[Mapping[str, Any], Progress | None], Awaitable[Result]]


class Tools:
    """The tools over one service (whose event loop this runs on)."""

    def __init__(self, service: Service, index_wait: float = INDEX_WAIT) -> None:
        self.service = service
        self.index_wait = index_wait
        self._handlers: dict[str, Handler] = {
            "search": self.search,
            "ask": self.ask,
            "status": self.status,
            "history": self.history,
        }

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, progress: Progress | None = None
    ) -> Result:
        """Run tool ``name``; a :class:`ToolError` for anything that is not a result.
        ``progress`` hears what a call waits for (a folder being indexed)."""
        handler = self._handlers.get(name)
        if handler is None:
            raise ToolError(f"unknown tool {name!r} (the tools: {', '.join(self._handlers)})")
        args = _arguments(name, arguments, SPECS_BY_NAME[name])
        try:
            return await handler(args, progress)
        except ToolError:
            raise
        except EXPECTED_ERRORS as exc:
            log.warning("%s: %s", name, exc)
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            log.error("%s failed", name, exc_info=exc)
            text = f"{type(exc).__name__}: {exc}"
            raise ToolError(f"Citeline failed ({text[:200]}); the log has the details") from exc

    # -- the tools ---------------------------------------------------------------------

    async def search(self, args: Mapping[str, Any], progress: Progress | None = None) -> Result:
        query = _text(args, "query", required=True)
        assert query is not None
        folder = folder_path(args.get("folder"))
        k = args.get("k")
        indexing = await self._indexed(folder, progress)
        found = await self.service.search(query.strip(), k, folder)
        hits = [
            {
                "rank": f.hit.rank,
                "score": round(f.hit.score, 6),
                **passage(f.folder.root, f.hit.to_json(), f.local_copy),
            }
            for f in found
        ]
        lines = [f"{len(hits)} passage{'' if len(hits) == 1 else 's'} for {query.strip()!r}"]
        lines.extend(_indexing_note(indexing))
        for hit in hits:
            lines.append("")
            lines.append(f"{hit['rank']}. {_where(hit)}")
            lines.extend(_quote(hit["text"]))
        return "\n".join(lines), {"hits": hits, "indexing": indexing}

    async def ask(self, args: Mapping[str, Any], progress: Progress | None = None) -> Result:
        question = _text(args, "question", required=True)
        assert question is not None
        folder = folder_path(args.get("folder"))
        indexing = await self._indexed(folder, progress)
        served, answer = await self.service.ask(question.strip(), folder)
        result = answer.to_json()
        paths = sorted({c.path for c in answer.citations})
        copies = await self.service.local_copies(served, paths) if paths else {}
        quoted = cited_passages(answer)
        citations = [
            {
                "n": c["n"],
                **passage(served.root, c, copies.get(str(c["path"]), "same"), quoted.get(c["n"])),
            }
            for c in result["citations"]  # type: ignore[attr-defined]
        ]
        keep = ("question", "answer", "grade", "grade_label", "mode", "model", "fallback")
        structured: dict[str, Any] = {k: result[k] for k in keep if k in result}
        structured.update(
            refused=answer.refused,
            confidence=result.get("confidence"),
            folder=str(served.root),
            citations=citations,
            indexing=indexing,
        )
        lines = [answer.text.strip()]
        label = result.get("grade_label")
        if isinstance(label, str) and label and result.get("grade") != "answer":
            lines = [f"({label})", "", *lines]
        lines.extend(_indexing_note(indexing))
        if citations:
            lines.extend(["", "Sources:"])
            for citation in citations:
                lines.append(f"[{citation['n']}] {_where(citation)}")
                lines.extend(_quote(citation["text"]))
        return "\n".join(lines), structured

    async def status(self, args: Mapping[str, Any], progress: Progress | None = None) -> Result:
        status = self.service.status()
        structured = {
            "folders": [f.to_json() for f in status.folders],
            "unserved": [u.to_json() for u in status.unserved],
            "models": status.models.to_json(),
        }
        lines = []
        for f in status.folders:
            line = f"{f.docs}: {f.state}, {f.files} files, {f.chunks} chunks"
            if f.pending:
                line += f", {f.pending} pending"
            if f.errors:
                line += f", {len(f.errors)} could not be read"
            if f.message:
                line += f" ({f.message})"
            lines.append(line)
        lines.extend(f"{u.root}: {u.reason}" for u in status.unserved)
        if not lines:
            lines.append("no documents folder is served")
        return "\n".join(lines), structured

    async def history(self, args: Mapping[str, Any], progress: Progress | None = None) -> Result:
        query = _text(args, "query", required=False)
        folder = folder_path(args.get("folder"))
        limit = args.get("limit") or DEFAULT_HISTORY
        found = await self.service.history(folder, query, limit, 0)
        entries = [e.to_json() for e in found.entries]
        lines = [f"{found.total} past answer{'' if found.total == 1 else 's'}"]
        for e in found.entries:
            lines.append(f"{e.time}  {e.question}  ({e.grade}, {e.sources} sources)")
            lines.append(f"  {e.preview}")
        return "\n".join(lines), {"entries": entries, "total": found.total}

    async def _indexed(self, folder: Path | None, progress: Progress | None) -> list[str]:
        """Wait for the folders being indexed; those still indexing after the wait."""

        async def waiting(busy: list[Folder]) -> None:
            if progress is not None:
                parts = [
                    f"{f.root} ({f.files} files so far, {f.queue.pending_count} to go)"
                    for f in busy
                ]
                await progress(f"waiting for indexing: {', '.join(parts)}")

        busy = await self.service.indexed(folder, self.index_wait, waiting)
        return [str(f.root) for f in busy]


SPECS_BY_NAME = {spec.name: spec for spec in SPECS}


# -- conversions ---------------------------------------------------------------------


def folder_path(value: object) -> Path | None:
    """The folder a ``folder`` argument names (an absolute or relative path, or a
    ``file://`` URI); nothing on disk is touched here."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolError("'folder' must be a folder's path or file:// URI")
    if "\0" in value:
        raise ToolError("'folder' must not contain a NUL character")
    if value.startswith("file:"):
        parts = urlsplit(value)
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ToolError("'folder' must be a local file:// URI")
        return Path(unquote(parts.path))
    if _SCHEME.match(value):
        raise ToolError(f"'folder' must be a path or a file:// URI, not {value[:80]!r}")
    return Path(value).expanduser().absolute()


def passage(
    root: Path,
    item: Mapping[str, Any],
    local_copy: str = "same",
    text: str | None = None,
) -> dict[str, Any]:
    """A hit or citation as an agent gets it: where (folder, relative and absolute
    path, section, lines or page) and the passage's text."""
    path = str(item["path"])
    return {
        "path": path,
        "file": str(root / path),
        "folder": str(root),
        "title": str(item.get("title") or ""),
        "section": str(item.get("section") or ""),
        "start_line": item.get("start_line"),
        "end_line": item.get("end_line"),
        "page": item.get("page"),
        "text": text if text is not None else str(item.get("text") or ""),
        "local_copy": local_copy,
    }


def _where(item: Mapping[str, Any]) -> str:
    """``file:12-20 — section`` (``file, page N`` for a PDF page)."""
    if item.get("page") is not None:
        where = f"{item['file']}, page {item['page']}"
    elif item.get("start_line") is not None:
        where = f"{item['file']}:{item['start_line']}"
        if item.get("end_line") not in (None, item["start_line"]):
            where += f"-{item['end_line']}"
    else:
        where = str(item["file"])
    if item.get("section"):
        where += f" — {item['section']}"
    if item.get("local_copy", "same") != "same":
        where += " (the file here differs from the indexed one; the quote is the indexed text)"
    return where


def _quote(text: str) -> list[str]:
    flat = " ".join(text.split())
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1].rstrip() + "…"
    return [f"   > {flat}"]


def _indexing_note(indexing: list[str]) -> list[str]:
    if not indexing:
        return []
    return [f"(still indexing {', '.join(indexing)}: results may be incomplete)"]


def _arguments(name: str, arguments: Mapping[str, Any] | None, spec: ToolSpec) -> Mapping[str, Any]:
    """The arguments, checked against the tool's schema's keys and simple types (the SDK
    also validates them against the full schema before the call)."""
    args = arguments or {}
    if not isinstance(args, Mapping):
        raise ToolError(f"{name}: the arguments must be an object")
    properties: dict[str, Any] = spec.input_schema["properties"]
    unknown = sorted(str(k)[:50] for k in args if k not in properties)
    if unknown:
        raise ToolError(f"{name}: unknown argument(s): {', '.join(unknown[:5])}")
    for key in spec.input_schema["required"]:
        if args.get(key) is None:
            raise ToolError(f"{name}: {key!r} is required")
    for key, value in args.items():
        schema = properties[key]
        if value is None:
            continue
        if schema["type"] == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ToolError(f"{name}: {key!r} must be an integer")
            if not schema["minimum"] <= value <= schema["maximum"]:
                raise ToolError(
                    f"{name}: {key!r} must be between {schema['minimum']} and {schema['maximum']}"
                )
        elif schema["type"] == "string" and not isinstance(value, str):
            raise ToolError(f"{name}: {key!r} must be a string")
    return args


def _text(args: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    assert isinstance(value, str)  # checked by _arguments
    if len(value) > MAX_TEXT_CHARS:
        raise ToolError(
            f"{key!r} is too long ({len(value):,} characters; at most {MAX_TEXT_CHARS:,})"
        )
    if required and not value.strip():
        raise ToolError(f"{key!r} must not be empty")
    return value if value.strip() else None
