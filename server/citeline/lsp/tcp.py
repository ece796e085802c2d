"""``citeline serve --tcp``: one authenticated client at a time.

TCP (``--tcp [HOST:]PORT``): a random token is made for each run and written to a
file only the user can read (mode 0600, in ``$XDG_RUNTIME_DIR/citeline/`` or the
cache folder's ``run/``; ``--token-file`` chooses); the log (stderr) says where,
never what.  A client's first message must be ``initialize`` with the token in
``initializationOptions.token`` (or ``initializationOptions.citeline.token``),
within 2 seconds; otherwise it gets error :data:`UNAUTHORIZED` and is
disconnected, and nothing else is served to it.  At most 32 connections wait to
authenticate; a newer one closes the oldest waiting, so idle connections cannot
starve the token holder.  One client is served at a time:
another that authenticates meanwhile gets :data:`BUSY` and is disconnected, the
first is not disturbed.  When a client disconnects the server keeps its folders
and models and keeps listening; ``exit`` (after ``shutdown``) or SIGTERM ends it,
closing every index cleanly and removing the token file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.lsp.framing import (
    MAX_HEADER_BYTES,
    MAX_MESSAGE_BYTES,
    Body,
    Frame,
    FrameParser,
    deliver,
    handle_frame,
    valid_id,
)
from citeline.lsp.transport import READ_CHUNK, Exit, NullWriter, StreamWriter, stop_on_sigterm

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

AUTH_MAX_BYTES = 256 * 1024  # an initialize message, before the client is known
# A client sends initialize as soon as it connects: a connection that has not within
# this long is closed.  At most MAX_UNAUTHENTICATED wait at once; a new one beyond
# that closes the oldest waiting, so connections that sit idle (and reconnect when
# dropped) can never keep the token holder out: its initialize arrives long before
# as many new connections.
AUTH_TIMEOUT = 2.0
MAX_UNAUTHENTICATED = 32

UNAUTHORIZED = -32010  # JSON-RPC's range for implementation-defined server errors
BUSY = -32011
DEFAULT_HOST = "127.0.0.1"


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


def token_folder(cache_dir: Path) -> Path:
    """Where token files go: ``$XDG_RUNTIME_DIR/citeline`` (a per-user tmpfs) when set,
    else ``<cache>/run``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "citeline"
    return cache_dir / "run"


