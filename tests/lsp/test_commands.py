"""``workspace/executeCommand`` equivalents: positional arguments, the same results."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from citeline.lsp.errors import RequestFailed
from inprocess import Served


async def test_commands_give_what_the_requests_give(served: Served) -> None:
    status = await served.command("citeline.status")()
    assert [f["uri"] for f in status["folders"]] == [
        served.garden.as_uri(),
        served.kitchen.as_uri(),
    ]
    found = await served.command("citeline.search")("coffee machine", 2)
    assert len(found["hits"]) <= 2 and found["hits"][0]["folder"] == served.kitchen.as_uri()
    report = await served.command("citeline.reindex")(served.garden.as_uri())
    assert [f["uri"] for f in report["folders"]] == [served.garden.as_uri()]
    answer = await served.command("citeline.ask")("How often is the coffee machine descaled?")
    assert answer["folder"] == served.kitchen.as_uri()


async def test_wrong_arguments_are_invalid_params(served: Served) -> None:
    with pytest.raises(JsonRpcInvalidParams, match="expected 1 to 2 argument"):
        await served.command("citeline.search")()
    with pytest.raises(JsonRpcInvalidParams, match="must be a string"):
        await served.command("citeline.ask")(42)
    with pytest.raises(JsonRpcInvalidParams, match="citation with a 'uri'"):
        await served.command("citeline.openCitation")({"path": "a.md"})


async def test_open_citation_needs_a_client_that_shows_documents(served: Served) -> None:
    citation = {"uri": (served.garden / "garden.md").as_uri(), "range": None}
    assert await served.command("citeline.openCitation")(citation) is False


@pytest.mark.parametrize(
    "uri", ["file:///etc/passwd", "https://example.com/a.md", "file:///dev/zero", "GARDEN/../x"]
)
async def test_open_citation_shows_only_documents_of_the_folders(served: Served, uri: str) -> None:
    uri = uri.replace("GARDEN", served.garden.as_uri())
    with pytest.raises(RequestFailed, match="not a document of the folders"):
        await served.command("citeline.openCitation")({"uri": uri})
