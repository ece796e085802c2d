"""`citeline serve` driven with Neovim 0.7's capabilities: several folders, settings.

Neovim 0.7 offers no file watching, no `workspace/configuration` and no
`window/showDocument`; the server must manage without them.
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
    CHANGE_TIMEOUT,
    TEST_SETTINGS,
    CitelineClient,
    folder_status,
    lines_of,
    make_corpus,
    mark,
    request,
    search,
    start,
    stop,
    wait_ready,
    wait_until,
)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITOR = "neovim@v0.7.0"

RECIPES = """\
# Recipes

## Pancakes

Whisk two eggs with three hundred millilitres of milk before adding the flour.
Rest the pancake batter for thirty minutes.
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("neovim")
    notes = make_corpus(base / "notes")
    (notes / "citeline.toml").write_text("[search]\ntop_k = 2\n", "utf-8")
    recipes = base / "recipes"
    (recipes / ".citeline").mkdir(parents=True)  # served (the marker), no citeline.toml
    (recipes / "recipes.md").write_text(RECIPES, "utf-8")
    return notes, recipes


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(folders: tuple[Path, Path]) -> AsyncIterator[CitelineClient]:
    options = {
        **TEST_SETTINGS,
        "search": {"topK": "many"},  # wrong type: a warning, and the layer below applies
        "colour": "blue",  # unknown: a warning
    }
    client = await start(EDITOR, list(folders), init_options=options)
    try:
        await wait_ready(client, *folders)
        yield client
    finally:
        await stop(client)


async def test_invalid_settings_are_shown_as_warnings_and_not_fatal(
    client: CitelineClient,
) -> None:
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("search.top_k" in w and "many" in w for w in warnings), warnings
    assert any("colour" in w for w in warnings), warnings
    status = await request(client, "citeline/status", {})
    assert [f["state"] for f in status["folders"]] == ["ready", "ready"]


async def test_settings_layer_defaults_then_toml_then_editor(
    client: CitelineClient, folders: tuple[Path, Path]
) -> None:
    notes, recipes = folders
    # citeline.toml in notes says top_k = 2 (the editor's invalid value was ignored).
    hits = await request(client, "citeline/search", {"query": "tomatoes", "folder": notes.as_uri()})
    assert len(hits["hits"]) == 2
    # recipes has no citeline.toml: the default, 5 (it has only one passage).
    hits = await request(client, "citeline/search", {"query": "eggs", "folder": recipes.as_uri()})
    assert len(hits["hits"]) == 1
    # The editor's settings win over citeline.toml.
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"citeline": {**TEST_SETTINGS, "search": {"topK": 3}}}
        )
    )

    # Notifications and requests are handled in order: the next search sees the change.
    result = await request(
        client, "citeline/search", {"query": "tomatoes", "folder": notes.as_uri()}
    )
    assert len(result["hits"]) == 3


async def test_search_without_a_folder_merges_every_folder(client: CitelineClient) -> None:
    hits = await search(client, "how long should pancake batter rest", k=3)
    assert hits[0]["path"] == "recipes.md"
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert {h["folder"] for h in hits} >= {hits[0]["folder"]}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)


async def test_ask_picks_the_folder_that_holds_the_answer(
    client: CitelineClient, folders: tuple[Path, Path]
) -> None:
    _, recipes = folders
    answer = await asyncio.wait_for(
        request(client, "citeline/ask", {"question": "How long should pancake batter rest?"}),
        ASK_TIMEOUT,
    )
    assert answer["folder"] == recipes.as_uri()
    assert answer["hits"][0]["path"] == "recipes.md"
    for citation in answer["citations"]:
        assert citation["uri"].startswith(recipes.as_uri())
        assert lines_of(citation["uri"], citation["range"]).strip()


async def test_an_answer_from_a_small_folder_quotes_it(
    client: CitelineClient, folders: tuple[Path, Path]
) -> None:
    _, recipes = folders
    answer = await asyncio.wait_for(
        request(
            client,
            "citeline/ask",
            {"question": "How long should pancake batter rest?", "folder": recipes.as_uri()},
        ),
        ASK_TIMEOUT,
    )
    _, cited = assert_extractive(answer, "Rest the pancake batter for thirty minutes.")
    assert cited["path"] == "recipes.md"


async def test_an_answer_quotes_the_lines_it_cites(
    client: CitelineClient, folders: tuple[Path, Path]
) -> None:
    notes, _ = folders
    answer = await asyncio.wait_for(
        request(
            client,
            "citeline/ask",
            {"question": "How many hours of sun do tomatoes need?", "folder": notes.as_uri()},
        ),
        ASK_TIMEOUT,
    )
    _, cited = assert_extractive(answer, "Tomatoes need six hours of direct sun every day.")
    assert cited["path"] == "garden.md"


async def test_open_citation_without_show_document_support_says_no(
    client: CitelineClient,
) -> None:
    hit = (await search(client, "pancakes", k=1))[0]
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.openCitation", arguments=[hit])
    )
    assert shown is False


async def test_folders_come_and_go_with_the_workspace(
    client: CitelineClient, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    notes, recipes = folders
    extra = tmp_path / "extra"
    extra.mkdir()
    mark(extra)
    (extra / "extra.md").write_text("# Extra\n\nThe lighthouse keeper climbs 120 steps.\n")
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=extra.as_uri(), name="extra")],
                removed=[types.WorkspaceFolder(uri=recipes.as_uri(), name="recipes")],
            )
        )
    )
    await wait_ready(client, extra)
    await wait_until(
        client,
        lambda: folder_status(client, recipes) is None,
        CHANGE_TIMEOUT,
        "recipes to be dropped",
    )
    status = await request(client, "citeline/status", {})
    assert [f["uri"] for f in status["folders"]] == [notes.as_uri(), extra.as_uri()]
    hits = await search(client, "how many steps does the lighthouse keeper climb", k=1)
    assert hits[0]["path"] == "extra.md"
    assert hits[0]["folder"] == extra.as_uri()
