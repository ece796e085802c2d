"""Checking custom request params: wrong types and unknown keys are InvalidParams."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from citeline.lsp import params as p


def test_objects_and_unknown_keys() -> None:
    assert p.as_object("m", None, ("a",)) == {}
    assert p.as_object("m", [], ("a",)) == {}
    assert p.as_object("m", {"a": 1, "partialResultToken": "t"}, ("a",))["a"] == 1
    with pytest.raises(JsonRpcInvalidParams, match="unknown parameter"):
        p.as_object("m", {"a": 1, "b": 2}, ("a",))
    with pytest.raises(JsonRpcInvalidParams, match="must be an object"):
        p.as_object("m", ["x"], ("a",))


def test_text() -> None:
    assert p.text("m", {"q": "hi"}, "q", required=True) == "hi"
    assert p.text("m", {}, "q", required=False) is None
    for bad in ({}, {"q": 3}, {"q": "  "}):
        with pytest.raises(JsonRpcInvalidParams):
            p.text("m", bad, "q", required=True)


def test_integer_and_tokens() -> None:
    assert p.integer("m", {"k": 3}, "k", low=1, high=10) == 3
    assert p.integer("m", {}, "k", low=1, high=10) is None
    for bad in ("3", True, 0, 11, 2.5):
        with pytest.raises(JsonRpcInvalidParams):
            p.integer("m", {"k": bad}, "k", low=1, high=10)
    assert p.progress_token("m", {"t": 4}, "t") == 4
    assert p.progress_token("m", {"t": "x"}, "t") == "x"
    with pytest.raises(JsonRpcInvalidParams):
        p.progress_token("m", {"t": [1]}, "t")


def test_positional_arguments() -> None:
    assert p.positional("c", ("q",), ["q", "k"], 1) == ["q", None]
    assert p.positional("c", ("q", 3), ["q", "k"], 1) == ["q", 3]
    with pytest.raises(JsonRpcInvalidParams, match="expected 1 to 2"):
        p.positional("c", (), ["q", "k"], 1)
    with pytest.raises(JsonRpcInvalidParams):
        p.positional("c", ("a", "b", "c"), ["q", "k"], 1)
