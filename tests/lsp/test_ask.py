"""``citeline/ask`` as pygls calls it: params checked, the answer located, deltas sent."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.lsp.errors import REQUEST_FAILED
from inprocess import Served


async def test_an_answer_names_its_folder_and_locates_its_citations(served: Served) -> None:
    ask = served.feature("citeline/ask")
    result = await ask(
        {"question": "  How often is the coffee machine descaled?  ", "partialResultToken": "t1"},
    )
    assert result["question"] == "How often is the coffee machine descaled?"
    assert result["grade"] in ("answer", "closest") and result["refused"] is False
    assert result["grade_label"] in (
        "Answer",
        "Closest passages — they may not answer the question",
    )
    assert result["folder"] == served.kitchen.as_uri()
    hit = result["hits"][0]
    assert hit["uri"] == (served.kitchen / "kitchen.md").as_uri()
    assert hit["range"]["start"]["line"] == hit["start_line"] - 1
    for citation in result["citations"]:
        assert citation["folder"] == served.kitchen.as_uri() and "range" in citation
    deltas = [p["value"]["delta"] for p in served.wire.notifications("$/progress")]
    if result["generator_called"]:
        assert deltas and "".join(deltas).strip()


async def test_a_named_folder_is_used_and_bad_params_are_errors(served: Served) -> None:
    ask = served.feature("citeline/ask")
    result = await ask(
        {"question": "How often is the coffee descaled?", "folder": served.garden.as_uri()},
    )
    assert result["folder"] == served.garden.as_uri()
    with pytest.raises(JsonRpcInvalidParams, match="'question' is required"):
        await ask({})
    with pytest.raises(JsonRpcInvalidParams, match="unknown parameter"):
        await ask({"question": "q", "colour": "red"})
    with pytest.raises(JsonRpcException) as info:
        await ask({"question": "q", "folder": (served.garden / "nope").as_uri()})
    assert info.value.code == REQUEST_FAILED
    assert "not a documents folder Citeline serves" in info.value.message
