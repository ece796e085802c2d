"""Pure conversions between the core's JSON and LSP's: URIs, ranges, hover Markdown.

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
from typing import Any, cast
from urllib.parse import unquote_to_bytes, urlsplit

from citeline import wire


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


def located(
    item: Mapping[str, Any],
    root: Path,
    folder_uri: str,
    local_copy: str = "same",
    text: str | None = None,
) -> dict[str, Any]:
    """A hit or citation JSON object with ``uri``, ``range``, ``folder`` and ``local_copy``
    added.  When the folder's own copy of the file is not the indexed one (``local_copy``
    "differs" or "missing"), the object also carries the passage's ``text`` (from the
    index): clients show it, and its ``local_copy_note``, instead of jumping to lines
    that may hold something else."""
    page = item.get("page")
    page = page if isinstance(page, int) else None
    out = dict(item)
    out["local_copy"] = local_copy
    out["local_copy_note"] = wire.local_copy_note(local_copy)
    if local_copy != "same" and text is not None:
        out["text"] = text
    out["uri"] = location_uri(root, str(item["path"]), page)
    if page is not None:
        out["range"] = line_range(None, None)
    else:
        out["range"] = line_range(
            _int_or_none(item.get("start_line")), _int_or_none(item.get("end_line"))
        )
    out["folder"] = folder_uri
    return out


def answer_json(
    answer: Mapping[str, Any],
    root: Path,
    folder_uri: str,
    copies: Mapping[str, str] | None = None,
    passages: Mapping[int, str] | None = None,
) -> wire.Answer:
    """``Answer.to_json()`` with the folder, its mode label and fallback note, and every
    citation and hit located; ``copies`` says per path whether the local file is the
    indexed one, ``passages`` gives each citation's text by its ``n``."""
    copies = copies or {}
    passages = passages or {}
    out = dict(answer)
    out["folder"] = folder_uri
    mode, model = answer.get("mode"), answer.get("model")
    out["mode_label"] = wire.mode_label(mode, model)
    out["fallback_note"] = wire.fallback_note(mode, answer.get("fallback"), answer.get("degraded"))
    out["citations"] = [
        located(c, root, folder_uri, copies.get(str(c["path"]), "same"), passages.get(c["n"]))
        for c in answer.get("citations") or []
    ]
    out["hits"] = [
        located(h, root, folder_uri, copies.get(str(h["path"]), "same"))
        for h in answer.get("hits") or []
    ]
    return cast(wire.Answer, out)


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- hover ---------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<|#])|^(>)")


def md_escape(text: str) -> str:
    """Text that renders as itself inside a Markdown paragraph."""
    return _MD_SPECIAL.sub(lambda m: "\\" + (m.group(1) or m.group(2)), text)


def link_target(hit: Mapping[str, Any]) -> str:
    """Where a hover link points: ``uri#Lline`` for text, the ``#page=N`` URI for PDFs;
    the file alone when the local copy is not the indexed one (its lines may differ)."""
    uri = str(hit["uri"])
    if hit.get("local_copy", "same") != "same":
        return uri.split("#", 1)[0]
    if hit.get("page") is None and isinstance(hit.get("start_line"), int):
        return f"{uri}#L{hit['start_line']}"
    return uri


def link_label(hit: Mapping[str, Any]) -> str:
    path = str(hit["path"])
    if isinstance(hit.get("page"), int):
        return f"{path}, page {hit['page']}"
    if isinstance(hit.get("start_line"), int):
        return f"{path}:{hit['start_line']}"
    return path


def snippet(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def hover_markdown(hits: Iterable[Mapping[str, Any]], *, markdown: bool = True) -> str:
    """Top passages, each a link to its place, its section and a short quote."""
    parts: list[str] = []
    for hit in hits:
        section = str(hit.get("section") or "")
        if note := hit.get("local_copy_note"):
            section += f" ({note})"
        quote = snippet(str(hit.get("text") or ""))
        if markdown:
            head = f"**[{md_escape(link_label(hit))}]({link_target(hit)})**"
            if section:
                head += f" — {md_escape(section)}"
            parts.append(f"{head}\n\n> {md_escape(quote)}")
        else:
            head = link_label(hit) + (f" — {section}" if section else "")
            parts.append(f"{head}\n  {quote}\n  {link_target(hit)}")
    return ("\n\n---\n\n" if markdown else "\n\n").join(parts)
