"""`citeline serve` driven as VS Code drives it (its captured client capabilities).

One server for the module (the models load once); tests that change the folder
on disk come last and each touches its own file.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from answer_checks import assert_extractive, cited_units
from lsp_harness import (
    ASK_TIMEOUT,
    CHANGE_TIMEOUT,
    TEST_SETTINGS,
    CitelineClient,
    expect_error,
    folder_status,
    lines_of,
    make_corpus,
    raw_request,
    request,
    search,
    start,
    stop,
    wait_for_search,
    wait_ready,
    wait_until,
    write_pdf,
)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITOR = "visual-studio-code"

# garden.md answers it in one sentence: "Tomatoes need six hours of direct sun every day."
SUN = "How many hours of sun do tomatoes need?"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus(tmp_path_factory.mktemp("vscode") / "docs")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(corpus: Path) -> AsyncIterator[CitelineClient]:
    client = await start(EDITOR, [corpus])
    try:
        await wait_ready(client, corpus)
        yield client
    finally:
        await stop(client)


async def test_status_reports_the_ready_folder_and_models(
    client: CitelineClient, corpus: Path
) -> None:
    status = await request(client, "citeline/status", {})
    (folder,) = status["folders"]
    assert folder["uri"] == corpus.as_uri()
    assert folder["state"] == "ready"
    assert folder["files"] == 4
    assert folder["chunks"] >= 4
    assert folder["pending"] == 0
    assert folder["errors"] == []
    assert status["models"]["embedding"].startswith("all-MiniLM-L6-v2")
    assert status["models"]["generation"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    # The initial indexing reported work-done progress, begin to end.
    kinds = [[r.kind for r in reports] for reports in client.progress_reports.values()]
    assert any(k and k[0] == "begin" and k[-1] == "end" for k in kinds)


async def test_search_returns_hits_with_links_to_the_lines(
    client: CitelineClient, corpus: Path
) -> None:
    hits = await search(client, "how many hours of sun do tomatoes need", k=3)
    top = hits[0]
    assert top["path"] == "garden.md"
    assert top["uri"] == (corpus / "garden.md").as_uri()
    assert top["folder"] == corpus.as_uri()
    assert "six hours of direct sun" in lines_of(top["uri"], top["range"])
    assert top["range"]["start"] == {"line": top["start_line"] - 1, "character": 0}
    assert top["range"]["end"] == {"line": top["end_line"], "character": 0}


async def test_search_finds_pdf_pages(client: CitelineClient, corpus: Path) -> None:
    hits = await search(client, "how often should the bicycle chain be lubricated", k=3)
    pdf = next(h for h in hits if h["path"] == "bicycle.pdf")
    assert pdf["page"] == 2
    assert pdf["uri"] == (corpus / "bicycle.pdf").as_uri() + "#page=2"
    assert pdf["range"] == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 0, "character": 0},
    }


async def test_ask_quotes_the_lines_that_hold_the_answer_and_sends_it_at_once(
    client: CitelineClient, corpus: Path
) -> None:
    token = "ask-sun"
    answer = await asyncio.wait_for(
        request(
            client,
            "citeline/ask",
            {"question": SUN, "partialResultToken": token},
        ),
        ASK_TIMEOUT,
    )
    assert answer["folder"] == corpus.as_uri()
    # With the bundled generator, answers are the documents' own sentences, cited.
    _, citation = assert_extractive(answer, "six hours of direct sun")
    assert citation["path"] == "garden.md"
    assert citation["uri"] == (corpus / "garden.md").as_uri()
    assert citation["range"]["start"]["line"] == citation["start_line"] - 1
    assert citation["range"]["end"]["line"] == citation["end_line"]
    for hit in answer["hits"]:
        assert hit["uri"].startswith(corpus.as_uri())
    # An extractive answer arrives at once: one delta, the whole text.
    assert client.deltas[token] == [answer["answer"]]


def configure(client: CitelineClient, **answer: Any) -> None:
    """The editor's settings: the test settings with ``answer`` keys added."""
    settings = {**TEST_SETTINGS, "answer": {**TEST_SETTINGS["answer"], **answer}}
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"citeline": settings})
    )


async def test_a_generative_answer_streams_then_settles(client: CitelineClient) -> None:
    configure(client, mode="generative")
    try:
        token = "ask-generative"
        answer = await asyncio.wait_for(
            request(
                client,
                "citeline/ask",
                {"question": SUN, "partialResultToken": token},
            ),
            ASK_TIMEOUT,
        )
    finally:
        configure(client)
    assert answer["generator_called"] is True
    assert client.deltas[token], "the generated text did not stream"
    streamed = "".join(client.deltas[token])
    cited = {c["n"] for c in answer["citations"]}
    assert {n for n, _ in cited_units(answer["answer"])} <= cited
    if answer["mode"] == "generative":
        # Every kept sentence cites its evidence; what the check removed is gone.
        assert answer["fallback"] is None
        assert cited_units(answer["answer"]), answer["answer"]
    else:
        # Nothing the small model wrote was supported: the documents' own sentences.
        assert answer["mode"] == "extractive"
        assert answer["fallback"] == "unsupported"
        assert answer["answer"] != streamed
    # The next ask is extractive again.
    again = await asyncio.wait_for(request(client, "citeline/ask", {"question": SUN}), ASK_TIMEOUT)
    assert again["mode"] == "extractive"


