"""Framing with limits and the checks before the protocol: every unusable message gets
the documented error, nothing over the limits is kept."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from citeline.app import ModelPool
from citeline.lsp.framing import Body, FrameParser, Skipped, deliver, handle_frame
from citeline.lsp.server import CitelineServer, build_server
from recording import JsonCapture
from wire import frame

INITIALIZE: dict[str, Any] = {"processId": None, "rootUri": None, "capabilities": {}}


# -- framing -------------------------------------------------------------------------


def test_frames_are_read_whole_or_split_anywhere() -> None:
    stream = frame({"a": 1}) + b"Content-Type: x\r\n" + frame({"b": "é"})
    assert FrameParser().feed(stream) == [Body(b'{"a": 1}'), Body(b'{"b": "\\u00e9"}')]
    parser = FrameParser()
    frames = [f for i in range(len(stream)) for f in parser.feed(stream[i : i + 1])]
    assert frames == [Body(b'{"a": 1}'), Body(b'{"b": "\\u00e9"}')]


def test_an_oversized_message_is_skipped_unkept_with_its_id() -> None:
    parser = FrameParser(max_body=100)
    big = frame({"jsonrpc": "2.0", "id": 9, "method": "x", "params": "y" * 1000})
    frames = parser.feed(big + frame({"ok": 1}))
    assert isinstance(frames[0], Skipped) and b'"id": 9' in frames[0].head
    assert frames[1] == Body(b'{"ok": 1}')
    assert len(parser._buffer) == 0


def test_junk_is_skipped_up_to_the_next_header_once() -> None:
    parser = FrameParser(max_header=64)
    frames = parser.feed(b"garbage\r\nmore garbage\r\n" + b"x" * 200 + b"\r\n" + frame([1]))
    assert [type(f) for f in frames].count(Skipped) <= 2
    assert frames[-1] == Body(b"[1]")


# -- checks before the protocol ---------------------------------------------------------


@pytest.fixture()
def served() -> Iterator[tuple[CitelineServer, JsonCapture]]:
    ls = build_server(backends=ModelPool())
    capture = JsonCapture()
    ls.protocol.set_writer(capture)
    yield ls, capture
    ls.service.stop(5)


@pytest.mark.parametrize(
    ("body", "code", "msg_id"),
    [
        (b"{not json", -32700, None),
        (b"[]", -32600, None),
        (b"[{}]", -32600, None),
        (b"42", -32600, None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "x"}', -32600, None),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "x"}', -32600, 3),
        (b'{"jsonrpc": "2.0", "id": 4, "method": 5}', -32600, 4),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "' + b"m" * 300 + b'"}', -32600, 5),
        (b'{"jsonrpc": "2.0", "id": 6, "params": ' + b"[" * 100 + b"]" * 100 + b"}", -32600, 6),
        (b'{"jsonrpc": "2.0", "id": 7, "p": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", -32600, 7),
        (b'{"jsonrpc": "2.0", "id": 8, "method": "citeline/status"}', -32002, 8),
    ],
)
def test_unusable_messages_get_the_documented_error(
    served: tuple[CitelineServer, JsonCapture], body: bytes, code: int, msg_id: Any
) -> None:
    ls, capture = served
    handle_frame(ls.protocol, Body(body))
    (response,) = capture.sent
    assert response["id"] == msg_id
    assert response["error"]["code"] == code


def test_after_initialize_params_are_checked_and_a_second_initialize_refused(
    served: tuple[CitelineServer, JsonCapture],
) -> None:
    ls, capture = served
    deliver(ls.protocol, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    deliver(ls.protocol, {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": INITIALIZE})
    deliver(ls.protocol, {"jsonrpc": "2.0", "id": 3, "method": "nope/nope", "params": {}})
    by_id = {m["id"]: m for m in capture.sent if "id" in m}
    assert "capabilities" in by_id[1]["result"]
    assert by_id[2]["error"]["code"] == -32600
    assert by_id[3]["error"]["code"] == -32601


def test_a_message_from_the_client_is_parsed_once() -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}'
    assert FrameParser().feed(frame(body)) == [Body(body)]


async def test_invalid_params_of_citeline_requests_are_invalid_params(
    served: tuple[CitelineServer, JsonCapture],
) -> None:
    ls, capture = served
    deliver(ls.protocol, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    bad = [
        ("citeline/status", {"bogus": 1}),
        ("citeline/status", "x"),
        ("citeline/search", {"query": "q" * 1_000_000}),
        ("citeline/ask", {"question": 5}),
        ("citeline/reindex", [1, 2]),
    ]
    for n, (method, params) in enumerate(bad, 2):
        deliver(ls.protocol, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})
    for _ in range(100):
        if len([m for m in capture.sent if "id" in m]) > len(bad):
            break
        await asyncio.sleep(0.01)
    codes = {m["id"]: m["error"]["code"] for m in capture.sent if "error" in m}
    assert codes == dict.fromkeys(range(2, 2 + len(bad)), -32602)
