"""A language server in this process: its registered handlers called as pygls
calls them, what it writes to the client captured."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from citeline.lsp.server import CitelineServer
from recording import JsonCapture


@dataclass
class Served:
    ls: CitelineServer
    wire: JsonCapture
    garden: Path
    kitchen: Path

    def feature(self, method: str) -> Callable[..., Awaitable[Any]]:
        """The handler pygls calls for ``method`` (the server bound): pass the params."""
        handler: Callable[..., Awaitable[Any]] = self.ls.protocol.fm.features[method]
        return handler

    def command(self, name: str) -> Callable[..., Awaitable[Any]]:
        """The handler pygls calls for a command (the server bound): pass the arguments."""
        handler: Callable[..., Awaitable[Any]] = self.ls.protocol.fm.commands[name]
        return handler


def initialize(
    ls: CitelineServer,
    capabilities: types.ClientCapabilities,
    workspace_folders: list[Path] | None = None,
) -> None:
    """What ``initialize`` does, run as pygls runs it (its workspace, then our handler)."""
    folders = [types.WorkspaceFolder(uri=p.as_uri(), name=p.name) for p in workspace_folders or []]
    steps = ls.protocol.lsp_initialize(
        types.InitializeParams(capabilities=capabilities, workspace_folders=folders or None)
    )
    with contextlib.suppress(StopIteration):
        handler, args, _ = next(steps)
        handler(*args)
        steps.send(None)
