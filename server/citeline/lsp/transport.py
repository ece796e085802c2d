"""How ``citeline serve`` reads and writes JSON-RPC: framing with limits, stdio, TCP.

Framing (both transports) is LSP's base protocol, read by :class:`FrameParser` with
limits: a header section of at most 8 KB, a message body of at most
:data:`MAX_MESSAGE_BYTES`.  A larger message is skipped (its bytes read and
dropped, never kept) and answered with InvalidRequest (-32600) when its id can be
read from its first bytes; bytes that are not a header are skipped up to the next
one.  A body is then checked before the protocol sees it (:func:`deliver`): JSON
(else ParseError -32700, id null), at most :data:`MAX_DEPTH` levels deep, one
message object (not a batch) with a well-formed ``jsonrpc``, ``id`` and ``method``
(else -32600).  Each bad input is one log line.

stdio (the default): one client, the editor that started the server; its stdin is
read on a thread of its own, so the event loop never waits on it.  The server ends
when the client sends ``exit`` or closes stdin.

TCP (``--tcp [HOST:]PORT``): a random token is made for each run and written to a
file only the user can read (mode 0600, in ``$XDG_RUNTIME_DIR/citeline/`` or the
cache folder's ``run/``; ``--token-file`` chooses); the log (stderr) says where,
never what.  A client's first message must be ``initialize`` with the token in
``initializationOptions.token`` (or ``initializationOptions.citeline.token``),
within 10 seconds; otherwise it gets error :data:`UNAUTHORIZED` and is
disconnected, and nothing else is served to it.  One client is served at a time:
another that authenticates meanwhile gets :data:`BUSY` and is disconnected, the
first is not disturbed.  When a client disconnects the server keeps its folders
and models and keeps listening; ``exit`` (after ``shutdown``) ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidRequest, JsonRpcParseError

from citeline.lsp.protocol import CitelineProtocol, short

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
MAX_DEPTH = 64
MAX_METHOD_CHARS = 256
AUTH_MAX_BYTES = 256 * 1024  # an initialize message, before the client is known
AUTH_TIMEOUT = 10.0
MAX_UNAUTHENTICATED = 8  # connections waiting to authenticate at once
READ_CHUNK = 64 * 1024
BACKLOG_FRAMES = 64  # frames read ahead of the event loop (stdio)

UNAUTHORIZED = -32010  # JSON-RPC's range for implementation-defined server errors
BUSY = -32011

_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,15})[ \t]*", re.IGNORECASE)
_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')
_KEYS = ("jsonrpc", "id", "method", "params", "result", "error")
DEFAULT_HOST = "127.0.0.1"


# -- framing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    data: bytes


@dataclass(frozen=True)
class Skipped:
    """Bytes dropped: why, and the first bytes of a skipped message (for its id)."""

    reason: str
    head: bytes = b""


Frame = Body | Skipped


class FrameParser:
    """LSP's base protocol, fed bytes as they come; memory stays within the limits."""

    def __init__(
        self, max_body: int = MAX_MESSAGE_BYTES, max_header: int = MAX_HEADER_BYTES
    ) -> None:
        self.max_body = max_body
        self.max_header = max_header
        self._buffer = bytearray()
        self._length: int | None = None
        self._header_bytes = 0
        self._headers_seen = False
        self._in_junk = False
        self._discard_line = False
        self._body: bytearray | None = None
        self._skip_left = 0
        self._skip_head = bytearray()
        self._skip_size = 0

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        out: list[Frame] = []
        while self._buffer:
            if self._body is not None:
                if not self._take_body(out):
                    break
            elif self._skip_left:
                self._skip(out)
            elif not self._header_line(out):
                break
        return out

    def _take_body(self, out: list[Frame]) -> bool:
        assert self._body is not None and self._length is not None
        need = self._length - len(self._body)
        self._body += self._buffer[:need]
        del self._buffer[:need]
        if len(self._body) < self._length:
            return False
        out.append(Body(bytes(self._body)))
        self._body = None
        self._length = None
        return True

    def _skip(self, out: list[Frame]) -> None:
        take = min(self._skip_left, len(self._buffer))
        if len(self._skip_head) < 1024:
            self._skip_head += self._buffer[: min(take, 1024 - len(self._skip_head))]
        del self._buffer[:take]
        self._skip_left -= take
        if not self._skip_left:
            reason = f"a message of {self._skip_size} bytes is over the {self.max_body} bytes limit"
            out.append(Skipped(reason, bytes(self._skip_head)))
            self._skip_head = bytearray()

    def _header_line(self, out: list[Frame]) -> bool:
        end = self._buffer.find(b"\n")
        if end == -1:
            if len(self._buffer) > self.max_header:  # a line with no end: drop it
                self._junk(out, "a header line too long")
                self._buffer.clear()
                self._discard_line = True
            return False
        line = bytes(self._buffer[:end]).rstrip(b"\r")
        del self._buffer[: end + 1]
        if self._discard_line:  # the end of a line already dropped
            self._discard_line = False
            return True
        self._header_bytes += end + 1
        if self._header_bytes > self.max_header:
            self._junk(out, "a header section too long")
            self._reset_headers()
            return True
        if not line:
            if self._length == 0:
                out.append(Body(b""))
            elif self._length is not None:
                self._start_body(self._length)
            elif self._headers_seen:
                self._junk(out, "a message without Content-Length")
            self._reset_headers()
            return True
        match = _CONTENT_LENGTH.fullmatch(line)
        if match:
            self._length = int(match.group(1))
            self._headers_seen = True
            self._in_junk = False
        elif _HEADER.match(line):
            self._headers_seen = True
        else:
            self._junk(out, "bytes that are not a message header")
        return True

    def _start_body(self, length: int) -> None:
        self._in_junk = False
        if length > self.max_body:
            self._skip_left = self._skip_size = length
            self._length = None
        else:
            self._body = bytearray()
            self._length = length

    def _reset_headers(self) -> None:
        if self._body is None:
            self._length = None
        self._header_bytes = 0
        self._headers_seen = False

    def _junk(self, out: list[Frame], reason: str) -> None:
        if not self._in_junk:  # one report per run of junk
            out.append(Skipped(reason))
        self._in_junk = True


