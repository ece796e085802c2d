"""JSON-RPC errors for handlers: a short message for the user, the traceback in the log."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.service.errors import EXPECTED_ERRORS

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803  # LSP: the request was well formed but could not be served
INTERNAL_ERROR = -32603

P = ParamSpec("P")
R = TypeVar("R")


class RequestFailed(JsonRpcException):
    """A well-formed request that cannot be served now (an expected error)."""

    CODE = REQUEST_FAILED
    MESSAGE = "Request failed"


def invalid_params(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message)


def to_response_error(name: str, exc: Exception) -> JsonRpcException:
    """The error a client sees for ``exc``; logs the full traceback."""
    if isinstance(exc, JsonRpcException):
        log.info("%s: %s", name, exc.message)
        return exc
    if isinstance(exc, EXPECTED_ERRORS):  # the user can act on it: the message as is
        log.warning("%s failed: %s", name, exc)
        return RequestFailed(message=str(exc))
    log.error("%s failed", name, exc_info=exc)
    text = f"{type(exc).__name__}: {exc}"
    return JsonRpcException(
        message=f"Citeline failed ({text[:200]}); the log has the details", code=INTERNAL_ERROR
    )


def reported(
    name: str,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Decorate an async handler: exceptions become JSON-RPC errors; cancellation passes."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise to_response_error(name, exc) from exc

        return wrapper

    return decorate


def log_failures(
    name: str,
) -> Callable[[Callable[P, Awaitable[Any]]], Callable[P, Awaitable[None]]]:
    """Decorate an async notification handler: failures are logged, never raised."""

    def decorate(fn: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[None]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
            try:
                await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed", name)

        return wrapper

    return decorate
