"""``citeline serve``: the pygls language server, its threads and its transport.

:func:`build_server` makes a :class:`CitelineServer` and registers each area's
handlers from its own module.  :func:`serve` runs it over stdio (default) or TCP
(``lsp/framing.py``: limits and checks; ``lsp/transport.py``: stdio; ``lsp/tcp.py``:
the token, one client at a time).
Under stdio, file descriptor 1 is moved to stderr before anything else runs, so
nothing but JSON-RPC can reach the client's stdin, whatever a library prints.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import cattrs
from lsprotocol import converters, types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from citeline import __version__, cache
from citeline.lsp import (
    ask,
    commands,
    folders,
    history,
    pause,
    reindex,
    search,
    session,
    status,
    transport,
)
from citeline.lsp import tcp as tcp_server
from citeline.lsp.attach import (
    AttachPoint,
    McpHost,
    find_daemon,
    proxy,
    read_initialize,
    window_folders,
)
from citeline.lsp.convert import uri_to_path
from citeline.lsp.diagnostics import DiagnosticsPublisher
from citeline.lsp.logs import ClientLogHandler, configure_logging
from citeline.lsp.progress import WorkDone
from citeline.lsp.protocol import CitelineProtocol
from citeline.lsp.status import StatusNotifier
from citeline.service.events import Progress
from citeline.service.folders import Folder
from citeline.service.service import Service
from citeline.service.session import EditorSession
from citeline.service.workspace import Backends
from citeline.stdio import protocol_streams

log = logging.getLogger(__name__)

STOP_TIMEOUT = 10.0
_MESSAGE_KEYS = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})


def json_converter() -> cattrs.Converter:
    """lsprotocol's converter, leaving the params and results of methods it does not
    know as plain JSON (pygls' default turns them into namedtuples); members JSON-RPC
    does not define are ignored."""
    converter = converters.get_converter()

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        values = {k: v for k, v in obj.items() if k in _MESSAGE_KEYS}
        if cls is not JsonRPCResponseMessage:
            values.setdefault("params", None)  # params are optional in JSON-RPC
        return cls(**values)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


class CitelineServer(LanguageServer):
    """The language server: the service it fronts, and what the editor sees of it
    (status notifications, diagnostics, progress, warnings: the service's events)."""

    def __init__(self, docs: Iterable[Path] = (), *, backends: Backends) -> None:
        super().__init__(
            "citeline",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=CitelineProtocol,
            converter_factory=json_converter,
        )
        self.protocol: CitelineProtocol
        self.deferred_warnings: list[str] = []  # until the client can show them
        self.service = Service(backends, events=self)
        # The editor's settings and folders, and the policy for them (the service's).
        self.session = EditorSession(self.service, docs, uri_to_path)
        self.status = StatusNotifier(self)
        self.diagnostics = DiagnosticsPublisher(self)
        self._log_handler: ClientLogHandler | None = None
        # With ``serve --attach``: where later windows attach (``lsp/attach.py``).
        self.attach_point: AttachPoint | None = None
        # Set by the transport: how `exit` ends it (with the process exit status).
        self.exit_requested: Callable[[int], None] = lambda code: None

    # -- the transport's events --------------------------------------------------------

    def request_exit(self, code: int) -> None:
        """The client sent ``exit``: end the transport."""
        self.exit_requested(code)

    def client_gone(self) -> None:
        """A TCP client disconnected: stop talking to it; folders and models stay."""
        self.status.enabled = False
        self.detach_client_log()
        self.diagnostics = DiagnosticsPublisher(self)  # the next client sees everything

    # -- the service's events -----------------------------------------------------------

    def status_changed(self, *, immediate: bool = False) -> None:
        self.status.changed(immediate=immediate)
        if self.attach_point is not None:
            self.attach_point.publish(folder.root for folder in self.service.folders)

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


def build_server(docs: Iterable[Path] = (), *, backends: Backends) -> CitelineServer:
    """The server with every area's handlers over ``backends`` (the command line passes
    ``app.ModelPool``: the LSP layer names no backend)."""
    ls = CitelineServer(docs, backends=backends)
    session.register(ls)
    status.register(ls)
    ask.register(ls)
    search.register(ls)
    reindex.register(ls)
    commands.register(ls)
    history.register(ls)
    folders.register(ls)
    pause.register(ls)
    return ls


def default_token_file() -> Path:
    """Where the TCP token goes unless ``--token-file`` says ({port}: the port)."""
    return tcp_server.token_folder(cache.cache_dir()) / "tcp-{port}.token"


def serve(
    docs: list[Path],
    backends: Backends,
    tcp: str | None,
    log_file: str | None,
    verbose: bool,
    token_file: str | None = None,
    settings: dict[str, Any] | None = None,
    attach: bool = False,
    mcp_host: McpHost | None = None,
) -> int:
    """Run the language server until the client exits; the process exit status.
    ``settings`` (``--store``, ``--collection``) apply to every folder, over the editor's.
    ``attach`` (stdio only): attach to a daemon already serving the window's folders,
    else serve them and let later windows attach (``lsp/attach.py``), and with
    ``mcp_host`` later ``citeline mcp --attach`` servers too."""
    configure_logging(log_file, verbose)
    try:
        address = tcp_server.parse_tcp(tcp) if tcp else None
    except ValueError as exc:
        log.error("%s", exc)
        return 2
    streams = None if address else protocol_streams()
    prefix = b""
    if attach and streams is not None:
        prefix, initialize = read_initialize(streams[0])
        record = initialize and find_daemon(window_folders(initialize, docs))
        if initialize is not None and record:
            code = proxy(initialize, record, *streams)
            if code is not None:
                return code
    ls = build_server(docs, backends=backends)
    if attach and streams is not None:
        ls.attach_point = AttachPoint(ls, mcp_host=mcp_host)
    ls.service.folders.command_line = dict(settings or {})
    log.info(
        "citeline %s serving %s", __version__, f"{address[0]}:{address[1]}" if address else "stdio"
    )
    try:
        if address is not None:
            where = Path(token_file).expanduser() if token_file else default_token_file()
            try:
                server = tcp_server.TcpServer(ls, *address, where, private_folder=not token_file)
                return server.run()
            except OSError as exc:
                log.error("cannot serve on %s:%d: %s", *address, exc.strerror or exc)
                return 2
        assert streams is not None
        return transport.serve_stdio(ls, *streams, prefix)
    finally:
        ls.detach_client_log()
        ls.stop_workers()
