"""Parsing custom request params into their wire types: wrong types, unknown keys,
out-of-range numbers and folders that are not file:// URIs are InvalidParams."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from citeline import wire
from citeline.lsp.params import MAX_TEXT_CHARS, command_params, folder, parse


def test_objects_and_unknown_keys() -> None:
    assert parse(wire.REINDEX, None) == {}
    assert parse(wire.REINDEX, []) == {}
    assert parse(wire.STATUS, {"workDoneToken": 1}) == {}
    assert parse(wire.ASK, {"question": "q", "workDoneToken": "t"}) == {"question": "q"}
    with pytest.raises(JsonRpcInvalidParams, match="unknown parameter"):
        parse(wire.ASK, {"question": "q", "b": 2})
    with pytest.raises(JsonRpcInvalidParams, match="unknown parameter"):
        parse(wire.STATUS, {"folder": "file:///x"})
    with pytest.raises(JsonRpcInvalidParams, match="must be an object"):
        parse(wire.ASK, ["x"])


def test_text() -> None:
    assert parse(wire.ASK, {"question": "hi", "folder": None}) == {"question": "hi"}
    for bad, why in (
        ({}, "is required"),
        ({"question": 3}, "must be a string"),
        ({"question": "  "}, "must not be empty"),
        ({"question": "x" * (MAX_TEXT_CHARS + 1)}, "too long"),
    ):
        with pytest.raises(JsonRpcInvalidParams, match=why):
            parse(wire.ASK, bad)
    assert parse(wire.HISTORY, {"query": ""}) == {"query": ""}  # optional: may be empty


def test_integers_and_tokens() -> None:
    assert parse(wire.SEARCH, {"query": "q", "k": 3}) == {"query": "q", "k": 3}
    for bad in ("3", True, 0, 101, 2.5):
        with pytest.raises(JsonRpcInvalidParams, match="'k' must be"):
            parse(wire.SEARCH, {"query": "q", "k": bad})
    assert parse(wire.HISTORY, {"offset": 0})["offset"] == 0
    with pytest.raises(JsonRpcInvalidParams, match="'offset' must be between"):
        parse(wire.HISTORY, {"offset": -1})
    for token in (4, "x"):
        assert (
            parse(wire.ASK, {"question": "q", "partialResultToken": token}).get(
                "partialResultToken"
            )
            == token
        )
    for bad_token in ([1], True, "t" * 300):
        with pytest.raises(JsonRpcInvalidParams, match="partialResultToken"):
            parse(wire.ASK, {"question": "q", "partialResultToken": bad_token})


def test_a_history_id() -> None:
    assert parse(wire.HISTORY_ENTRY, {"id": "a1"}) == {"id": "a1"}
    for bad in ("x" * 65, " "):
        with pytest.raises(JsonRpcInvalidParams, match="'id' must"):
            parse(wire.HISTORY_DELETE, {"id": bad})


def test_positional_arguments() -> None:
    assert command_params(wire.SEARCH, ("q",)) == {"query": "q"}
    assert command_params(wire.SEARCH, ("q", 3)) == {"query": "q", "k": 3}
    assert command_params(wire.STATUS, ()) == {}
    with pytest.raises(JsonRpcInvalidParams, match="expected 1 to 2"):
        command_params(wire.SEARCH, ())
    with pytest.raises(JsonRpcInvalidParams, match="expected 0 argument"):
        command_params(wire.STATUS, (1,))
    with pytest.raises(JsonRpcInvalidParams):
        command_params(wire.SEARCH, ("a", "b", "c"))


def test_a_folder_is_named_by_a_file_uri() -> None:
    parsed = parse(wire.REINDEX, {"folder": "file:///home/me/notes"})
    assert folder(parsed.get("folder")) == Path("/home/me/notes")
    assert folder(None) is None
    with pytest.raises(JsonRpcInvalidParams, match="file:// URI"):
        parse(wire.REINDEX, {"folder": "https://example.com/notes"})
    with pytest.raises(JsonRpcInvalidParams, match="'folder' is required"):
        parse(wire.INDEX_FOLDER, {})


SAMPLES = {
    "question": "q",
    "query": "q",
    "folder": "file:///home/me/notes",
    "id": "a1",
    "k": 1,
    "limit": 1,
    "offset": 0,
    "partialResultToken": "t",
}


@pytest.mark.parametrize("method", sorted(wire.METHODS))
def test_every_wire_param_has_a_rule(method: str) -> None:
    # a new param without a rule in parse() fails here, not at a client's request
    m = wire.METHODS[method]
    params = {key: SAMPLES[key] for key in m.param_names()}
    assert parse(m, params) == params
