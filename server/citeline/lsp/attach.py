"""``citeline serve --attach``: one daemon per folder that later windows attach to.

A daemon started with ``--attach`` (over stdio) offers its folders to later
windows: it listens on a Unix socket, ``attach-<pid>.sock``, in the token folder
(``$XDG_RUNTIME_DIR/citeline/`` or the cache folder's ``run/``: the user's own,
mode 0700), and writes one record per served folder, ``folder-<hash>.json``
(mode 0600: its pid, the socket, a random token).  A later ``citeline serve
--attach`` reads its editor's ``initialize``; when one live daemon serves every
folder that window would serve, it connects (its first message ``initialize``
with the token, as over TCP) and from then on only copies bytes between its
editor and that daemon: it loads no model and opens no index.  Otherwise it
serves the window itself, and offers its folders in turn.

The daemon answers an attached window's ``initialize`` with its own capabilities,
its ``shutdown`` itself and closes it on ``exit``; the window's requests go to the
same handlers as its own editor's (the same confinement, the same folders and
settings), their ids made its own on the way in and given back on the way out.
Its status notifications and diagnostics go to every window; what the attached
window says of its documents (open, change, close) and of its settings and
folders is not taken up: the daemon's own window decides those.  When the daemon
ends, the attached server says so in one line and exits (status 1, so an editor
that restarts its server gets one that serves the folder itself).

``citeline mcp --attach`` attaches the same way (the same records, socket, token
and deadline); its ``initialize`` says ``"protocol": "mcp"`` in its
initializationOptions, and after the daemon's answer the connection carries MCP
(newline-delimited JSON-RPC) instead: the daemon runs an MCP session over it with
the tools of ``mcp/`` on its own service (the ``mcp_host`` the command line hands
it), and the attached process only copies bytes between its client and the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import re
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from citeline import cache
from citeline.lsp.convert import uri_to_path
from citeline.lsp.framing import (
    MAX_HEADER_BYTES,
    MAX_MESSAGE_BYTES,
    Body,
    Frame,
    FrameParser,
    deliver,
)
from citeline.lsp.tcp import (
    AUTH_MAX_BYTES,
    AUTH_TIMEOUT,
    authenticate,
    close_connection,
    first_frame,
    make_private_folder,
    send_error,
    token_folder,
    write_token,
)
from citeline.lsp.transport import READ_CHUNK
from citeline.service.folders import folder_key
from citeline.service.selection import marked

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer
    from citeline.service.service import Service

# Serves one attached MCP client over a connection, with the daemon's service.
McpHost = Callable[["Service", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
MCP = "mcp"  # the initializationOptions' "protocol" of an attaching MCP server

log = logging.getLogger(__name__)

ID_PREFIX = "citeline-attached-"  # an attached window's request ids, as the protocol sees them
BROADCAST = frozenset({"citeline/status", "textDocument/publishDiagnostics"})
# What an attached window says that its daemon does not take up (its own window decides).
NOT_TAKEN = frozenset(
    {
        "initialized",
        "textDocument/didOpen",
        "textDocument/didChange",
        "textDocument/didClose",
        "workspace/didChangeConfiguration",
        "workspace/didChangeWorkspaceFolders",
        "$/setTrace",
    }
)
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,15})", re.IGNORECASE)
MAX_BACKLOG = 64 * 1024 * 1024  # bytes waiting for an attached window that does not read


def runtime_folder() -> Path:
    return token_folder(cache.cache_dir())


def record_path(folder: Path, where: Path | None = None) -> Path:
    digest = hashlib.sha256(folder_key(folder).encode("utf-8", "surrogateescape")).hexdigest()
    return (where or runtime_folder()) / f"folder-{digest[:24]}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a signal of none: is there such a process?
    except ProcessLookupError:
        return False
    except PermissionError:  # there is, another user's
        pass
    return True


# -- the daemon's side ------------------------------------------------------------------


@dataclass(eq=False)
class Attached:
    """One attached window: its connection and the progress tokens of its requests."""

    number: int
    writer: asyncio.StreamWriter
    tokens: dict[str, list[Any]] = field(default_factory=dict)  # request id -> tokens

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_raw(self, data: bytes) -> None:
        if self.writer.is_closing():
            return
        if self.writer.transport.get_write_buffer_size() > MAX_BACKLOG:
            log.warning("an attached window stopped reading; it is disconnected")
            self.writer.transport.abort()
            return
        self.writer.write(data)


class Router:
    """The protocol's writer while windows can attach: each message goes where it
    belongs (:meth:`AttachPoint.route`)."""

    def __init__(self, point: AttachPoint, primary: Any) -> None:
        self._point = point
        self._primary = primary

    def write(self, data: bytes) -> None:
        self._point.route(data)

    def close(self) -> None:
        self._primary.close()


class AttachPoint:
    """A daemon's offer of its folders to later windows (see the module)."""

    def __init__(
        self, ls: CitelineServer, where: Path | None = None, mcp_host: McpHost | None = None
    ) -> None:
        self.ls = ls
        self.mcp_host = mcp_host
        self.mcp_sessions = 0  # attached MCP clients now
        self.where = where or runtime_folder()
        self.socket_path = self.where / f"attach-{os.getpid()}.sock"
        self.token = secrets.token_urlsafe(32)
        self.clients: dict[int, Attached] = {}
        self.published: dict[str, Path] = {}  # folder key -> its record
        self._numbers = itertools.count(1)
        self._server: asyncio.AbstractServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._primary: Any = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        make_private_folder(self.where)
        for old_socket in self.where.glob("attach-*.sock"):  # of daemons that are gone
            pid = old_socket.stem.removeprefix("attach-")
            if old_socket == self.socket_path or (pid.isdigit() and not _alive(int(pid))):
                with contextlib.suppress(OSError):
                    old_socket.unlink()
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._connection, str(self.socket_path), limit=MAX_HEADER_BYTES
            )
        finally:
            os.umask(old)
        self._primary = self.ls.protocol.writer
        self.ls.protocol.set_writer(Router(self, self._primary))  # messages pass route()
        log.info("windows can attach to this server (%s)", self.socket_path)

    def publish(self, roots: Iterable[Path]) -> None:
        """Offer ``roots`` (the served folders); folders no longer served are withdrawn."""
        wanted = {folder_key(root): root for root in roots}
        for key in [k for k in self.published if k not in wanted]:
            self._withdraw(self.published.pop(key))
        for key, root in wanted.items():
            if key in self.published:
                continue
            path = record_path(root, self.where)
            record = {
                "pid": os.getpid(),
                "socket": str(self.socket_path),
                "token": self.token,
                "folder": str(root),
            }
            try:
                write_token(path, json.dumps(record))
            except OSError as exc:
                log.warning("cannot offer %s to other windows: %s", root, exc)
                continue
            self.published[key] = path

    def _withdraw(self, path: Path) -> None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text("utf-8")).get("pid") == os.getpid():
                path.unlink()  # a later daemon's record is left alone

    def stop(self) -> None:
        """Withdraw every record and the socket; attached windows are disconnected."""
        for path in self.published.values():
            self._withdraw(path)
        self.published.clear()
        if self._server is not None:
            self._server.close()
        for client in list(self.clients.values()):
            client.writer.close()
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    # -- what the protocol writes: to its own window, or to an attached one ----------

    def route(self, data: bytes) -> None:
        """Called for every message the protocol writes, on any thread."""
        if not self.clients:
            self._primary.write(data)
        elif self._loop is None or self._on_loop():
            self._dispatch(data)
        else:  # attached windows' streams are the loop's
            self._loop.call_soon_threadsafe(self._dispatch, data)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _dispatch(self, data: bytes) -> None:
        if not self._route(data):
            self._primary.write(data)

    def _route(self, data: bytes) -> bool:
        """Send ``data`` where it belongs; False when it is only the own window's."""
        _, _, body = data.partition(b"\r\n\r\n")
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict):
            return False
        msg_id = message.get("id")
        method = message.get("method")
        if method is None and isinstance(msg_id, str) and msg_id.startswith(ID_PREFIX):
            number, _, original = msg_id[len(ID_PREFIX) :].partition(":")
            client = self.clients.get(int(number)) if number.isdigit() else None
            if client is not None:
                client.tokens.pop(msg_id, None)
                message["id"] = json.loads(original)
                client.send(message)
            return True  # an answer to a window that left goes nowhere
        if method == "$/progress" and "id" not in message:
            token = (message.get("params") or {}).get("token")
            for client in self.clients.values():
                if any(token in tokens for tokens in client.tokens.values()):
                    client.send_raw(data)
                    return True
        if method in BROADCAST and "id" not in message:
            for client in self.clients.values():
                client.send_raw(data)
        return False

    # -- an attached window's connection ---------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parser = FrameParser(max_body=AUTH_MAX_BYTES)
        try:
            first = await asyncio.wait_for(first_frame(reader, parser), AUTH_TIMEOUT)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            first = None
        verdict = authenticate(first, self.token)
        capabilities = getattr(self.ls.protocol, "server_capabilities", None)
        if not isinstance(verdict, tuple) and capabilities is None:
            verdict = (verdict.get("id"), -32002, "this server's own client has not initialized")
        if not isinstance(verdict, tuple) and _protocol(verdict) == MCP and self.mcp_host is None:
            verdict = (verdict.get("id"), -32002, "this server does not serve MCP")
        if isinstance(verdict, tuple):
            msg_id, code, message = verdict
            log.warning("refused a window's attachment: %s", message)
            send_error(writer, msg_id, code, message)
            await close_connection(writer)
            return
        if _protocol(verdict) == MCP:
            await self._serve_mcp(verdict, reader, writer)
            return
        client = Attached(next(self._numbers), writer)
        protocol = self.ls.protocol
        result = json.loads(
            json.dumps(
                {"capabilities": capabilities, "serverInfo": protocol.server_info},
                default=protocol._serialize_message,
            )
        )
        client.send({"jsonrpc": "2.0", "id": verdict.get("id"), "result": result})
        self.clients[client.number] = client  # what the daemon sends now reaches it too
        log.info("a window attached (%d attached)", len(self.clients))
        parser.max_body = MAX_MESSAGE_BYTES
        try:
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
                frames = parser.feed(data)
                if any(not self._take(client, frame) for frame in frames):
                    break
                await writer.drain()
        except ConnectionError as exc:
            log.info("an attached window: %s", exc)
        finally:
            del self.clients[client.number]
            log.info("an attached window left (%d attached)", len(self.clients))
            await close_connection(writer)

    async def _serve_mcp(
        self,
        initialize: dict[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """An attached ``citeline mcp``: answer its handshake, then serve MCP on the
        connection with this daemon's service until it closes."""
        assert self.mcp_host is not None
        body = json.dumps({"jsonrpc": "2.0", "id": initialize.get("id"), "result": {}}).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.mcp_sessions += 1
        log.info("an MCP server attached (%d attached)", self.mcp_sessions)
        try:
            await self.mcp_host(self.ls.service, reader, writer)
        except (ConnectionError, OSError) as exc:
            log.info("an attached MCP server: %s", exc)
        except Exception as exc:  # one session's failure never ends the daemon
            log.error("an attached MCP session failed", exc_info=exc)
        finally:
            self.mcp_sessions -= 1
            log.info("an attached MCP server left (%d attached)", self.mcp_sessions)
            await close_connection(writer)

    def _take(self, client: Attached, frame: Frame) -> bool:
        """One message from an attached window; False when it has ended (``exit``)."""
        if not isinstance(frame, Body):
            return True  # the daemon's framing limits: dropped, as from its own window
        try:
            message = json.loads(frame.data)
        except (ValueError, RecursionError):
            deliver(self.ls.protocol, frame.data)  # answered as a bad message would be
            return True
        if not isinstance(message, dict):
            return True
        method = message.get("method")
        msg_id = message.get("id")
        if method == "exit":
            return False
        if method is None or method in NOT_TAKEN:
            return True  # a response to the daemon (it asks attached windows nothing)
        if method == "shutdown":
            client.send({"jsonrpc": "2.0", "id": msg_id, "result": None})
            return True
        params = message.get("params")
        if method == "$/cancelRequest" and isinstance(params, dict) and "id" in params:
            params["id"] = self._own_id(client, params["id"])
        if "id" in message:
            message["id"] = own = self._own_id(client, msg_id)
            if isinstance(params, dict):
                tokens = [params[k] for k in ("workDoneToken", "partialResultToken") if k in params]
                if tokens:
                    client.tokens[own] = tokens
        deliver(self.ls.protocol, message)
        return True

    @staticmethod
    def _own_id(client: Attached, msg_id: Any) -> str:
        return f"{ID_PREFIX}{client.number}:{json.dumps(msg_id)}"


# -- the attaching window's side ---------------------------------------------------------


def read_initialize(stdin: IO[bytes]) -> tuple[bytes, dict[str, Any] | None]:
    """The bytes read from the editor up to its first message, and that message
    when it is an ``initialize`` (else None)."""
    fd = stdin.fileno()
    parser = FrameParser()
    consumed = bytearray()
    while True:
        data = os.read(fd, READ_CHUNK)
        if not data:
            return bytes(consumed), None
        consumed += data
        frames = parser.feed(data)
        if frames:
            break
    first = frames[0]
    if len(frames) > 1 or not isinstance(first, Body):
        return bytes(consumed), None
    try:
        message = json.loads(first.data)
    except (ValueError, RecursionError):
        return bytes(consumed), None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return bytes(consumed), None
    return bytes(consumed), message


def window_folders(initialize: dict[str, Any], docs: Iterable[Path]) -> list[Path]:
    """The folders the window would serve: those named (``--docs``), else the
    workspace folders (or the root) that hold a marker."""
    named = [Path(d).absolute() for d in docs]
    if named:
        return named
    params = initialize.get("params")
    if not isinstance(params, dict):
        return []
    roots: list[Path] = []
    for folder in params.get("workspaceFolders") or []:
        if isinstance(folder, dict) and isinstance(folder.get("uri"), str):
            path = uri_to_path(folder["uri"])
            if path is not None:
                roots.append(path)
    if not roots and isinstance(params.get("rootUri"), str):
        path = uri_to_path(params["rootUri"])
        if path is not None:
            roots.append(path)
    return [root for root in roots if marked(root)]


def find_daemon(folders: list[Path], where: Path | None = None) -> dict[str, Any] | None:
    """The record of the one live daemon serving every folder in ``folders``, or None."""
    if not folders:
        return None
    records = []
    for folder in folders:
        try:
            record = json.loads(record_path(folder, where).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or not isinstance(record.get("pid"), int):
            return None
        records.append(record)
    first = records[0]
    if any(r.get("socket") != first.get("socket") for r in records) or not _alive(first["pid"]):
        return None
    return first


def proxy(
    initialize: dict[str, Any],
    record: dict[str, Any],
    stdin: IO[bytes],
    stdout: IO[bytes],
) -> int | None:
    """Attach this window to the daemon in ``record``: copy its messages both ways
    until one side ends.  None when the daemon refuses (the window is then served
    here); else the exit status."""
    attached = _handshake(initialize, record)
    if attached is None:
        return None
    sock, received = attached
    stdout.write(received)  # the answer to the editor's initialize
    stdout.flush()
    return _copy(sock, stdin, stdout, record, ends_with_exit=True)


def proxy_mcp(record: dict[str, Any], stdin: IO[bytes], stdout: IO[bytes]) -> int | None:
    """``citeline mcp --attach``: attach to the daemon in ``record`` and copy the MCP
    client's bytes both ways until one side ends.  None when the daemon refuses (the
    MCP server is then served here); else the exit status."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"processId": os.getpid(), "initializationOptions": {"protocol": MCP}},
    }
    attached = _handshake(initialize, record)
    if attached is None:
        return None
    sock, received = attached
    _, _, rest = received.partition(b"\r\n\r\n")  # the handshake's answer is not MCP's
    end = int(_CONTENT_LENGTH.search(received).group(1))  # type: ignore[union-attr]
    if rest[end:]:
        stdout.write(rest[end:])
        stdout.flush()
    return _copy(sock, stdin, stdout, record, ends_with_exit=False, who="MCP server")


def _handshake(
    initialize: dict[str, Any], record: dict[str, Any]
) -> tuple[socket.socket, bytes] | None:
    """Connect to the daemon in ``record`` and send ``initialize`` with its token: the
    connection and every byte of its answer, or None when it refuses."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(AUTH_TIMEOUT * 5)
        sock.connect(str(record["socket"]))
    except OSError as exc:
        log.info("cannot attach to pid %s: %s", record.get("pid"), exc)
        return None
    params = initialize.setdefault("params", {})
    options = params.get("initializationOptions")
    params["initializationOptions"] = {
        **(options if isinstance(options, dict) else {}),
        "token": record["token"],
    }
    body = json.dumps(initialize).encode()
    try:
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        answer, received = _first_answer(sock)
    except OSError as exc:
        log.info("cannot attach to pid %s: %s", record.get("pid"), exc)
        sock.close()
        return None
    if answer is None or "result" not in answer:
        why = (answer or {}).get("error", {}).get("message", "no answer")
        log.info("the server with pid %s refused to attach this window: %s", record["pid"], why)
        sock.close()
        return None
    sock.settimeout(None)
    log.info("attached to the server with pid %s (%s)", record["pid"], record["folder"])
    return sock, received


def _copy(
    sock: socket.socket,
    stdin: IO[bytes],
    stdout: IO[bytes],
    record: dict[str, Any],
    *,
    ends_with_exit: bool,
    who: str = "window",
) -> int:
    """Copy stdin to the daemon and the daemon to stdout until one side ends: 0 when
    the client ended it (closed stdin, or with ``ends_with_exit`` sent LSP's
    ``exit``), 1 when the daemon did (said in one line)."""
    ended = threading.Event()  # the client sent exit or closed stdin

    def client_to_daemon() -> None:
        parser = FrameParser()
        try:
            while True:
                data = os.read(stdin.fileno(), READ_CHUNK)
                if not data:
                    break
                sock.sendall(data)
                if (
                    ends_with_exit
                    and b'"exit"' in data
                    and any(_is_exit(f) for f in parser.feed(data))
                ):
                    break
        except OSError:
            pass
        ended.set()
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=client_to_daemon, name="citeline-attached", daemon=True).start()
    try:
        while True:
            data = sock.recv(READ_CHUNK)
            if not data:
                break
            stdout.write(data)
            stdout.flush()
    except OSError:
        pass
    finally:
        sock.close()
    if ended.wait(0.5):
        return 0
    log.error(
        "the Citeline server this %s attached to (pid %s, %s) has ended; this one ends"
        " too (started again, it serves the folder itself)",
        who,
        record["pid"],
        record["folder"],
    )
    return 1


def _first_answer(sock: socket.socket) -> tuple[dict[str, Any] | None, bytes]:
    """The daemon's answer to initialize (its first message), and every byte read (that
    answer's included: they are the editor's)."""
    buffer = bytearray()
    while len(buffer) <= MAX_HEADER_BYTES + AUTH_MAX_BYTES:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            match = _CONTENT_LENGTH.search(bytes(buffer[:end]))
            if match is None:
                return None, b""
            start = end + 4
            stop = start + int(match.group(1))
            if len(buffer) >= stop:
                with contextlib.suppress(ValueError):
                    answer = json.loads(buffer[start:stop])
                    if isinstance(answer, dict):
                        return answer, bytes(buffer)
                return None, b""
        data = sock.recv(READ_CHUNK)
        if not data:
            return None, b""
        buffer += data
    return None, b""


def _protocol(initialize: dict[str, Any]) -> Any:
    """What an attaching ``initialize`` says it speaks after the handshake (None: LSP)."""
    params = initialize.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    return options.get("protocol") if isinstance(options, dict) else None


def _is_exit(frame: Frame) -> bool:
    if not isinstance(frame, Body):
        return False
    with contextlib.suppress(ValueError, RecursionError):
        message = json.loads(frame.data)
        return isinstance(message, dict) and message.get("method") == "exit"
    return False