# -- delivering a body to the protocol --------------------------------------------------


def deliver(protocol: CitelineProtocol, message: bytes | dict[str, Any]) -> None:
    """Check one message (a body, or one already parsed) and hand it to the protocol."""
    if isinstance(message, bytes):
        try:
            data: Any = json.loads(message)
        except RecursionError:
            refuse(protocol, _sniff_id(message), "the message is nested too deeply")
            return
        except (ValueError, UnicodeDecodeError) as exc:
            log.warning("a message that is not JSON: %s", short(exc))
            error = JsonRpcParseError(message="parse error: the message is not JSON")
            protocol._send_response(None, error=error.to_response_error())
            return
    else:
        data = message
    problem, msg_id = _check(data)
    if problem is not None:
        refuse(protocol, msg_id, problem)
        return
    try:
        protocol.handle_message(protocol.structure_message(data))
    except Exception as exc:  # a bug; the server goes on
        log.error("handling a %s message failed", short(data.get("method")), exc_info=exc)


def refuse(protocol: CitelineProtocol, msg_id: Any, reason: str) -> None:
    """Answer an unusable message with InvalidRequest (id null when it has none)."""
    log.warning("invalid message: %s", reason)
    error = JsonRpcInvalidRequest(message=f"invalid request: {reason}")
    protocol._send_response(msg_id, error=error.to_response_error())  # id null: JSON-RPC's rule


