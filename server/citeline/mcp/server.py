"""``citeline mcp``: the MCP server on stdio, the service it fronts, and its log.

The official MCP SDK's low-level server (``mcp.server.lowlevel``) lists the tools
of ``tools.py`` with their input and output schemas and runs each call; the SDK
checks the arguments against the input schema first (a bad one is a tool error
naming it).  Folders are chosen as ``citeline serve`` chooses them
(``service/selection.py``): the ``--docs`` folders, served regardless; without
one, the client's roots (its workspace folders), else the current directory,
each served only when it holds ``citeline.toml`` or ``.citeline/``.  Settings
come from each folder's ``citeline.toml`` and ``--store``/``--collection``.

stdout is MCP's: file descriptor 1 is moved to stderr before anything else runs
(``citeline.stdio``), and the log goes to stderr (and ``--log-file``).

:func:`serve_connection` serves the same tools over one connection of a daemon that
an attached ``citeline mcp --attach`` copies its client's bytes to (the daemon's
service and folders: ``lsp/attach.py``).
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

from citeline import __version__
from citeline.mcp.tools import SPECS, ToolError, Tools, folder_path
from citeline.service.service import Service
from citeline.service.workspace import Backends
from citeline.stdio import log_to_stderr, protocol_streams

if TYPE_CHECKING:
    from citeline.service.folders import Folder

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 8 * 1024 * 1024  # one MCP message over an attached connection
READ_CHUNK = 65536
SHUTDOWN_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0
ROOTS_TIMEOUT = 10.0

INSTRUCTIONS = (
    "Citeline searches and answers from the user's own documents (notes, manuals,"
    " papers) on this machine, with exact citations: file, section, line range or PDF"
    " page, and the quoted passage. Use `search` to find passages, `ask` for a cited"
    " answer, `status` for which folders are served and their state. Cite the file and"
    " lines it gives when you use a passage."
)


class LogEvents:
    """What the service tells its front end, for a front end with no user interface
    of its own: warnings and long jobs go to the log."""

    def status_changed(self, *, immediate: bool = False) -> None:
        return None

    def show_warnings(self, where: str | None, warnings: Iterable[str]) -> None:
        for warning in warnings:
            log.warning("%s%s", f"{where}: " if where else "", warning)

    def file_errors_changed(self, folder: Folder) -> None:
        for path, message in folder.errors[:20]:
            log.info("%s: %s: %s", folder.name, path, message)

    def folder_removed(self, folder: Folder) -> None:
        return None

    def start_progress(
        self, title: str, on_cancel: Callable[[], None], message: str | None
    ) -> LogProgress:
        log.info("%s%s", title, f": {message}" if message else "")
        return LogProgress(title)


class LogProgress:
    def __init__(self, title: str) -> None:
        self.title = title

    def report(self, percentage: int | None, message: str | None) -> None:
        return None

    def end(self, message: str) -> None:
        log.info("%s: %s", self.title, message)


class Roots:
    """Without ``--docs``, the folders an MCP client says it works in (its roots: in
    VS Code, the workspace folders) are the opened folders, served when they hold a
    marker, exactly as an editor's workspace folders are; a client without roots
    leaves the current directory.  Asked for at the first tool call and again after
    the client says its roots changed."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.stale = True

    def changed(self) -> None:
        self.stale = True

    async def refresh(self, session: ServerSession) -> None:
        if not self.stale:
            return
        self.stale = False
        wanted = types.ClientCapabilities(roots=types.RootsCapability())
        if not session.check_client_capability(wanted):
            return
        try:
            listed = await asyncio.wait_for(session.list_roots(), ROOTS_TIMEOUT)
        except Exception as exc:  # a client that offers roots and then fails: keep what we have
            log.info("roots/list: %s", exc or type(exc).__name__)
            return
        folders = []
        for root in listed.roots:
            try:
                path = folder_path(str(root.uri))
            except ToolError:
                log.info("root %s is not a local folder; ignored", root.uri)
                continue
            if path is not None:
                folders.append(path)
        log.info("the client's roots: %s", ", ".join(map(str, folders)) or "none")
        self.service.choose(folders or [Path.cwd()])