async def test_hover_searches_the_sentence_under_the_cursor(
    client: CitelineClient, corpus: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "question.md"
    text = "Some notes.\nWhich herb should be planted next to tomatoes? I forget.\n"
    scratch.write_text(text, "utf-8")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=scratch.as_uri(), language_id="markdown", version=1, text=text
            )
        )
    )
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=scratch.as_uri()),
            position=types.Position(line=1, character=12),
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    value = hover.contents.value
    assert f"]({(corpus / 'garden.md').as_uri()}#L" in value
    assert "Basil" in value.split("---")[0]


async def test_hover_uses_the_selection_the_client_sends(
    client: CitelineClient, corpus: Path
) -> None:
    # As the VS Code client's middleware does: the hover params carry the selection.
    result = await raw_request(
        client,
        "textDocument/hover",
        {
            "textDocument": {"uri": (corpus / "kitchen.md").as_uri()},
            "position": {"line": 0, "character": 0},
            "citeline": {"selection": "largest planet moons"},
        },
    )
    value = result["contents"]["value"]
    assert value.startswith("**[astronomy.md:")
    assert f"({(corpus / 'astronomy.md').as_uri()}#L" in value


async def test_commands_for_clients_that_only_speak_commands(
    client: CitelineClient, corpus: Path
) -> None:
    status = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.status", arguments=[])
    )
    assert status["folders"][0]["state"] == "ready"
    found = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.search", arguments=["bread dough rise", 2])
    )
    hit = found["hits"][0]
    assert hit["path"] == "kitchen.md"
    shown = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="citeline.openCitation", arguments=[hit])
    )
    assert shown is True
    request_ = client.shown_documents[-1]
    assert request_.uri == hit["uri"]
    assert request_.take_focus is True
    assert request_.selection is not None
    assert request_.selection.start.line == hit["range"]["start"]["line"]


async def test_malformed_requests_get_errors_and_the_server_keeps_serving(
    client: CitelineClient,
) -> None:
    await expect_error(request(client, "citeline/search", {"query": 5}), -32602)
    await expect_error(request(client, "citeline/search", {"query": "x", "k": "many"}), -32602)
    await expect_error(request(client, "citeline/search", {"query": "x", "colour": 1}), -32602)
    await expect_error(request(client, "citeline/ask", {}), -32602)
    await expect_error(request(client, "citeline/ask", ["not", "an", "object"]), -32602)
    await expect_error(
        request(client, "citeline/ask", {"question": "q", "folder": "file:///nowhere"}), -32803
    )
    await expect_error(request(client, "citeline/nonsense", {}), -32601)
    await expect_error(
        raw_request(
            client,
            "textDocument/hover",
            {"textDocument": {"uri": 7}, "position": {"line": "one"}},
        ),
        -32602,
    )
    await expect_error(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="citeline.search", arguments=[])
        ),
        -32602,
    )
    status = await request(client, "citeline/status", {})
    assert status["folders"][0]["state"] == "ready"


async def test_status_and_search_answer_while_an_answer_is_generating_and_cancel_stops_it(
    client: CitelineClient,
) -> None:
    configure(client, mode="generative")  # an answer being written, to cancel
    try:
        token = "ask-cancel"
        msg_id = "ask-to-cancel"
        ask = asyncio.ensure_future(
            request(
                client,
                "citeline/ask",
                {"question": SUN, "partialResultToken": token},
                msg_id=msg_id,
            )
        )
        await wait_until(client, lambda: client.deltas.get(token), ASK_TIMEOUT, "the first delta")
        assert not ask.done()
        started = time.monotonic()
        status = await request(client, "citeline/status", {})
        hits = await search(client, "Jupiter moons", k=1)
        elapsed = time.monotonic() - started
        assert status["folders"][0]["state"] == "ready"
        assert hits[0]["path"] == "astronomy.md"
        assert not ask.done(), "the answer finished before status and search came back"
        assert elapsed < 30
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        await expect_error(asyncio.wait_for(ask, ASK_TIMEOUT), -32800)
    finally:
        configure(client)
    # The server goes on answering.
    assert (await search(client, "Jupiter", k=1))[0]["path"] == "astronomy.md"


async def test_concurrent_asks_are_answered_in_order(client: CitelineClient) -> None:
    finished: list[str] = []

    async def ask(name: str, question: str) -> dict[str, Any]:
        result = await request(client, "citeline/ask", {"question": question})
        finished.append(name)
        return dict(result)

    first, second = await asyncio.wait_for(
        asyncio.gather(
            ask("first", "What temperature is bread baked at?"),
            ask("second", "What is the Great Red Spot?"),
        ),
        2 * ASK_TIMEOUT,
    )
    assert finished == ["first", "second"]
    # Which passages the small model cites varies; what it was given does not.
    assert first["hits"][0]["path"] == "kitchen.md"
    assert second["hits"][0]["path"] == "astronomy.md"


