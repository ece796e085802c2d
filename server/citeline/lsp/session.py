"""What the editor tells the server about itself: folders, settings, saves, shutdown.

This module reads the client's facts and passes them to the service's
:class:`~citeline.service.session.EditorSession`, which holds the policy: the
workspace folders (or the root URI) as paths; ``initializationOptions``, then
``workspace/configuration`` (section ``citeline``) when the client offers it,
then each ``workspace/didChangeConfiguration``.  Which folders are served and how
the settings layer are the service's (``service/session.py``,
``service/selection.py``); the warnings it returns are shown to the user.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from citeline.lsp.convert import uri_to_path
from citeline.lsp.routes import notification
from citeline.service.session import SECTION

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

CONFIGURATION_TIMEOUT = 5.0
SHUTDOWN_TIMEOUT = 15.0


def _client_has_configuration(ls: CitelineServer) -> bool:
    try:
        return bool(ls.client_capabilities.workspace.configuration)  # type: ignore[union-attr]
    except AttributeError:
        return False


async def _pull_configuration(ls: CitelineServer) -> object:
    """The client's ``citeline`` section, or None."""
    if not _client_has_configuration(ls):
        return None
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
            ),
            CONFIGURATION_TIMEOUT,
        )
    except Exception as exc:
        log.info("workspace/configuration: %s", exc or type(exc).__name__)
        return None
    if isinstance(result, (list, tuple)) and result:
        first = result[0]
        if isinstance(first, Mapping) and first:
            return first
    return None


def _paths(uris: Iterable[str]) -> list[Path]:
    return [path for uri in uris if (path := uri_to_path(uri)) is not None]


def register(ls: CitelineServer) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(ls: CitelineServer, params: types.InitializeParams) -> None:
        roots = _paths(f.uri for f in params.workspace_folders or [])
        if not roots and params.root_uri:
            roots = _paths([params.root_uri])
        if not roots and params.root_path:
            roots = [Path(params.root_path)]
        ls.deferred_warnings.extend(ls.session.initialize(params.initialization_options, roots))
        client = params.client_info.name if params.client_info else "an unnamed client"
        log.info("initialized by %s", client)

    @notification(ls, types.INITIALIZED)
    async def initialized(ls: CitelineServer, params: types.InitializedParams) -> None:
        ls.attach_client_log(asyncio.get_running_loop())
        ls.status.enabled = True
        ls.deferred_warnings.extend(ls.session.pulled(await _pull_configuration(ls)))
        ls.show_warnings(None, ls.deferred_warnings)
        ls.deferred_warnings.clear()
        ls.session.apply()
        ls.status.changed(immediate=True)

    @notification(ls, types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: CitelineServer, params: types.DidChangeConfigurationParams
    ) -> None:
        settings = params.settings
        if isinstance(settings, Mapping) and SECTION in settings:
            options: object = settings[SECTION]
        else:
            options = await _pull_configuration(ls)
            if options is None:
                return
        ls.show_warnings(None, ls.session.changed(options))
        ls.session.apply()

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(
        ls: CitelineServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        ls.session.folders_changed(
            _paths(f.uri for f in params.event.added), _paths(f.uri for f in params.event.removed)
        )

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CitelineServer, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is not None:
            ls.service.saved(path)

    # Registered so that clients send open/close/change: hover reads unsaved text.
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CitelineServer, params: types.DidOpenTextDocumentParams) -> None:
        return None

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CitelineServer, params: types.DidCloseTextDocumentParams) -> None:
        return None

    @notification(ls, types.SHUTDOWN)
    async def shutdown(ls: CitelineServer, params: None) -> None:
        log.info("shutting down")
        ls.status.enabled = False
        await ls.service.shutdown(SHUTDOWN_TIMEOUT)
