"""The server: what the transport and the service tell it, and what it tells them."""

from __future__ import annotations

from pathlib import Path

from citeline.app import ModelPool
from citeline.lsp.server import build_server, default_token_file


def test_exit_goes_to_the_transport_and_a_client_can_leave() -> None:
    ls = build_server(backends=ModelPool())
    codes: list[int] = []
    ls.exit_requested = codes.append
    ls.request_exit(0)
    assert codes == [0]
    ls.status.enabled = True
    ls.client_gone()
    assert ls.status.enabled is False  # nothing is sent until the next client initializes
    ls.service.stop(5)


def test_the_token_file_is_per_port_in_a_private_place(monkeypatch: object) -> None:
    path = default_token_file()
    assert path.name == "tcp-{port}.token"
    assert isinstance(path, Path) and path.parent.name in ("citeline", "run")
