"""The transport: framing with limits, checks before the protocol, the TCP token,
one client at a time, a disconnect survived."""

from __future__ import annotations

import json
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from citeline.lsp import transport
from citeline.lsp.server import CitelineServer, build_server
from citeline.lsp.transport import Body, FrameParser, Skipped, deliver, handle_frame
from recording import JsonCapture
from wire import Peer, frame

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
    ls = build_server()
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


# -- the TCP token ----------------------------------------------------------------------


def test_the_token_file_is_readable_by_the_user_only(tmp_path: Path) -> None:
    path = tmp_path / "run" / "tcp-1.token"
    (tmp_path / "run").mkdir(mode=0o755)
    transport.write_token(path, "secret")
    assert path.read_text() == "secret\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    transport.write_token(path, "other")  # a file left by an earlier run is replaced
    assert path.read_text() == "other\n"


def test_the_token_is_found_where_clients_put_it() -> None:
    assert transport.token_from({"initializationOptions": {"token": "t"}}) == "t"
    assert transport.token_from({"initializationOptions": {"citeline": {"token": "t"}}}) == "t"
    assert transport.token_from({"initializationOptions": {"token": 5}}) is None
    assert transport.token_from(None) is None


class TcpRun:
    def __init__(self, tmp_path: Path) -> None:
        self.ls = build_server()
        self.server = transport.TcpServer(
            self.ls, "127.0.0.1", 0, tmp_path / "tokens" / "tcp-{port}.token"
        )
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not list((tmp_path / "tokens").glob("tcp-*.token")):
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        (self.token_file,) = (tmp_path / "tokens").glob("tcp-*.token")
        self.port = int(self.token_file.stem.split("-")[1])
        self.token = self.token_file.read_text().strip()

    def _run(self) -> None:
        self.code = self.server.run()

    def client(self, token: str | None, msg_id: int = 1) -> tuple[Peer, dict[str, Any]]:
        peer = Peer.connect("127.0.0.1", self.port)
        params = dict(INITIALIZE)
        if token is not None:
            params["initializationOptions"] = {"token": token}
        return peer, peer.request(msg_id, "initialize", params, 30)


def test_tcp_needs_the_token_serves_one_client_and_survives_it_leaving(tmp_path: Path) -> None:
    run = TcpRun(tmp_path)
    try:
        for token in (None, "wrong"):
            peer, answer = run.client(token)
            assert answer["error"]["code"] == transport.UNAUTHORIZED
            assert peer.receive(10) is None  # disconnected
            peer.close()
        stranger = Peer.connect("127.0.0.1", run.port)
        stranger.send({"jsonrpc": "2.0", "id": 1, "method": "citeline/status", "params": {}})
        assert stranger.response(1, 30)["error"]["code"] == transport.UNAUTHORIZED
        stranger.close()

        first, answer = run.client(run.token)
        assert "capabilities" in answer["result"]
        first.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        second, refused = run.client(run.token)
        assert refused["error"]["code"] == transport.BUSY
        assert "another client" in refused["error"]["message"]
        assert second.receive(10) is None
        assert first.request(2, "citeline/status", {}, 30)["result"]["folders"] == []
        first.close()  # gone without shutdown: the server keeps listening

        again, answer = run.client(run.token)
        assert "capabilities" in answer["result"]
        again.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert "result" in again.request(2, "citeline/status", {}, 30)
        assert "result" in again.request(3, "shutdown", None, 30)
        again.send({"jsonrpc": "2.0", "method": "exit"})
        run.thread.join(30)
        assert run.code == 0
        assert not run.token_file.exists()
        again.close()
    finally:
        run.ls.service.stop(5)


def test_a_message_from_the_client_is_parsed_once(tmp_path: Path) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}).encode()
    assert FrameParser().feed(frame(body)) == [Body(body)]


def test_a_token_file_the_user_names_leaves_its_folder_alone(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir(mode=0o755)
    transport.write_token(tmp_path / "mine" / "t.token", "secret", private_folder=False)
    assert stat.S_IMODE((tmp_path / "mine").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "mine" / "t.token").stat().st_mode) == 0o600
    (tmp_path / "mine" / "link.token").symlink_to(tmp_path / "elsewhere")
    transport.write_token(tmp_path / "mine" / "link.token", "s", private_folder=False)
    assert not (tmp_path / "elsewhere").exists()  # the link was replaced, not followed


def test_parse_tcp_defaults_to_localhost() -> None:
    assert transport.parse_tcp("8765") == ("127.0.0.1", 8765)
    assert transport.parse_tcp(":8765") == ("127.0.0.1", 8765)
    assert transport.parse_tcp("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert transport.parse_tcp("[::1]:9000") == ("::1", 9000)
    for bad in ("http", "host:", "1:99999"):
        with pytest.raises(ValueError):
            transport.parse_tcp(bad)
