"""The vocabulary bridge with the real default embedder (all-MiniLM-L6-v2)."""

from __future__ import annotations

from citeline.core.answering.bridge import THRESHOLD, Bridge
from conftest import CountingEmbedder


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
