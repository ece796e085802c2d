"""One declaration per request: the request and its command twin share one handler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from citeline import wire
from citeline.lsp.errors import RequestFailed
from citeline.lsp.routes import command, lsp_request, notification, request
from citeline.service.errors import ServiceError


class Registry:
    """What a server's feature manager records (pure logic: no pygls server)."""

    def __init__(self) -> None:
        self.features: dict[str, Callable[..., Any]] = {}
        self.commands: dict[str, Callable[..., Any]] = {}

    def feature(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.features[name] = fn
            return fn

        return add

    def command(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.commands[name] = fn
            return fn

        return add


async def test_a_request_and_its_twin_get_the_same_typed_params() -> None:
    ls = Registry()
    seen: list[wire.SearchParams] = []

    @request(ls, wire.SEARCH)  # type: ignore[arg-type]
    async def search(ls: Any, params: wire.SearchParams) -> wire.SearchResult:
        seen.append(params)
        return wire.SearchResult(hits=[])

    assert set(ls.features) == {"citeline/search"} and set(ls.commands) == {"citeline.search"}
    assert await ls.features["citeline/search"](ls, {"query": "q", "k": 2}) == {"hits": []}
    assert await ls.commands["citeline.search"](ls, "q", 2) == {"hits": []}
    assert seen == [{"query": "q", "k": 2}, {"query": "q", "k": 2}]
    with pytest.raises(JsonRpcInvalidParams, match="citeline/search: 'k' must be"):
        await ls.features["citeline/search"](ls, {"query": "q", "k": "2"})
    with pytest.raises(JsonRpcInvalidParams, match=r"citeline\.search: expected 1 to 2"):
        await ls.commands["citeline.search"](ls)
    assert len(seen) == 2  # bad params never reach the handler


async def test_a_request_without_a_twin_registers_no_command() -> None:
    ls = Registry()

    @request(ls, wire.HISTORY_ENTRY)  # type: ignore[arg-type]
    async def entry(ls: Any, params: wire.HistoryEntryParams) -> Any:
        raise ServiceError(f"no entry {params['id']}")

    assert ls.commands == {}
    with pytest.raises(RequestFailed, match="no entry a1"):  # an expected error, as is
        await ls.features["citeline/historyEntry"](ls, {"id": "a1"})


async def test_lsp_requests_commands_and_notifications() -> None:
    ls = Registry()
    calls: list[object] = []

    @lsp_request(ls, "textDocument/hover")  # type: ignore[arg-type]
    async def hover(ls: Any, params: object) -> None:
        raise ValueError("broken")

    @command(ls, "citeline.x")  # type: ignore[arg-type]
    async def x(ls: Any, *args: Any) -> int:
        return len(args)

    @notification(ls, "initialized")  # type: ignore[arg-type]
    async def initialized(ls: Any, params: object) -> None:
        calls.append(params)
        raise ValueError("logged, not raised")

    with pytest.raises(Exception, match="Citeline failed"):
        await ls.features["textDocument/hover"](ls, None)
    assert await ls.commands["citeline.x"](ls, 1, 2) == 2
    assert await ls.features["initialized"](ls, "p") is None
    assert calls == ["p"]
