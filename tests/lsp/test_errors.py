"""What a client sees when a handler fails: a message it can act on, or "Citeline
failed" with the traceback in the log; cancellation passes through."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.backends.llama.embedder import EmbeddingError
from citeline.lsp.errors import (
    INTERNAL_ERROR,
    REQUEST_FAILED,
    log_failures,
    reported,
    to_response_error,
)
from citeline.service.errors import ServiceError


def test_expected_errors_keep_their_message() -> None:
    for exc in (ServiceError("no documents folder"), EmbeddingError("model m.gguf is broken")):
        error = to_response_error("citeline/ask", exc)
        assert error.code == REQUEST_FAILED and error.message == str(exc)
    params = JsonRpcInvalidParams(message="bad")
    assert to_response_error("citeline/ask", params) is params


def test_a_bug_is_an_internal_error_with_the_traceback_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        error = to_response_error("citeline/ask", KeyError("oops"))
    assert error.code == INTERNAL_ERROR and error.message.startswith("Citeline failed (KeyError")
    (record,) = caplog.records
    assert record.exc_info is not None  # the traceback goes to the log


async def test_handlers_raise_json_rpc_errors_and_let_cancellation_through() -> None:
    @reported("m")
    async def failing() -> None:
        raise ServiceError("nope")

    @reported("m")
    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(JsonRpcException, match="nope"):
        await failing()
    with pytest.raises(asyncio.CancelledError):
        await cancelled()


async def test_notification_handlers_only_log(caplog: pytest.LogCaptureFixture) -> None:
    @log_failures("n")
    async def failing() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR):
        await failing()
    assert "n failed" in caplog.text
