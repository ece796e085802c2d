"""What the editor tells the server about itself: folders, settings, saves, shutdown.

Folders come from the workspace folders (or the root URI), served only when they
hold ``citeline.toml`` or ``.citeline/``, or from the ``folders`` setting when it
is set, plus ``citeline serve --docs`` (the rule is the service's:
``service/selection.py``).  Settings
come from ``initializationOptions``, then ``workspace/configuration`` (section
``citeline``) when the client offers it, then each
``workspace/didChangeConfiguration``; they are the top layer over defaults and
each folder's ``citeline.toml``.  Invalid values are shown as warnings and the
layer below is used.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from citeline.lsp.convert import uri_to_path
from citeline.lsp.errors import log_failures

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

SECTION = "citeline"
CONFIGURATION_TIMEOUT = 5.0
SHUTDOWN_TIMEOUT = 15.0


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+:")


def _folder_path(value: str) -> Path | None:
    """A folder named by a path or a file:// URI; None for other URIs."""
    if _SCHEME.match(value):
        return uri_to_path(value)
    return Path(value).expanduser().absolute()


def split_options(
    options: object, where: str
) -> tuple[dict[str, Any], list[Path] | None, list[str]]:
    """Editor settings -> (the settings layer, the ``folders`` setting or None, warnings)."""
    if options is None:
        return {}, None, []
    if not isinstance(options, Mapping):
        return {}, None, [f"{where} must be an object; ignored"]
    section = options.get(SECTION)
    if set(options) == {SECTION} and isinstance(section, Mapping):
        options = section
    layer: dict[str, Any] = {str(k): v for k, v in options.items()}
    value = layer.pop("folders", None)
    if value is None:
        return layer, None, []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return layer, None, ["setting 'folders' must be a list of paths; ignored"]
    folders: list[Path] = []
    warnings: list[str] = []
    for item in value:
        path = _folder_path(item)
        if path is None:
            warnings.append(f"setting 'folders': {item!r} is not a local path; ignored")
        else:
            folders.append(path)
    return layer, folders or None, warnings


def merge_layers(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_layers(out[key], value)
        else:
            out[key] = value
    return out


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


def register(ls: CitelineServer) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(ls: CitelineServer, params: types.InitializeParams) -> None:
        layer, folders, warnings = split_options(
            params.initialization_options, "initializationOptions"
        )
        ls.editor_settings = layer
        ls.folders_setting = folders
        ls.deferred_warnings.extend(warnings)
        roots: list[Path] = []
        for folder in params.workspace_folders or []:
            path = uri_to_path(folder.uri)
            if path is not None:
                roots.append(path)
        if not roots and params.root_uri:
            path = uri_to_path(params.root_uri)
            if path is not None:
                roots.append(path)
        if not roots and params.root_path:
            roots.append(Path(params.root_path))
        ls.workspace_roots = roots
        client = params.client_info.name if params.client_info else "an unnamed client"
        log.info("initialized by %s", client)

    @ls.feature(types.INITIALIZED)
    @log_failures(types.INITIALIZED)
    async def initialized(ls: CitelineServer, params: types.InitializedParams) -> None:
        ls.attach_client_log(asyncio.get_running_loop())
        ls.status.enabled = True
        pulled = await _pull_configuration(ls)
        if pulled is not None:
            layer, folders, warnings = split_options(pulled, "workspace/configuration")
            ls.editor_settings = merge_layers(ls.editor_settings, layer)
            ls.folders_setting = folders or ls.folders_setting
            ls.deferred_warnings.extend(warnings)
        ls.show_warnings(None, ls.deferred_warnings)
        ls.deferred_warnings.clear()
        ls.service.settings_changed(ls.editor_settings)
        ls.choose_folders()
        ls.status.changed(immediate=True)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @log_failures(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
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
        layer, folders, warnings = split_options(options, "settings.citeline")
        ls.editor_settings = layer
        ls.folders_setting = folders
        ls.show_warnings(None, warnings)
        ls.service.settings_changed(layer)
        ls.choose_folders()

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(
        ls: CitelineServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        removed = {str(uri_to_path(f.uri)) for f in params.event.removed}
        roots = [r for r in ls.workspace_roots if str(r) not in removed]
        for folder in params.event.added:
            path = uri_to_path(folder.uri)
            if path is not None and path not in roots:
                roots.append(path)
        ls.workspace_roots = roots
        ls.choose_folders()

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

    @ls.feature(types.SHUTDOWN)
    @log_failures(types.SHUTDOWN)
    async def shutdown(ls: CitelineServer, params: None) -> None:
        log.info("shutting down")
        ls.status.enabled = False
        await ls.service.shutdown(SHUTDOWN_TIMEOUT)
