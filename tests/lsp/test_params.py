"""Checking custom request params: wrong types and unknown keys are InvalidParams."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from citeline.lsp.params import (
    command_args,
    folder_param,
    int_param,
    object_params,
    string_param,
    token_param,
)


def test_objects_and_unknown_keys() -> None:
    assert object_params("m", None, ("a",)) == {}
    assert object_params("m", [], ("a",)) == {}
    assert object_params("m", {"a": 1, "partialResultToken": "t"}, ("a",))["a"] == 1
    with pytest.raises(JsonRpcInvalidParams, match="unknown parameter"):
        object_params("m", {"a": 1, "b": 2}, ("a",))
    with pytest.raises(JsonRpcInvalidParams, match="must be an object"):
        object_params("m", ["x"], ("a",))


def test_text() -> None:
    assert string_param("m", {"q": "hi"}, "q", required=True) == "hi"
    assert string_param("m", {}, "q", required=False) is None
    for bad in ({}, {"q": 3}, {"q": "  "}):
        with pytest.raises(JsonRpcInvalidParams):
            string_param("m", bad, "q", required=True)


def test_integer_and_tokens() -> None:
    assert int_param("m", {"k": 3}, "k", low=1, high=10) == 3
    assert int_param("m", {}, "k", low=1, high=10) is None
    for bad in ("3", True, 0, 11, 2.5):
        with pytest.raises(JsonRpcInvalidParams):
            int_param("m", {"k": bad}, "k", low=1, high=10)
    assert token_param("m", {"t": 4}, "t") == 4
    assert token_param("m", {"t": "x"}, "t") == "x"
    with pytest.raises(JsonRpcInvalidParams):
        token_param("m", {"t": [1]}, "t")


def test_positional_arguments() -> None:
    assert command_args("c", ("q",), ["q", "k"], 1) == ["q", None]
    assert command_args("c", ("q", 3), ["q", "k"], 1) == ["q", 3]
    with pytest.raises(JsonRpcInvalidParams, match="expected 1 to 2"):
        command_args("c", (), ["q", "k"], 1)
    with pytest.raises(JsonRpcInvalidParams):
        command_args("c", ("a", "b", "c"), ["q", "k"], 1)


def test_a_folder_is_named_by_a_file_uri() -> None:
    assert folder_param("m", {"folder": "file:///home/me/notes"}, "folder") == Path(
        "/home/me/notes"
    )
    assert folder_param("m", {}, "folder") is None
    with pytest.raises(JsonRpcInvalidParams, match="file:// URI"):
        folder_param("m", {"folder": "https://example.com/notes"}, "folder")