async def test_reindex_reports_the_folder(client: CitelineClient, corpus: Path) -> None:
    result = await asyncio.wait_for(request(client, "citeline/reindex", {}), CHANGE_TIMEOUT)
    (report,) = result["folders"]
    assert report["uri"] == corpus.as_uri()
    assert report["files"] == 4
    assert report["embedded"] == 0


async def test_a_missing_model_is_a_warning_and_the_default_not_a_crash(
    client: CitelineClient, tmp_path: Path
) -> None:
    broken = {**TEST_SETTINGS, "generation": {"model": str(tmp_path / "missing.gguf")}}
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"citeline": broken})
    )
    answer = await request(client, "citeline/ask", {"question": SUN})
    assert answer["citations"] and answer["model"] is None  # the bundled way, cited
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("missing.gguf does not exist" in w for w in warnings), warnings
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"citeline": TEST_SETTINGS})
    )
    assert (await search(client, "bread dough", k=1))[0]["path"] == "kitchen.md"


async def test_a_reranker_set_in_the_editor_reorders_search_results(
    client: CitelineClient, reranker_path: Path, tmp_path: Path
) -> None:
    def configure(**extra: Any) -> None:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"citeline": {**TEST_SETTINGS, **extra}})
        )

    configure(reranking={"model": str(reranker_path), "candidates": 3})
    hits = await search(client, "how many hours of sun do tomatoes need", k=4)
    assert [h["rerank"] is not None for h in hits] == [True, True, True, False]
    assert hits[0]["rerank"] >= hits[1]["rerank"] >= hits[2]["rerank"]
    status = await request(client, "citeline/status", {})
    assert status["models"]["reranking"] == reranker_path.name

    configure(reranking={"model": str(tmp_path / "missing-reranker.gguf")})
    (hit,) = await search(client, "bread dough", k=1)  # a warning, and no reranker
    assert hit["path"] == "kitchen.md" and hit["rerank"] is None
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("missing-reranker.gguf does not exist" in w for w in warnings), warnings

    configure()  # reranking off again
    (hit,) = await search(client, "bread dough", k=1)
    assert hit["path"] == "kitchen.md" and hit["rerank"] is None
    assert (await request(client, "citeline/status", {}))["models"]["reranking"] is None


# -- the folder changes on disk (watcher; no editor involved) ---------------------


async def test_an_edit_on_disk_is_found(client: CitelineClient, corpus: Path) -> None:
    path = corpus / "kitchen.md"
    path.write_text(
        path.read_text("utf-8")
        + "\n## Starter\n\nFeed the sourdough starter with rye flour every Tuesday evening.\n",
        "utf-8",
    )
    hits = await wait_for_search(
        client,
        "when is the sourdough starter fed",
        lambda hits: bool(hits) and "rye flour" in hits[0]["text"],
        "the edit to be searchable",
    )
    assert "rye flour every Tuesday" in lines_of(hits[0]["uri"], hits[0]["range"])


async def test_a_save_reported_by_the_editor_is_indexed(
    client: CitelineClient, corpus: Path
) -> None:
    path = corpus / "garden.md"
    path.write_text(
        path.read_text("utf-8") + "\n## Mint\n\nGrow mint in a pot: it spreads everywhere.\n",
        "utf-8",
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )
    await wait_for_search(
        client,
        "why grow mint in a pot",
        lambda hits: bool(hits) and "mint in a pot" in hits[0]["text"],
        "the saved file to be searchable",
    )


async def test_a_deleted_file_is_gone(client: CitelineClient, corpus: Path) -> None:
    (corpus / "astronomy.md").unlink()
    await wait_for_search(
        client,
        "Jupiter Great Red Spot storm",
        lambda hits: all(h["path"] != "astronomy.md" for h in hits),
        "the deleted file to leave the index",
    )
    entry = folder_status(client, corpus)
    assert entry is not None


async def test_a_corrupt_pdf_gets_a_diagnostic_until_it_is_fixed(
    client: CitelineClient, corpus: Path
) -> None:
    broken = corpus / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\n this is not really a PDF \n%%EOF\n")
    uri = broken.as_uri()
    diagnostics = await wait_until(
        client, lambda: client.diagnostics.get(uri), CHANGE_TIMEOUT, "a diagnostic"
    )
    (diagnostic,) = diagnostics
    assert diagnostic.source == "citeline"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start == types.Position(0, 0)
    assert diagnostic.message
    status = await request(client, "citeline/status", {})
    assert any(e["path"] == "broken.pdf" for e in status["folders"][0]["errors"])

    write_pdf(broken, ["Repaired document about harbour cranes and their counterweights."])
    await wait_until(
        client,
        lambda: uri in client.diagnostics and len(client.diagnostics[uri]) == 0,
        CHANGE_TIMEOUT,
        "the diagnostic to clear",
    )
    hits = await search(client, "harbour cranes counterweights", k=1)
    assert hits[0]["path"] == "broken.pdf"