def _check(data: Any) -> tuple[str | None, Any]:
    """(what is wrong with a parsed message or None, the id to answer with)."""
    if isinstance(data, list):
        return "batches are not supported", None
    if not isinstance(data, dict):
        return "a message must be a JSON object", None
    msg_id = data.get("id")
    if "id" in data and not _valid_id(msg_id):
        return "'id' must be a string or an integer", None
    if _too_deep(data, MAX_DEPTH):
        return f"the message is nested more than {MAX_DEPTH} levels deep", msg_id
    if data.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\"", msg_id
    method = data.get("method")
    if "method" in data and (not isinstance(method, str) or not method):
        return "'method' must be a non-empty string", msg_id
    if isinstance(method, str) and len(method) > MAX_METHOD_CHARS:
        return f"'method' is longer than {MAX_METHOD_CHARS} characters", msg_id
    if "method" not in data and ("id" not in data or not ({"result", "error"} & data.keys())):
        return "neither a request, a notification nor a response", msg_id
    for key in [k for k in data if k not in _KEYS]:
        del data[key]  # members JSON-RPC does not define are ignored
    return None, msg_id


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**53) <= value <= 2**53
    return value is None or (isinstance(value, str) and len(value) <= 256)


def _too_deep(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _sniff_id(head: bytes) -> Any:
    """The id of a message from its first bytes, when it can be read; else None."""
    match = _ID.search(head[:1024])
    if match is None:
        return None
    with contextlib.suppress(ValueError):
        value = json.loads(match.group(1))
        if _valid_id(value):
            return value
    return None


def handle_frame(protocol: CitelineProtocol, frame: Frame) -> None:
    if isinstance(frame, Body):
        if frame.data.strip():
            deliver(protocol, frame.data)
        else:
            log.warning("an empty message was ignored")
        return
    msg_id = _sniff_id(frame.head)
    if frame.head and msg_id is not None:
        refuse(protocol, msg_id, frame.reason)
    else:
        log.warning("skipped %s", frame.reason)


# -- writers ---------------------------------------------------------------------------


class NullWriter:
    """Where messages go while no client is connected (TCP): nowhere."""

    def write(self, data: bytes) -> None:
        return None

    def close(self) -> None:
        return None


class StreamWriter:
    """A TCP client's stream; writing to a client that went away is not an error."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    def close(self) -> None:
        self._writer.close()


class PipeWriter:
    """stdout: every message written whole and flushed."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._stream.close()


# -- stdio -----------------------------------------------------------------------------


class Exit:
    """An exit code and an event to wait for it on the loop."""

    def __init__(self) -> None:
        self.code: int | None = None
        self.event = asyncio.Event()

    def request(self, code: int) -> None:
        if self.code is None:
            self.code = code
        self.event.set()


def serve_stdio(ls: CitelineServer, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Serve one client over stdin/stdout; the exit status (0 after shutdown and exit)."""
    return asyncio.run(_stdio(ls, stdin, stdout))


async def _stdio(ls: CitelineServer, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    loop = asyncio.get_running_loop()
    exit_ = Exit()
    ls.exit_requested = exit_.request
    frames: asyncio.Queue[Frame | None] = asyncio.Queue()
    room = threading.Semaphore(BACKLOG_FRAMES)
    ls.protocol.set_writer(PipeWriter(stdout))

    def read() -> None:  # its own thread: a blocking read never stalls the loop
        parser = FrameParser()
        read1: Callable[[int], bytes] = getattr(stdin, "read1", stdin.read)
        with contextlib.suppress(AttributeError, OSError, ValueError):
            fd = stdin.fileno()  # unbuffered: a daemon thread blocked in a buffered
            read1 = partial(os.read, fd)  # read would abort the interpreter at exit
        try:
            while True:
                data = read1(READ_CHUNK)
                if not data:
                    break
                for frame in parser.feed(data):
                    room.acquire()
                    loop.call_soon_threadsafe(frames.put_nowait, frame)
        except (OSError, ValueError) as exc:
            log.info("stdin: %s", exc)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone
                loop.call_soon_threadsafe(frames.put_nowait, None)

    threading.Thread(target=read, name="citeline-stdin", daemon=True).start()
    waiting_exit = asyncio.ensure_future(exit_.event.wait())
    try:
        while True:
            getting = asyncio.ensure_future(frames.get())
            await asyncio.wait({getting, waiting_exit}, return_when=asyncio.FIRST_COMPLETED)
            if not getting.done():
                getting.cancel()
                break
            frame = getting.result()
            if frame is None:
                log.info("the client closed the connection")
                break
            room.release()
            handle_frame(ls.protocol, frame)
            if exit_.event.is_set():
                break
    except BrokenPipeError:
        log.error("the client is gone (stdout closed)")
    finally:
        waiting_exit.cancel()
    if exit_.code is not None:
        return exit_.code
    return 0 if ls.protocol._shutdown else 1


# -- TCP -------------------------------------------------------------------------------


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


def write_token(path: Path, token: str, *, private_folder: bool = True) -> None:
    """Write ``token`` to ``path``, readable by the user only (mode 0600, never through a
    symlink).  With ``private_folder`` (the default place), the folder is the user's
    and 0700 too; a folder the user named (``--token-file``) is left as it is."""
    folder = path.parent
    if private_folder:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid != os.getuid():
            raise OSError(f"{folder} belongs to another user")
        if stat.S_IMODE(info.st_mode) & 0o077:
            folder.chmod(0o700)
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
        self.unauthenticated = 0
        self.exit = Exit()

    def run(self) -> int:
        return asyncio.run(self._main())

    async def _main(self) -> int:
        self.ls.exit_requested = self.exit.request
        self.ls.protocol.set_writer(NullWriter())
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
        peer = writer.get_extra_info("peername")
        if self.unauthenticated >= MAX_UNAUTHENTICATED:
            log.warning("refused a connection from %s: too many waiting to authenticate", peer)
            writer.close()
            return
        self.unauthenticated += 1
        parser = FrameParser(max_body=AUTH_MAX_BYTES)
        try:
            first = await asyncio.wait_for(_first_frame(reader, parser), AUTH_TIMEOUT)
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            first = None
        finally:
            self.unauthenticated -= 1
        verdict = self._authenticate(first)
        if isinstance(verdict, tuple):
            msg_id, code, message = verdict
            log.warning("refused a connection from %s: %s", peer, message)
            _send_error(writer, msg_id, code, message)
            await _close(writer)
            return
        if self.active is not None:
            message = "Citeline is serving another client on this port (one client at a time)"
            log.warning("refused a second client from %s: another client is connected", peer)
            _send_error(writer, verdict.get("id"), BUSY, message)
            await _close(writer)
            return
        await self._session(reader, writer, parser, verdict, peer)

    def _authenticate(self, first: Frame | None) -> dict[str, Any] | tuple[Any, int, str]:
        """The initialize message (token removed), or (id, code, why it is refused)."""
        if not isinstance(first, Body):
            return None, UNAUTHORIZED, "the first message must be initialize with the token"
        try:
            data = json.loads(first.data)
        except (ValueError, RecursionError):
            return None, UNAUTHORIZED, "the first message must be initialize with the token"
        msg_id = data.get("id") if isinstance(data, dict) and _valid_id(data.get("id")) else None
        if not isinstance(data, dict) or data.get("method") != "initialize":
            return msg_id, UNAUTHORIZED, "the first message must be initialize with the token"
        given = token_from(data.get("params"))
        if given is None:
            return msg_id, UNAUTHORIZED, "initialize carries no token (initializationOptions.token)"
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
            return msg_id, UNAUTHORIZED, "wrong token"
        _strip_token(data["params"])
        return data

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
            await _close(writer)


async def _first_frame(reader: asyncio.StreamReader, parser: FrameParser) -> Frame | None:
    while True:
        data = await reader.read(READ_CHUNK)
        if not data:
            return None
        frames = parser.feed(data)
        if frames:
            return frames[0]


def _send_error(writer: asyncio.StreamWriter, msg_id: Any, code: int, message: str) -> None:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    ).encode()
    with contextlib.suppress(ConnectionError, RuntimeError):
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, RuntimeError, OSError):
        await asyncio.wait_for(writer.drain(), 5)
    writer.close()
    with contextlib.suppress(ConnectionError, RuntimeError, OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 5)
