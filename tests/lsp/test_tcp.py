"""TCP: the token, one client at a time, a disconnect survived."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from citeline.app import ModelPool
from citeline.lsp import tcp as transport
from citeline.lsp.server import build_server
from wire import Peer

INITIALIZE: dict[str, Any] = {"processId": None, "rootUri": None, "capabilities": {}}


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
        self.ls = build_server(backends=ModelPool())
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


def test_a_client_that_shuts_down_but_leaves_without_exit_is_not_the_end(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    run = TcpRun(tmp_path)
    try:
        first, _ = run.client(run.token)
        assert "result" in first.request(2, "shutdown", None, 30)
        first.close()
        again, answer = run.client(run.token)
        assert "capabilities" in answer["result"]
        again.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert again.request(2, "citeline/status", {}, 30)["result"]["folders"] == []
        assert "result" in again.request(3, "shutdown", None, 30)
        again.send({"jsonrpc": "2.0", "method": "exit"})
        run.thread.join(30)
        assert run.code == 0
        again.close()
    finally:
        run.ls.service.stop(5)


def test_a_new_connection_closes_the_oldest_waiting_one_when_all_places_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport, "MAX_UNAUTHENTICATED", 2)
    run = TcpRun(tmp_path)
    try:
        oldest = Peer.connect("127.0.0.1", run.port)
        time.sleep(0.2)
        newer = Peer.connect("127.0.0.1", run.port)
        time.sleep(0.2)
        holder, answer = run.client(run.token)  # the third: the oldest makes room
        assert "capabilities" in answer["result"]
        refused = oldest.receive(5)
        assert refused is None or refused["error"]["code"] == transport.UNAUTHORIZED
        assert oldest.receive(5) is None  # closed
        # the other idle one is closed by the handshake deadline
        started = time.monotonic()
        late = newer.receive(10)
        assert late is None or late["error"]["code"] == transport.UNAUTHORIZED
        assert time.monotonic() - started < transport.AUTH_TIMEOUT + 2
        for peer in (oldest, newer, holder):
            peer.close()
    finally:
        run.ls.service.stop(5)
