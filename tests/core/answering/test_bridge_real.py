"""The vocabulary bridge with the real default embedder (all-MiniLM-L6-v2)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.bridge import THRESHOLD, Bridge
from citeline.service.workspace import Workspace
from citeline.settings import Settings
from conftest import CountingEmbedder, copy_samples


def test_everyday_words_link_to_the_documents_words(embedder: CountingEmbedder) -> None:
    bridge = Bridge(embedder.embed_documents, THRESHOLD)
    links = bridge.links(
        "How do I make it ignore a folder?",
        ["Excluding directories", "Patterns in `exclude` leave files out of the index."],
    )
    assert "exclud" in links["ignor"] and "directori" in links["folder"]
    assert all(THRESHOLD <= c < 1.0 for near in links.values() for c in near.values())
    # "install" finds "setup"; a term the evidence holds needs no bridge
    assert "setup" in bridge.links("how do I install it", ["Setup"]).get("instal", {})
    assert bridge.links("how do I install it", ["Installing"]) == {}
    # words that mean something else are not linked
    assert bridge.links("How do I rename a file?", ["Moving the index"]) == {}


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    docs = copy_samples(tmp_path_factory.mktemp("samples") / "samples")
    settings = Settings()
    ws = open_workspace(docs, settings, ModelPool())
    ws.update()
    ws.settings = dataclasses.replace(
        settings, records=dataclasses.replace(settings.records, asks=False)
    )
    yield ws
    ws.close()


def test_the_samples_quote_the_formats_list(samples: Workspace) -> None:
    answer = samples.ask("What file types are supported?")
    assert answer.grade in ("answer", "closest") and answer.mode == "extractive", answer.text
    assert all(f in answer.text for f in ("Markdown", "HTML", "PDF")), answer.text
    sections = {(c.path, c.section.split(" > ")[-1]) for c in answer.citations}
    assert sections & {
        ("getting-started.md", "What it reads"),
        ("how-indexing-works.md", "Loading a file"),
    }, (sections, answer.text)
