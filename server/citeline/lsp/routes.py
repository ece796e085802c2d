"""One declaration per request: a handler is registered for its wire method, and for
the method's ``workspace/executeCommand`` twin when ``citeline.wire`` gives it one.

    @request(ls, wire.SEARCH)
    async def search(ls: CitelineServer, params: wire.SearchParams) -> wire.SearchResult:

The handler gets its params parsed into their wire type (``lsp/params.py``: a bad
one is one InvalidParams error), and its failures become JSON-RPC errors
(``lsp/errors.py``).  The command twin takes the same params as positional
arguments, in the order ``Method.arguments`` names them, and answers the same.
:func:`notification` is the same for the editor's notifications and the LSP
requests Citeline answers: typed by lsprotocol, failures logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pygls.lsp.server import LanguageServer

from citeline import wire
from citeline.lsp.errors import log_failures, reported
from citeline.lsp.params import command_params, parse

if TYPE_CHECKING:
    from citeline.lsp.server import CitelineServer

P = TypeVar("P")
R = TypeVar("R")
T = TypeVar("T")
Handler = Callable[["CitelineServer", P], Awaitable[R]]


def request(
    ls: CitelineServer, method: wire.Method[P, R]
) -> Callable[[Handler[P, R]], Handler[P, R]]:
    """Register the decorated handler for ``method`` (and its command twin)."""

    def register(fn: Handler[P, R]) -> Handler[P, R]:
        @reported(method.name)
        async def handle(ls: CitelineServer, params: Any) -> R:
            return await fn(ls, parse(method, params))

        ls.feature(method.name)(handle)
        if method.command is not None:
            twin = method.command

            # pygls reads a command handler's annotations at call time to convert its
            # arguments: they name runtime types (LanguageServer, Any).
            @reported(twin)
            async def handle_command(ls: LanguageServer, *args: Any) -> R:
                params = parse(method, command_params(method, args))
                return await fn(cast("CitelineServer", ls), params)

            ls.command(twin)(handle_command)
        return fn

    return register


def lsp_request(
    ls: CitelineServer, method: str
) -> Callable[
    [Callable[[CitelineServer, T], Awaitable[R]]], Callable[[CitelineServer, T], Awaitable[R]]
]:
    """Register the decorated async handler for the LSP request ``method`` (params typed
    by lsprotocol); its failures become JSON-RPC errors."""

    def register(
        fn: Callable[[CitelineServer, T], Awaitable[R]],
    ) -> Callable[[CitelineServer, T], Awaitable[R]]:
        handler = reported(method)(fn)
        ls.feature(method)(handler)
        return handler

    return register


def command(
    ls: CitelineServer, name: str
) -> Callable[[Callable[..., Awaitable[R]]], Callable[..., Awaitable[R]]]:
    """Register the decorated async handler for the command ``name`` (positional
    arguments, as pygls passes them); its failures become JSON-RPC errors."""

    def register(fn: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
        handler = reported(name)(fn)
        ls.command(name)(handler)
        return handler

    return register


def notification(
    ls: CitelineServer, method: str
) -> Callable[
    [Callable[[CitelineServer, T], Awaitable[Any]]], Callable[[CitelineServer, T], Awaitable[None]]
]:
    """Register the decorated async handler for the LSP ``method``; failures are logged."""

    def register(
        fn: Callable[[CitelineServer, T], Awaitable[Any]],
    ) -> Callable[[CitelineServer, T], Awaitable[None]]:
        handler = log_failures(method)(fn)
        ls.feature(method)(handler)
        return handler

    return register
