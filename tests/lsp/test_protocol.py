"""The protocol: malformed params answered with -32602, one initialize, requests only
after it, one log line per failure, no leaked futures, hover extras kept."""

from __future__ import annotations

import json
from typing import Any

from lsprotocol import types

from citeline.app import ModelPool
from citeline.lsp.protocol import Rejected
from citeline.lsp.server import build_server
from recording import JsonCapture


def parse(protocol: Any, message: dict[str, Any]) -> Any:
    return json.loads(json.dumps(message), object_hook=protocol.structure_message)


def test_malformed_params_of_a_standard_request_get_an_invalid_params_response() -> None:
    ls = build_server(backends=ModelPool())
    capture = JsonCapture()
    ls.protocol.set_writer(capture)
    message = parse(
        ls.protocol,
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": 1}, "position": {"line": "x"}},
        },
    )
    assert isinstance(message, Rejected)
    ls.protocol.handle_message(message)  # ignored: already answered
    (response,) = capture.sent
    assert response["id"] == 7
    assert response["error"]["code"] == -32602
    assert "textDocument/hover" in response["error"]["message"]
    ls.service.stop(5)


def test_hover_extension_field_is_kept_for_the_handler() -> None:
    ls = build_server(backends=ModelPool())
    message = parse(
        ls.protocol,
        {
            "jsonrpc": "2.0",
            "id": "h1",
            "method": "textDocument/hover",
            "params": {
                "textDocument": {"uri": "file:///x.md"},
                "position": {"line": 0, "character": 0},
                "citeline": {"selection": "chosen words"},
            },
        },
    )
    assert isinstance(message.params, types.HoverParams)
    assert ls.protocol._hover_extras["h1"] == {"selection": "chosen words"}
    ls.service.stop(5)


def test_custom_request_params_stay_plain_json() -> None:
    ls = build_server(backends=ModelPool())
    message = parse(
        ls.protocol,
        {"jsonrpc": "2.0", "id": 1, "method": "citeline/ask", "params": {"question": "q?"}},
    )
    assert message.params == {"question": "q?"}
    ls.service.stop(5)


def test_a_cancel_for_any_id_is_harmless() -> None:
    ls = build_server(backends=ModelPool())
    for msg_id in ([1], {"a": 1}, None, True, 1.5, "unknown", 7):
        ls.protocol._handle_cancel_notification(msg_id)
    ls.service.stop(5)
