"""``citeline serve``: the pygls language server, its threads and its transport.

:func:`build_server` makes a :class:`CitelineServer` and registers each area's
handlers from its own module.  :func:`serve` runs it over stdio (default) or TCP.
Under stdio, file descriptor 1 is moved to stderr before anything else runs, so
nothing but JSON-RPC can reach the client's stdin, whatever a library prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO

import cattrs
from lsprotocol import converters, types
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

from citeline import __version__
from citeline.app import ModelPool
from citeline.lsp import ask, commands, reindex, search, session, status
from citeline.lsp.diagnostics import DiagnosticsPublisher
from citeline.lsp.progress import WorkDone
from citeline.lsp.status import StatusNotifier
from citeline.service.events import Progress
from citeline.service.folders import Folder, folder_key
from citeline.service.service import Service
from citeline.service.workspace import Backends

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
STOP_TIMEOUT = 10.0


class _Rejected:
    """A message whose params could not be read; already answered with an error."""

    jsonrpc = "rejected"


def json_converter() -> cattrs.Converter:
    """lsprotocol's converter, leaving the params and results of methods it does not
    know as plain JSON (pygls' default turns them into namedtuples)."""
    converter = converters.get_converter()

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


class CitelineProtocol(LanguageServerProtocol):
    """pygls' protocol, plus: malformed params get an error response (pygls would drop
    the message and leave the client waiting), and hover's ``citeline`` extension field
    (which the typed hover params do not carry) is kept for the handler."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hover_extras: dict[Any, dict[str, Any]] = {}

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and data.get("method") == types.TEXT_DOCUMENT_HOVER:
            params = data.get("params")
            if isinstance(params, dict) and isinstance(params.get("citeline"), dict):
                self._hover_extras[data.get("id")] = params["citeline"]
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if method is None:
                raise
            self._hover_extras.pop(data.get("id"), None)
            message = f"invalid params for {method}"
            log.warning("%s: %s", message, data.get("params"))
            if "id" in data:
                exc.message = message
                self._send_response(data["id"], error=exc.to_response_error())
            return _Rejected()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Rejected):
            return
        super().handle_message(message)

    def hover_extras(self) -> dict[str, Any]:
        """The current hover request's ``citeline`` field (empty if none)."""
        return self._hover_extras.pop(self.msg_id, {})


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as ``window/logMessage``."""

    LEVELS = (
        (logging.ERROR, types.MessageType.Error),
        (logging.WARNING, types.MessageType.Warning),
        (logging.INFO, types.MessageType.Info),
        (0, types.MessageType.Log),
    )

    def __init__(self, ls: CitelineServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.INFO)
        self.ls = ls
        self.loop = loop
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if self.loop.is_closed():
            return
        kind = next(t for level, t in self.LEVELS if record.levelno >= level)
        try:
            text = self.format(record)
            self.loop.call_soon_threadsafe(self._send, kind, text)
        except Exception:  # never let logging break the server
            self.handleError(record)

    def _send(self, kind: types.MessageType, text: str) -> None:
        with contextlib.suppress(Exception):  # the connection is gone
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=text))


class CitelineServer(LanguageServer):
    """The language server: the service it fronts, and what the editor sees of it
    (status notifications, diagnostics, progress, warnings: the service's events)."""

    def __init__(self, docs: Iterable[Path] = (), backends: Backends | None = None) -> None:
        super().__init__(
            "citeline",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=CitelineProtocol,
            converter_factory=json_converter,
        )
        self.protocol: CitelineProtocol
        self.cli_docs = [Path(d).expanduser().absolute() for d in docs]
        self.editor_settings: dict[str, Any] = {}
        self.folders_setting: list[Path] | None = None
        self.workspace_roots: list[Path] = []
        self.deferred_warnings: list[str] = []
        self.service = Service(backends or ModelPool(), events=self)
        self.status = StatusNotifier(self)
        self.diagnostics = DiagnosticsPublisher(self)
        self._log_handler: ClientLogHandler | None = None

    def wanted_roots(self) -> list[Path]:
        """The folders to serve: the ``folders`` setting or the workspace's, plus --docs."""
        roots = list(self.folders_setting or self.workspace_roots)
        keys = {folder_key(r) for r in roots}
        roots.extend(d for d in self.cli_docs if folder_key(d) not in keys)
        return roots

    # -- the service's events -----------------------------------------------------------

    def status_changed(self, *, immediate: bool = False) -> None:
        self.status.changed(immediate=immediate)

    def file_errors_changed(self, folder: Folder) -> None:
        self.diagnostics.publish(folder)

    def folder_removed(self, folder: Folder) -> None:
        self.diagnostics.clear(folder)

    def start_progress(
        self, title: str, on_cancel: Callable[[], None], message: str | None
    ) -> Progress:
        return WorkDone(self, title, on_cancel, message=message)

    def show_warnings(self, where: str | None, warnings: Iterable[str]) -> None:
        for warning in warnings:
            text = f"Citeline ({where}): {warning}" if where else f"Citeline: {warning}"
            log.warning("%s", text)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=text)
            )

    def attach_client_log(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._log_handler is None:
            self._log_handler = ClientLogHandler(self, loop)
            logging.getLogger("citeline").addHandler(self._log_handler)

    def detach_client_log(self) -> None:
        if self._log_handler is not None:
            logging.getLogger("citeline").removeHandler(self._log_handler)
            self._log_handler = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would pop up every failed notification; the log (and logMessage) is
        # enough.  Failed requests were answered with an error and logged already.
        if source is FeatureRequestError:
            return
        log.error("%s: %s", getattr(source, "__name__", source), error)

    def stop_workers(self) -> None:
        self.service.stop(STOP_TIMEOUT)


def build_server(docs: Iterable[Path] = (), backends: Backends | None = None) -> CitelineServer:
    """The server with every area's handlers; ``backends`` default to the real models."""
    ls = CitelineServer(docs, backends)
    session.register(ls)
    status.register(ls)
    ask.register(ls)
    search.register(ls)
    reindex.register(ls)
    commands.register(ls)
    return ls


def parse_tcp(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host = DEFAULT_HOST
    host = host.strip("[]") or DEFAULT_HOST
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"--tcp {value!r}: the port must be a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"--tcp {value!r}: the port must be between 0 and 65535")
    return host, number


def configure_logging(log_file: str | None, verbose: bool) -> None:
    """Citeline's records at INFO (DEBUG with -v) to stderr and the optional file."""
    level = logging.DEBUG if verbose else logging.INFO
    fmt = logging.Formatter("citeline: %(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    if not any(
        isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr
        for h in root.handlers
    ):
        root.addHandler(logging.StreamHandler(sys.stderr))
    for handler in root.handlers:
        handler.setFormatter(fmt)
        handler.setLevel(logging.NOTSET)
    if log_file:
        handler = logging.FileHandler(Path(log_file).expanduser(), encoding="utf-8")
        handler.setFormatter(fmt)
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("citeline").setLevel(level)
    # pygls logs every message body at INFO: only with -v, and then at DEBUG detail.
    logging.getLogger("pygls").setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("pygls.server").setLevel(logging.INFO)  # transport start/stop, address
    logging.getLogger("watchdog").setLevel(logging.WARNING)


def _protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The client's stdin/stdout for JSON-RPC; fd 1 and sys.stdout then point at stderr."""
    sys.stdout.flush()
    protocol_out = typing.cast(BinaryIO, os.fdopen(os.dup(1), "wb"))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, protocol_out


def serve(docs: list[Path], tcp: str | None, log_file: str | None, verbose: bool) -> int:
    """Run the language server until the client exits; the process exit status."""
    configure_logging(log_file, verbose)
    try:
        address = parse_tcp(tcp) if tcp else None
    except ValueError as exc:
        log.error("%s", exc)
        return 2
    streams = None if address else _protocol_streams()
    ls = build_server(docs)
    log.info(
        "citeline %s serving %s", __version__, f"{address[0]}:{address[1]}" if address else "stdio"
    )
    try:
        if address is not None:
            ls.start_tcp(*address)
        else:
            assert streams is not None
            ls.start_io(*streams)
    finally:
        ls.detach_client_log()
        ls.stop_workers()
    return 0 if ls.protocol._shutdown or address is not None else 1
