"""The service the language server fronts, with real models and real folders:
routing, merged search, asks on the generation worker with retrieval on the
index worker, reindex reports, status."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from citeline.app import ModelPool
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator
from citeline.service.errors import ServiceError
from citeline.service.service import Service
from citeline.settings import EmbeddingSettings, GenerationSettings
from corpora import GARDEN, KITCHEN, write_files
from recording import RecordingEvents, StateEvents, settled

# Small answers keep generation time down on a busy machine.
ANSWER = {"answer": {"max_answer_tokens": 32, "timeout_seconds": 600}}


class ThreadRecordingEmbedder:
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.threads: set[str] = set()
        self.name, self.fingerprint, self.dimension = inner.name, inner.fingerprint, inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.add(threading.current_thread().name)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.threads.add(threading.current_thread().name)
        return self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


class ThreadRecordingGenerator:
    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.threads: set[str] = set()
        self.name, self.context_size = inner.name, inner.context_size

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def stream_chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        self.threads.add(threading.current_thread().name)
        yield from self.inner.stream_chat(messages, **kwargs)


async def ready(service: Service, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while any(f.state != "ready" or not settled(f) for f in service.folders) or not len(
        service.folders
    ):
        assert time.monotonic() < deadline, [f.status("g").to_json() for f in service.folders]
        await asyncio.sleep(0.05)


@pytest.fixture()
def recorded(real_embedder: Embedder, real_generator: Generator) -> Iterator[ModelPool]:
    yield ModelPool(
        embedders={EmbeddingSettings(): ThreadRecordingEmbedder(real_embedder)},
        generators={GenerationSettings(): ThreadRecordingGenerator(real_generator)},
    )


@pytest.fixture()
async def service(tmp_path: Path, recorded: ModelPool) -> AsyncIterator[Service]:
    garden = write_files(tmp_path / "garden", GARDEN)
    kitchen = write_files(tmp_path / "kitchen", KITCHEN)
    service = Service(recorded, RecordingEvents())
    service.folders.editor_settings = ANSWER
    service.serve([garden, kitchen])
    await ready(service)
    yield service
    await service.shutdown(30)
    service.stop(30)


async def test_search_merges_every_folder_and_ranks_anew(service: Service, tmp_path: Path) -> None:
    found = await service.search("How much sun do tomatoes need?", 4, None)
    assert [f.hit.rank for f in found] == list(range(1, len(found) + 1))
    assert found[0].folder.root == tmp_path / "garden"
    assert {f.folder.name for f in found} == {"garden", "kitchen"}
    scores = [f.hit.score for f in found]
    assert scores == sorted(scores, reverse=True)
    only = await service.search("coffee", None, tmp_path / "kitchen")
    assert only and {f.folder.name for f in only} == {"kitchen"}
    assert len(only) <= 5  # search.top_k


async def test_a_folder_not_served_is_a_one_line_error(service: Service, tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="not a documents folder Citeline serves"):
        await service.search("x", 3, tmp_path / "elsewhere")


async def test_read_text_reads_only_regular_bounded_files_inside_the_folders(
    service: Service, tmp_path: Path
) -> None:
    garden = tmp_path / "garden"
    note = garden / "note.md"
    note.write_bytes(b"Tomatoes \xff need sun.\n")
    assert await service.read_text(note) == "Tomatoes \ufffd need sun.\n"
    os.mkfifo(garden / "pipe.md")
    (garden / "big.md").write_bytes(b"x" * (21 * 1024 * 1024))  # over the 20 MB default
    refused = {
        Path("/etc/passwd"): "outside the documents folders",
        garden / ".." / ".." / "etc" / "passwd": "outside the documents folders",
        garden / "pipe.md": "not a regular file",
        garden / "big.md": "over the 20 MB limit",
        garden / "missing.md": "no such file",
    }
    for path, why in refused.items():
        with pytest.raises(ServiceError, match=why):
            await asyncio.wait_for(service.read_text(path), 10)


async def test_an_ask_goes_to_the_folder_that_holds_the_answer_on_the_right_threads(
    service: Service, recorded: ModelPool, tmp_path: Path
) -> None:
    embedder = recorded.embedders[EmbeddingSettings()]
    generator = recorded.generators[GenerationSettings()]
    assert isinstance(embedder, ThreadRecordingEmbedder)
    assert isinstance(generator, ThreadRecordingGenerator)
    embedder.threads.clear()
    pieces: list[str] = []
    folder, answer = await service.ask(
        "How often is the coffee machine descaled?", None, pieces.append
    )
    assert folder.root == tmp_path / "kitchen"
    assert answer.hits and answer.hits[0].chunk.path == "kitchen.md"
    # the folder's workspace (its embedder) only on the index worker, the model on the other
    assert embedder.threads == {"citeline-index"}
    if answer.generator_called:
        assert generator.threads == {"citeline-generation"}
        assert "".join(pieces).strip() == answer.text.strip()
    assert (tmp_path / "kitchen" / ".citeline" / "asks.jsonl").exists()


async def test_an_ask_cancelled_while_queued_never_runs(service: Service) -> None:
    gate = threading.Event()
    service.workers.generation.submit(gate.wait)  # the generation worker is busy
    task = asyncio.ensure_future(service.ask("Where do tomatoes grow best?", None))
    await asyncio.sleep(0.5)
    task.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_reindex_reports_each_folder(service: Service, tmp_path: Path) -> None:
    (tmp_path / "garden" / "roses.md").write_text("# Roses\n\nPrune roses in March.\n")
    reports = await service.reindex(tmp_path / "garden")
    ((folder, report),) = reports
    assert folder.name == "garden" and report.files == 2  # (the watcher may have seen it first)
    assert {f.name for f, _ in await service.reindex(None)} == {"garden", "kitchen"}


async def test_status_is_answered_from_the_loops_state(service: Service, tmp_path: Path) -> None:
    status = service.status()
    assert [s.docs for s in status.folders] == [tmp_path / "garden", tmp_path / "kitchen"]
    garden = status.folders[0]
    assert garden.state == "ready" and garden.files == 1 and garden.chunks >= 1
    assert garden.dimension == 384 and garden.last_update is not None
    assert status.models.embedding and status.models.embedding.endswith(".gguf")
    assert status.models.generation and status.models.reranking is None


async def test_what_changed_while_the_server_was_down_is_indexed_after_a_ready_start(
    tmp_path: Path, recorded: ModelPool
) -> None:
    garden = write_files(tmp_path / "garden", GARDEN)
    first = Service(recorded, RecordingEvents())
    first.serve([garden])
    await ready(first)
    await first.shutdown(30)
    first.stop(30)
    # While no server runs: one file edited, one added.
    with (garden / "garden.md").open("a") as handle:
        handle.write("\n## Marigolds\n\nMarigolds planted between the rows keep aphids away.\n")
    (garden / "roses.md").write_text("# Roses\n\nPrune the roses in March, above a bud.\n")
    events = StateEvents()
    service = Service(recorded, events)
    try:
        service.serve([garden])
        (folder,) = service.folders
        events.watched = folder
        events.states = [(folder.state, folder.files)]
        await ready(service)
        # Searchable on the index as it was, then indexing what changed, then ready.
        assert events.states == [("indexing", 0), ("ready", 1), ("indexing", 1), ("ready", 2)]
        hits = await service.search("what keeps aphids away", None, None)
        assert "Marigolds" in hits[0].hit.chunk.text
        hits = await service.search("when to prune roses", None, None)
        assert hits[0].hit.chunk.path == "roses.md"
    finally:
        await service.shutdown(30)
        service.stop(30)


async def test_without_folders_requests_say_so() -> None:
    service = Service(ModelPool(), RecordingEvents())
    try:
        with pytest.raises(ServiceError, match="no documents folder"):
            await service.search("x", None, None)
        assert service.status().folders == []
    finally:
        service.stop(5)


async def test_history_of_every_served_folder(service: Service, tmp_path: Path) -> None:
    await service.ask("How often is the coffee machine descaled?", tmp_path / "kitchen")
    await service.ask("How much sun do tomatoes need?", tmp_path / "garden")
    found = await service.history(None, None, 50, 0)
    assert found.total == 2
    assert [e.folder.name for e in found.entries] == ["garden", "kitchen"]
    kitchen = await service.history(tmp_path / "kitchen", "COFFEE", 50, 0)
    assert [e.folder.name for e in kitchen.entries] == ["kitchen"]
    recorded = await service.history_entry(kitchen.entries[0].id)
    assert recorded.folder == tmp_path / "kitchen" and not recorded.stale
    with pytest.raises(ServiceError, match="no past answer 'nope'"):
        await service.history_entry("nope")
    with pytest.raises(ServiceError, match="not a documents folder Citeline serves"):
        await service.history(tmp_path / "elsewhere", None, 50, 0)
    assert await service.delete_history(kitchen.entries[0].id, None) == 1
    assert await service.delete_history(None, tmp_path / "garden") == 1
    assert (await service.history(None, None, 50, 0)).total == 0
