"""One folder as both front ends use it: update, search, ask, status."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from citeline.app import ModelPool, open_workspace
from citeline.backends.embedded import LOCK_FILE
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.answering.results import Answer
from citeline.core.generation import Generator
from citeline.core.walking import DocumentFilter
from citeline.service.workspace import Workspace, answer_mode, reranker_name
from citeline.settings import (
    EmbeddingSettings,
    GenerationSettings,
    RerankingSettings,
    Settings,
    load_settings,
)
from conftest import CountingEmbedder
from corpora import KITCHEN, write_files
from memory import ScriptedGenerator


@pytest.fixture()
def workspace(tmp_path: Path, models: ModelPool) -> Iterator[Workspace]:
    docs = write_files(tmp_path / "kitchen", KITCHEN)
    settings, _ = load_settings(docs)
    ws = open_workspace(docs, settings, models)
    ws.update()
    yield ws
    ws.close()


def test_search_defaults_to_the_top_k_setting(workspace: Workspace) -> None:
    hits = workspace.search("coffee machine descaling")
    assert 1 <= len(hits) <= workspace.settings.search.top_k
    assert hits[0].chunk.path == "kitchen.md"
    assert len(workspace.search("coffee", 1)) == 1


def test_a_batch_of_unchanged_paths_costs_one_check_and_no_write(
    workspace: Workspace, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_walk(self: DocumentFilter) -> None:
        raise AssertionError("a saved file must not walk the folder")

    monkeypatch.setattr(DocumentFilter, "walk", no_walk)
    before = embedder.embedded
    report = workspace.update(["kitchen.md"])
    assert report.files_changed == 0 and report.files == 1 and report.seconds == 0
    path = workspace.docs_root / "kitchen.md"
    path.write_text(path.read_text() + "\n## Tea\n\nThe kettle is descaled monthly.\n")
    report = workspace.update(["kitchen.md"])
    assert report.files_changed == 1 and embedder.embedded > before


def test_status_says_what_the_index_holds_and_what_built_it(workspace: Workspace) -> None:
    status = workspace.status()
    assert status.docs == workspace.docs_root and status.index == str(workspace.index_dir)
    assert (status.files, status.state, status.pending) == (1, "ready", 0)
    assert status.chunks == workspace.counts().chunks >= 1
    assert status.models.embedding == workspace.embedder.name and status.dimension == 384
    assert status.models.reranking is None and status.last_update is not None


def test_an_ask_is_answered_in_the_resolved_mode_and_recorded(workspace: Workspace) -> None:
    question = "How often is the coffee machine descaled with citric acid?"
    assert answer_mode(workspace.settings) == "extractive"  # the bundled answer model
    quoted = workspace.ask(question, generator=lambda: pytest.fail("not for a quote"))
    assert quoted.mode == "extractive" and not quoted.generator_called and quoted.citations
    record = json.loads((workspace.index_dir / "asks.jsonl").read_text().splitlines()[-1])
    assert record["models"] == {"embedding": workspace.embedder.name}
    workspace.settings = replace(
        workspace.settings, answer=replace(workspace.settings.answer, mode="generative")
    )
    written = workspace.ask(question, generator=lambda: ScriptedGenerator())
    assert written.generator_called
    record = json.loads((workspace.index_dir / "asks.jsonl").read_text().splitlines()[-1])
    assert record["models"]["generation"] == "scripted"


HANDBOOK = {
    "garden.md": "# Garden handbook\n\n## Watering\n\nWater the tomatoes every morning."
    " Use rain water from the barrel when it is full. Never water the leaves in full sun."
    "\n\n## Pruning\n\nPrune the roses in early spring. Cut above an outward-facing bud.\n",
}
WATERING = "How often should I water the tomatoes?"


def _quoted(answer: Answer) -> tuple[object, ...]:
    return (answer.text, answer.grade, [c.path for c in answer.citations])


def test_a_second_ask_of_the_same_evidence_embeds_no_unit_again(
    tmp_path: Path, models: ModelPool, embedder: CountingEmbedder
) -> None:
    docs = write_files(tmp_path / "handbook", HANDBOOK)
    settings, _ = load_settings(docs)
    ws = open_workspace(docs, settings, models)
    ws.update()
    before = embedder.embedded
    first = ws.ask(WATERING)
    units = embedder.embedded - before
    assert units > 0 and ws.unit_vectors.embedded == units and first.grade == "answer"
    again = ws.ask(WATERING)  # from memory
    assert embedder.embedded - before == units and _quoted(again) == _quoted(first)
    ws.close()  # keeps them in the index

    reopened = open_workspace(docs, settings, models)  # a new process would do the same
    reopened.update()
    before = embedder.embedded
    third = reopened.ask(WATERING)  # from the index's kept vectors
    assert embedder.embedded == before and _quoted(third) == _quoted(first)
    reopened.close()


def test_closing_never_waits_for_another_process_writing_the_index(
    tmp_path: Path, models: ModelPool, embedder: CountingEmbedder
) -> None:
    docs = write_files(tmp_path / "handbook", HANDBOOK)
    settings, _ = load_settings(docs)
    ws = open_workspace(docs, settings, models)
    ws.update()
    ws.ask(WATERING)
    fd = os.open(ws.index_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as another process's ingest would
        started = time.monotonic()
        ws.close()
        assert time.monotonic() - started < 5
    finally:
        os.close(fd)
    reopened = open_workspace(docs, settings, models)
    before = embedder.embedded
    reopened.ask(WATERING)  # not kept: embedded again
    assert embedder.embedded > before
    reopened.close()


def test_another_embedding_model_does_not_reuse_kept_unit_vectors(
    tmp_path: Path,
    models: ModelPool,
    embedder: CountingEmbedder,
    converted: LlamaEmbedder,
    real_generator: Generator,
) -> None:
    docs = write_files(tmp_path / "handbook", HANDBOOK)
    settings, _ = load_settings(docs)
    ws = open_workspace(docs, settings, models)
    ws.update()
    before = embedder.embedded
    ws.ask(WATERING)
    units = embedder.embedded - before
    ws.close()

    other = CountingEmbedder(converted)  # another model file: another fingerprint
    assert other.fingerprint != embedder.fingerprint
    pool = ModelPool(
        embedders={EmbeddingSettings(): other}, generators={GenerationSettings(): real_generator}
    )
    ws = open_workspace(docs, settings, pool)
    ws.update()  # every chunk embedded again, the kept vectors forgotten
    before = other.embedded
    ws.ask(WATERING)
    assert other.embedded - before == units > 0
    ws.close()


def test_auto_writes_answers_with_a_model_the_user_brings() -> None:
    own = Settings(generation=GenerationSettings(model="/models/qwen.gguf"))
    assert answer_mode(own) == "generative"
    assert answer_mode(replace(own, answer=replace(own.answer, mode="extractive"))) == "extractive"


def test_new_settings_that_keep_the_index_apply_in_place(workspace: Workspace) -> None:
    settings = Settings(reranking=RerankingSettings(model="/models/r.gguf", candidates=3))
    workspace.apply_settings(settings)
    assert workspace.retriever.rerank_candidates == 3 and workspace.settings is settings
    assert reranker_name(settings.reranking) == "r.gguf"
    assert reranker_name(RerankingSettings()) is None


def test_local_copies_say_whether_a_citation_can_jump(workspace: Workspace) -> None:
    assert workspace.local_copies(["kitchen.md", "gone.md"]) == {
        "kitchen.md": "same",
        "gone.md": "missing",
    }
    path = workspace.docs_root / "kitchen.md"
    path.write_text(path.read_text() + "\nA line added after indexing.\n")
    assert workspace.local_copies(["kitchen.md"]) == {"kitchen.md": "differs"}
    workspace.update()
    assert workspace.local_copies(["kitchen.md"]) == {"kitchen.md": "same"}
    assert not workspace.read_only and workspace.status().collection is None
