"""``citeline/history``, ``citeline/historyEntry`` and ``citeline/historyDelete`` as
pygls calls them: real asks listed, shown with URIs and ranges, stale once a cited
file changes, deleted; bad params are errors."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from citeline.lsp.errors import REQUEST_FAILED
from inprocess import Served

COFFEE = "How often is the coffee machine descaled?"


async def test_past_answers_are_listed_shown_and_deleted(served: Served) -> None:
    ask = served.feature("citeline/ask")
    history = served.feature("citeline/history")
    entry = served.feature("citeline/historyEntry")
    delete = served.feature("citeline/historyDelete")
    given = await ask({"question": COFFEE, "folder": served.kitchen.as_uri()})
    await ask({"question": "How much sun do tomatoes need?", "folder": served.garden.as_uri()})

    listed = await history({})
    assert listed["total"] == 2
    newest, oldest = listed["entries"]
    assert newest["folder"] == served.garden.as_uri()
    assert oldest["folder"] == served.kitchen.as_uri() and oldest["question"] == COFFEE
    keys = {"id", "time", "folder", "question", "grade", "grade_label", "mode", "preview"}
    assert set(oldest) == keys | {"sources"}
    assert oldest["grade_label"] == given["grade_label"]
    assert oldest["sources"] == len(given["citations"]) and oldest["time"].endswith("Z")
    only = await history({"folder": served.kitchen.as_uri(), "query": "coffee", "limit": 1})
    assert [e["id"] for e in only["entries"]] == [oldest["id"]] and only["total"] == 1
    assert (await history({"offset": 1, "limit": 1}))["entries"][0]["id"] == oldest["id"]

    shown = await entry({"id": oldest["id"]})
    assert shown["id"] == oldest["id"] and shown["stale"] is False
    assert shown["answer"] == given["answer"] and shown["folder"] == served.kitchen.as_uri()
    for was, now in zip(given["citations"], shown["citations"], strict=True):
        assert now["uri"] == was["uri"] and now["range"] == was["range"]
        assert now["changed"] is False and now["local_copy"] == "same"

    cited = served.kitchen / given["citations"][0]["path"]
    cited.write_text("# Kitchen handbook\n\nEverything changed.\n")
    stale = await entry({"id": oldest["id"]})
    assert stale["stale"] is True
    first = stale["citations"][0]
    assert first["changed"] is True and first["local_copy"] == "differs"
    assert first["text"]  # the passage as it was cited, shown instead of the lines

    assert await delete({"id": oldest["id"]}) == {"deleted": 1}
    assert [e["id"] for e in (await history({}))["entries"]] == [newest["id"]]
    assert await delete({}) == {"deleted": 1}
    assert await history({}) == {"entries": [], "total": 0}


async def test_bad_params_are_errors(served: Served) -> None:
    history = served.feature("citeline/history")
    entry = served.feature("citeline/historyEntry")
    delete = served.feature("citeline/historyDelete")
    for params, message in (
        ({"limit": 0}, "'limit' must be between 1 and 200"),
        ({"limit": 201}, "'limit' must be between 1 and 200"),
        ({"offset": -1}, "'offset' must be between"),
        ({"query": 3}, "'query' must be a string"),
        ({"folder": "untitled:x"}, "'folder' must be a file:// URI"),
        ({"colour": "red"}, "unknown parameter"),
    ):
        with pytest.raises(JsonRpcInvalidParams, match=message):
            await history(params)
    with pytest.raises(JsonRpcInvalidParams, match="'id' is required"):
        await entry({})
    with pytest.raises(JsonRpcInvalidParams, match="'id' must be"):
        await delete({"id": "x" * 65})
    with pytest.raises(JsonRpcException) as info:
        await entry({"id": "0123456789abcdef"})
    assert info.value.code == REQUEST_FAILED and "no past answer" in info.value.message
    with pytest.raises(JsonRpcException) as info:
        await history({"folder": (served.garden / "nope").as_uri()})
    assert info.value.code == REQUEST_FAILED