def build_server(tools: Tools, roots: Roots | None = None) -> Server[Any, Any]:
    """The MCP server with Citeline's tools (all read-only); with ``roots``, the folders
    follow the client's roots."""
    server: Server[Any, Any] = Server("citeline", version=__version__, instructions=INSTRUCTIONS)
    listed = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            inputSchema=spec.input_schema,
            outputSchema=spec.output_schema,
            annotations=types.ToolAnnotations(
                title=spec.title,
                readOnlyHint=True,
                destructiveHint=False,
                idempotentHint=spec.name != "ask",  # an ask is recorded in the history
                openWorldHint=False,
            ),
        )
        for spec in SPECS
    ]

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return listed

    @server.call_tool()  # type: ignore[untyped-decorator]
    async def call_tool(
        name: str, arguments: dict[str, Any]
    ) -> tuple[list[types.TextContent], dict[str, Any]]:
        # A ToolError (or any exception) becomes the SDK's error result: isError, one line.
        context = server.request_context
        if roots is not None:
            await roots.refresh(context.session)
        token = context.meta.progressToken if context.meta is not None else None
        steps = 0

        async def progress(message: str) -> None:
            nonlocal steps
            if token is not None:
                steps += 1
                await context.session.send_progress_notification(
                    token, steps, None, message, related_request_id=str(context.request_id)
                )

        text, structured = await tools.call(name, arguments, progress)
        return [types.TextContent(type="text", text=text)], structured

    if roots is not None:

        async def roots_changed(notification: types.RootsListChangedNotification) -> None:
            roots.changed()

        server.notification_handlers[types.RootsListChangedNotification] = roots_changed
    return server


class ConnectionLines:
    """An attached MCP client's connection as the SDK's stdio transport reads and writes
    a process's stdio: lines of text in (a line over ``MAX_LINE_BYTES`` is dropped,
    with one log line), text out."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        buffer = bytearray()
        skipping = False  # inside a line that is too long
        while True:
            data = await self.reader.read(READ_CHUNK)
            if not data:
                return
            buffer += data
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[: end + 1])
                del buffer[: end + 1]
                if skipping:
                    skipping = False
                elif line.strip():
                    yield line.decode("utf-8", "replace")
            if len(buffer) > MAX_LINE_BYTES:
                if not skipping:
                    log.warning("an MCP message over %d bytes was dropped", MAX_LINE_BYTES)
                buffer.clear()
                skipping = True

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def serve_connection(
    service: Service, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve MCP over one attached connection with ``service`` (a daemon's, with its
    folders: roots the client lists are not taken up) until the client closes it."""
    server = build_server(Tools(service))
    lines = cast(Any, ConnectionLines(reader, writer))
    async with stdio_server(lines, lines) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def configure_logging(log_file: str | None, verbose: bool) -> None:
    """Citeline's records at INFO (DEBUG with -v) to stderr and the optional file;
    the SDK's own at WARNING (every request is an INFO line there)."""
    log_to_stderr(log_file, verbose, "mcp")


async def run(
    service: Service,
    stdin: BinaryIO,
    stdout: BinaryIO,
    docs: list[Path],
) -> None:
    """Serve MCP on the given streams until the client closes stdin."""
    if docs:
        service.serve(docs)
    else:
        service.choose([Path.cwd()])
    server = build_server(Tools(service), None if docs else Roots(service))
    reader = anyio.wrap_file(io.TextIOWrapper(stdin, encoding="utf-8", errors="replace"))
    writer = anyio.wrap_file(io.TextIOWrapper(stdout, encoding="utf-8"))
    try:
        async with stdio_server(reader, writer) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await service.shutdown(SHUTDOWN_TIMEOUT)
        service.stop(STOP_TIMEOUT)


def serve(
    docs: list[Path],
    log_file: str | None,
    verbose: bool,
    backends: Backends,
    settings: dict[str, Any] | None = None,
    streams: tuple[BinaryIO, BinaryIO] | None = None,
) -> int:
    """Run the MCP server on stdio until the client goes; the process exit status.
    ``settings`` (``--store``, ``--collection``) apply to every folder.  ``streams``:
    the protocol's stdin and stdout when the caller took them already (``--attach``,
    which also configured the log)."""
    if streams is None:
        configure_logging(log_file, verbose)
        streams = protocol_streams()
    stdin, stdout = streams
    service_events = LogEvents()

    async def main() -> None:
        service = Service(backends, events=service_events)
        service.folders.command_line = dict(settings or {})
        log.info("citeline %s: MCP on stdio", __version__)
        await run(service, stdin, stdout, docs)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 130
    return 0
