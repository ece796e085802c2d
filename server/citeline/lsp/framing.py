"""LSP's base protocol read with limits, and each message checked before the protocol.

:class:`FrameParser` reads the framing (both transports): a header section of at
most 8 KB, a message body of at most :data:`MAX_MESSAGE_BYTES`.  A larger message
is skipped (its bytes read and dropped, never kept) and answered with
InvalidRequest (-32600) when its id can be read from its first bytes; bytes that
are not a header are skipped up to the next one.  A body is then checked before
the protocol sees it (:func:`deliver`): JSON (else ParseError -32700, id null), at
most :data:`MAX_DEPTH` levels deep, one message object (not a batch) with a
well-formed ``jsonrpc``, ``id`` and ``method`` (else -32600).  Each bad input is
one log line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidRequest, JsonRpcParseError

from citeline.lsp.protocol import CitelineProtocol, short

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
MAX_DEPTH = 64
MAX_METHOD_CHARS = 256

_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,15})[ \t]*", re.IGNORECASE)
_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')
_KEYS = ("jsonrpc", "id", "method", "params", "result", "error")


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
    if "id" in data and not valid_id(msg_id):
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


def valid_id(value: Any) -> bool:
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
        if valid_id(value):
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
