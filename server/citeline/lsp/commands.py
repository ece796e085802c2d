"""``workspace/executeCommand`` equivalents of the custom requests, for clients that
only speak commands.  Arguments are positional, named in ``wire.COMMANDS`` (see
docs/lsp-extensions.md)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

import cattrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from citeline import wire
from citeline.lsp.ask import answer_request
from citeline.lsp.convert import uri_to_path
from citeline.lsp.errors import RequestFailed, invalid_params, reported
from citeline.lsp.params import command_args, folder_param, int_param, string_param
from citeline.lsp.reindex import reindex_request
from citeline.lsp.search import MAX_K, search_request
from citeline.lsp.status import status_json

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

ASK = "citeline.ask"
SEARCH = "citeline.search"
REINDEX = "citeline.reindex"
STATUS = "citeline.status"
OPEN_CITATION = "citeline.openCitation"


def _args(command: str, args: tuple[Any, ...], required: int) -> list[Any]:
    return command_args(command, args, list(wire.COMMANDS[command][0]), required)


def _text(command: str, value: object, name: str, *, required: bool) -> str | None:
    return string_param(command, {name: value}, name, required=required)


def _client_shows_documents(ls: CitelineServer) -> bool:
    try:
        show = ls.client_capabilities.window.show_document  # type: ignore[union-attr]
    except AttributeError:
        return False
    return bool(show and show.support)


async def open_citation(ls: CitelineServer, citation: object) -> bool:
    if not isinstance(citation, dict) or not isinstance(citation.get("uri"), str):
        raise invalid_params(f"{OPEN_CITATION}: the argument must be a citation with a 'uri'")
    uri: str = citation["uri"]
    path = uri_to_path(uri)
    if path is None or ls.service.folders.containing(path) is None:
        # Citations name documents of the served folders; nothing else is shown.
        raise RequestFailed(f"{OPEN_CITATION}: not a document of the folders Citeline serves")
    selection: types.Range | None = None
    if citation.get("range") is not None:
        try:
            selection = ls.protocol._converter.structure(citation["range"], types.Range)
        except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
            raise invalid_params(f"{OPEN_CITATION}: 'range' is not an LSP range") from exc
    is_pdf = "#page=" in uri
    if citation.get("local_copy", "same") != "same":
        log.info("%s: the local copy of %s differs from the indexed one", OPEN_CITATION, uri)
        return False  # its lines may hold something else: clients show the citation's text
    if not _client_shows_documents(ls):
        log.info("%s: the client cannot show documents (window/showDocument)", OPEN_CITATION)
        return False
    result = await ls.window_show_document_async(
        types.ShowDocumentParams(
            uri=uri,
            external=True if is_pdf else None,
            take_focus=True,
            selection=None if is_pdf else selection,
        )
    )
    return bool(result and result.success)


def _citeline(ls: LanguageServer) -> CitelineServer:
    return cast("CitelineServer", ls)


# pygls resolves command handlers' annotations at call time to convert arguments, so
# they name a runtime type (LanguageServer) rather than CitelineServer.


def register(ls: CitelineServer) -> None:
    @ls.command(ASK)
    @reported(ASK)
    async def ask(ls: LanguageServer, *args: Any) -> wire.Answer:
        question, folder = _args(ASK, args, 1)
        text = _text(ASK, question, "question", required=True)
        assert text is not None
        named = folder_param(ASK, {"folder": folder}, "folder")
        return await answer_request(_citeline(ls), text, named, None)

    @ls.command(SEARCH)
    @reported(SEARCH)
    async def search(ls: LanguageServer, *args: Any) -> wire.SearchResult:
        query, k = _args(SEARCH, args, 1)
        text = _text(SEARCH, query, "query", required=True)
        assert text is not None
        count = int_param(SEARCH, {"k": k}, "k", low=1, high=MAX_K)
        return wire.SearchResult(hits=await search_request(_citeline(ls), text, count, None))

    @ls.command(REINDEX)
    @reported(REINDEX)
    async def reindex(ls: LanguageServer, *args: Any) -> wire.ReindexResult:
        (folder,) = _args(REINDEX, args, 0)
        return await reindex_request(
            _citeline(ls), folder_param(REINDEX, {"folder": folder}, "folder")
        )

    @ls.command(STATUS)
    @reported(STATUS)
    async def status(ls: LanguageServer, *args: Any) -> wire.StatusResult:
        _args(STATUS, args, 0)
        return status_json(_citeline(ls))

    @ls.command(OPEN_CITATION)
    @reported(OPEN_CITATION)
    async def open_citation_command(ls: LanguageServer, *args: Any) -> bool:
        (citation,) = _args(OPEN_CITATION, args, 1)
        return await open_citation(_citeline(ls), citation)
