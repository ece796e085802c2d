"""``citeline.openCitation``: the one ``workspace/executeCommand`` that is not a
request's twin (those are registered with their request: ``lsp/routes.py``, from
``wire.METHODS``).  It shows a citation in the editor (see docs/lsp-extensions.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

import cattrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from citeline import wire
from citeline.lsp.convert import uri_to_path
from citeline.lsp.errors import RequestFailed, invalid_params
from citeline.lsp.routes import command

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)


def _client_shows_documents(ls: CitelineServer) -> bool:
    try:
        show = ls.client_capabilities.window.show_document  # type: ignore[union-attr]
    except AttributeError:
        return False
    return bool(show and show.support)


async def open_citation(ls: CitelineServer, citation: object) -> bool:
    if not isinstance(citation, dict) or not isinstance(citation.get("uri"), str):
        raise invalid_params(f"{wire.OPEN_CITATION}: the argument must be a citation with a 'uri'")
    uri: str = citation["uri"]
    path = uri_to_path(uri)
    if path is None or ls.service.folders.containing(path) is None:
        # Citations name documents of the served folders; nothing else is shown.
        raise RequestFailed(f"{wire.OPEN_CITATION}: not a document of the folders Citeline serves")
    selection: types.Range | None = None
    if citation.get("range") is not None:
        try:
            selection = ls.protocol._converter.structure(citation["range"], types.Range)
        except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
            raise invalid_params(f"{wire.OPEN_CITATION}: 'range' is not an LSP range") from exc
    is_pdf = "#page=" in uri
    if citation.get("local_copy", "same") != "same":
        log.info("%s: the local copy of %s differs from the indexed one", wire.OPEN_CITATION, uri)
        return False  # its lines may hold something else: clients show the citation's text
    if not _client_shows_documents(ls):
        log.info("%s: the client cannot show documents (window/showDocument)", wire.OPEN_CITATION)
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


def register(ls: CitelineServer) -> None:
    # pygls reads a command handler's annotations at call time to convert its
    # arguments: they name a runtime type (LanguageServer) rather than CitelineServer.
    @command(ls, wire.OPEN_CITATION)
    async def open_citation_command(ls: LanguageServer, *args: Any) -> bool:
        if len(args) != 1:
            raise invalid_params(
                f"{wire.OPEN_CITATION}: expected 1 argument (citation), got {len(args)}"
            )
        (citation,) = args
        return await open_citation(cast("CitelineServer", ls), citation)