def make_private_folder(folder: Path) -> None:
    """Make ``folder`` (and its parents) if needed: it must be the user's, mode 0700."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise OSError(f"{folder} belongs to another user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        folder.chmod(0o700)


def write_token(path: Path, token: str, *, private_folder: bool = True) -> None:
    """Write ``token`` to ``path``, readable by the user only (mode 0600, never through a
    symlink).  With ``private_folder`` (the default place), the folder is the user's
    and 0700 too; a folder the user named (``--token-file``) is left as it is."""
    folder = path.parent
    if private_folder:
        make_private_folder(folder)
    else:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a token file left by an earlier run (or anything else there)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token + "\n")


def token_from(params: Any) -> str | None:
    """The token an ``initialize`` carries in its initializationOptions, if any."""
    if not isinstance(params, dict):
        return None
    options = params.get("initializationOptions")
    if not isinstance(options, dict):
        return None
    for where in (options, options.get("citeline")):
        if isinstance(where, dict) and isinstance(where.get("token"), str):
            return str(where["token"])
    return None


def _strip_token(params: dict[str, Any]) -> None:
    options = params.get("initializationOptions")
    if isinstance(options, dict):
        options.pop("token", None)
        inner = options.get("citeline")
        if isinstance(inner, dict):
            inner.pop("token", None)


def authenticate(first: Frame | None, token: str) -> dict[str, Any] | tuple[Any, int, str]:
    """A connection's first frame checked against ``token``: the initialize message
    (token removed), or (id, code, why it is refused)."""
    if not isinstance(first, Body):
        return None, UNAUTHORIZED, "the first message must be initialize with the token"
    try:
        data = json.loads(first.data)
    except (ValueError, RecursionError):
        return None, UNAUTHORIZED, "the first message must be initialize with the token"
    msg_id = data.get("id") if isinstance(data, dict) and valid_id(data.get("id")) else None
    if not isinstance(data, dict) or data.get("method") != "initialize":
        return msg_id, UNAUTHORIZED, "the first message must be initialize with the token"
    given = token_from(data.get("params"))
    if given is None:
        return msg_id, UNAUTHORIZED, "initialize carries no token (initializationOptions.token)"
    if not hmac.compare_digest(given.encode("utf-8", "replace"), token.encode()):
        return msg_id, UNAUTHORIZED, "wrong token"
    _strip_token(data["params"])
    return data


class TcpServer:
    """Serves one authenticated client at a time on a TCP socket (see the module)."""

    def __init__(
        self,
        ls: CitelineServer,
        host: str,
        port: int,
        token_file: Path,
        *,
        private_folder: bool = True,
    ) -> None:
        self.ls = ls
        self.host = host
        self.port = port
        self.token_file = token_file
        self.private_folder = private_folder
        self.token = secrets.token_urlsafe(32)
        self.active: asyncio.StreamWriter | None = None
        self.waiting: dict[asyncio.StreamWriter, None] = {}  # unauthenticated, oldest first
        self.dropped = 0  # connections closed to make room for newer ones
        self.exit = Exit()

    def run(self) -> int:
        return asyncio.run(self._main())

    async def _main(self) -> int:
        self.ls.exit_requested = self.exit.request
        self.ls.protocol.set_writer(NullWriter())
        stop_on_sigterm(self.exit)
        server = await asyncio.start_server(
            self._connection, self.host, self.port, limit=MAX_HEADER_BYTES
        )
        port = server.sockets[0].getsockname()[1]
        token_file = Path(str(self.token_file).replace("{port}", str(port)))
        write_token(token_file, self.token, private_folder=self.private_folder)
        addresses = ", ".join(str(s.getsockname()) for s in server.sockets)
        log.info("Serving on %s; clients authenticate with the token in %s", addresses, token_file)
        try:
            async with server:
                await self.exit.event.wait()
        finally:
            with contextlib.suppress(OSError):
                token_file.unlink()
            if self.active is not None:
                self.active.close()
        return self.exit.code or 0

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection, to its end; one the server's end cancels ends quietly (a
        cancelled connection task would have asyncio log a traceback for it)."""
        try:
            await self._serve_connection(reader, writer)
        except asyncio.CancelledError:
            writer.transport.abort()

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        if len(self.waiting) >= MAX_UNAUTHENTICATED:
            oldest = next(iter(self.waiting))
            del self.waiting[oldest]
            oldest.transport.abort()  # its read ends at once; it is refused as unauthorized
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "%d connection(s) waiting to authenticate closed to make room (%d may wait)",
                    self.dropped,
                    MAX_UNAUTHENTICATED,
                )
        self.waiting[writer] = None
        parser = FrameParser(max_body=AUTH_MAX_BYTES)
        try:
            first = await asyncio.wait_for(first_frame(reader, parser), AUTH_TIMEOUT)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            first = None
        finally:
            self.waiting.pop(writer, None)
        verdict = authenticate(first, self.token)
        if isinstance(verdict, tuple):
            msg_id, code, message = verdict
            log.warning("refused a connection from %s: %s", peer, message)
            send_error(writer, msg_id, code, message)
            await close_connection(writer)
            return
        if self.active is not None:
            message = "Citeline is serving another client on this port (one client at a time)"
            log.warning("refused a second client from %s: another client is connected", peer)
            send_error(writer, verdict.get("id"), BUSY, message)
            await close_connection(writer)
            return
        await self._session(reader, writer, parser, verdict, peer)

    async def _session(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        parser: FrameParser,
        initialize: dict[str, Any],
        peer: Any,
    ) -> None:
        protocol = self.ls.protocol
        self.active = writer
        protocol.new_session()
        protocol.set_writer(StreamWriter(writer))
        log.info("client %s connected", peer)
        parser.max_body = MAX_MESSAGE_BYTES
        try:
            deliver(protocol, initialize)
            while not self.exit.event.is_set():
                data = await reader.read(READ_CHUNK)
                if not data:
                    break
                for frame in parser.feed(data):
                    handle_frame(protocol, frame)
                await writer.drain()  # a client that does not read slows us, never bloats us
        except ConnectionError as exc:
            log.info("client %s: %s", peer, exc)
        finally:
            self.active = None
            protocol.set_writer(NullWriter())
            protocol.new_session()
            self.ls.client_gone()
            log.info("client %s disconnected; still listening", peer)
            await close_connection(writer)


async def first_frame(reader: asyncio.StreamReader, parser: FrameParser) -> Frame | None:
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            return None
        frames = parser.feed(data)
        if frames:
            return frames[0]


def send_error(writer: asyncio.StreamWriter, msg_id: Any, code: int, message: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    ).encode()
    with contextlib.suppress(ConnectionError, RuntimeError):
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def close_connection(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError, OSError):
        await asyncio.wait_for(writer.drain(), 5)
    writer.close()
    with contextlib.suppress(ConnectionError, RuntimeError, OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 5)
