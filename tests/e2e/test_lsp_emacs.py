"""`citeline serve --docs DIR` driven with Emacs (eglot) capabilities.

Eglot prefers UTF-32 positions, answers `workspace/configuration`, and reaches
Citeline's features through `workspace/executeCommand`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from answer_checks import assert_extractive
from lsp_harness import (
    ASK_TIMEOUT,
    CitelineClient,
    lines_of,
    make_corpus,
    request,
    start,
    stop,
    wait_ready,
)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITOR = "emacs"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("emacs") / "docs")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(corpus: Path) -> AsyncIterator[CitelineClient]:
    client = await start(
        EDITOR,
        [],  # no workspace folder: the folder comes from --docs
        extra_args=("--docs", str(corpus)),
        configuration={"citeline": {"search": {"topK": 1}}},
    )
    try:
        await wait_ready(client, corpus)
        yield client
    finally:
        await stop(client)


async def test_the_folder_comes_from_the_command_line(client: CitelineClient, corpus: Path) -> None:
    status = await request(client, "citeline/status", {})
    assert [f["uri"] for f in status["folders"]] == [corpus.as_uri()]


async def test_settings_pulled_with_workspace_configuration_apply(
    client: CitelineClient,
) -> None:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.search", arguments=["tomatoes"])
    )
    assert len(result["hits"]) == 1


async def test_hover_positions_are_utf32_code_points(
    client: CitelineClient, corpus: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch.txt"
    line = "🌱" * 10 + " Jupiter has ninety five moons. Which herb is planted next to tomatoes?"
    scratch.write_text(line + "\n", "utf-8")
    client.text_document_did_open(  # as eglot does: hover reads the editor's text
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=scratch.as_uri(), language_id="text", version=1, text=line + "\n"
            )
        )
    )
    column = line.index("Which")  # code points: what eglot sends with UTF-32
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=scratch.as_uri()),
            position=types.Position(line=0, character=column),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    first = hover.contents.value.split("---")[0]
    assert (corpus / "garden.md").as_uri() in first


async def test_ask_through_execute_command(client: CitelineClient, corpus: Path) -> None:
    answer = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="citeline.ask",
                arguments=["At what temperature should the loaf be baked?"],
            )
        ),
        ASK_TIMEOUT,
    )
    assert answer["folder"] == corpus.as_uri()
    assert answer["hits"][0]["path"] == "kitchen.md"
    _, cited = assert_extractive(answer, "230 degrees Celsius")
    assert cited["path"] == "kitchen.md"
    for citation in answer["citations"]:
        assert citation["uri"].startswith(corpus.as_uri())
        assert lines_of(citation["uri"], citation["range"]).strip()
