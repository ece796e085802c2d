"""``citeline/search`` and ``textDocument/hover``: passages with links to their place.

Searching (which folders, merging, threads) is the service's (``Service.search``).
Hover searches with the selection the client sends in ``params.citeline.selection``,
else the sentence under the cursor, else the line (``service/hover.py``), and answers
Markdown with the top passages.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

from citeline import wire
from citeline.lsp.convert import hit, hover_markdown, path_to_uri, uri_to_path
from citeline.lsp.params import folder
from citeline.lsp.routes import lsp_request, request
from citeline.service.hover import MAX_QUERY_CHARS, hover_query

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

HOVER_PASSAGES = 3


async def search_request(
    ls: CitelineServer, query: str, k: int | None, folder: Path | None, *, rerank: bool = True
) -> list[wire.Hit]:
    """The hits as the client gets them: with ``uri``, ``range`` and ``folder``."""
    found = await ls.service.search(query, k, folder, rerank=rerank)
    return [hit(f.hit, f.folder.root, path_to_uri(f.folder.root), f.local_copy) for f in found]


# -- hover ---------------------------------------------------------------------


async def _cursor_text(ls: CitelineServer, params: types.HoverParams) -> str:
    """The sentence under the cursor: from the editor's text of the document (what the
    client sent with didOpen/didChange: no file is read), else from the file, read
    off the event loop, only a regular file inside a served folder and bounded
    (``Service.read_text``; anything else is a one-line RequestFailed)."""
    uri = params.text_document.uri
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is not None:
        source = document.source
    else:
        path = uri_to_path(uri)
        if path is None:
            return ""  # not a file: only the editor could have sent its text
        source = await ls.service.read_text(path)
    lines = source.splitlines(keepends=True)
    try:
        codec = ls.workspace.position_codec
        position = codec.position_from_client_units(lines, params.position)
    except (ValueError, IndexError) as exc:
        log.debug("hover: position out of range: %s", exc)
        return ""
    return hover_query(lines, position.line, position.character)


def _client_markdown(ls: CitelineServer) -> bool:
    try:
        formats = ls.client_capabilities.text_document.hover.content_format  # type: ignore[union-attr]
    except AttributeError:
        return True
    return formats is None or types.MarkupKind.Markdown in formats


def _at_cursor(found: wire.Hit, params: types.HoverParams) -> bool:
    """Whether a hit is the very passage being hovered (not worth showing)."""
    here = uri_to_path(params.text_document.uri)
    there = uri_to_path(found["uri"])
    if here is None or there is None or here != there:
        return False
    rng = found["range"]
    return bool(rng["start"]["line"] <= params.position.line < rng["end"]["line"])


def register(ls: CitelineServer) -> None:
    @request(ls, wire.SEARCH)
    async def search(ls: CitelineServer, params: wire.SearchParams) -> wire.SearchResult:
        hits = await search_request(
            ls, params["query"], params.get("k"), folder(params.get("folder"))
        )
        return wire.SearchResult(hits=hits)

    @lsp_request(ls, types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: CitelineServer, params: types.HoverParams) -> types.Hover | None:
        extras = ls.protocol.hover_extras()
        if not len(ls.service.folders):
            return None
        selection = extras.get("selection")
        if isinstance(selection, str) and selection.strip():
            query = " ".join(selection[: MAX_QUERY_CHARS * 4].split())[:MAX_QUERY_CHARS]
        else:
            query = await _cursor_text(ls, params)
        if not query:
            return None
        hits = await search_request(ls, query, HOVER_PASSAGES + 1, None, rerank=False)
        hits = [h for h in hits if not _at_cursor(h, params)][:HOVER_PASSAGES]
        if not hits:
            return None
        markdown = _client_markdown(ls)
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText,
                value=hover_markdown(hits, markdown=markdown),
            )
        )
