"""The DocumentIndex contract, run against every implementation: what ingest and
retrieval rely on.  A server-side backend (a database holding files, chunks,
vectors and keyword terms) is added to ``BACKENDS`` and must pass as it stands:
the team index on PostgreSQL does, with a real server (``postgres`` fixture).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.faiss import FaissVectorIndex
from citeline.backends.postgres.index import PostgresIndex
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.index import DocumentIndex, IndexCounts, IndexIdentity, NewChunk
from citeline.core.keywords import terms
from memory import MemoryVectorIndex
from updates import file_update

IDENTITY = IndexIdentity("model-a", "a.gguf", 3, ChunkSettings())


@dataclass
class Place:
    """Where one test's index lives: a folder, or a collection on the test server."""

    folder: Path
    request: pytest.FixtureRequest
    collection: str = ""

    def postgres(self) -> str:
        server = self.request.getfixturevalue("postgres")
        self.collection = self.collection or server.fresh_collection()
        return str(server.url)


# Each opens the index at a place; opening twice gives two handles on one index, as
# two processes would have.
BACKENDS: dict[str, Callable[[Place, IndexIdentity], DocumentIndex]] = {
    "embedded-faiss": lambda place, identity: EmbeddedIndex(
        place.folder, identity, FaissVectorIndex
    ),
    "embedded-memory": lambda place, identity: EmbeddedIndex(
        place.folder, identity, MemoryVectorIndex
    ),
    "postgresql": lambda place, identity: PostgresIndex(
        place.postgres(), place.collection, identity, read_only=False
    ),
    "postgresql-exact": lambda place, identity: PostgresIndex(
        place.postgres(), place.collection, identity, read_only=False, exact=True
    ),
}

Opener = Callable[[IndexIdentity], DocumentIndex]


@pytest.fixture(params=list(BACKENDS))
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[DocumentIndex] = []
    place = Place(tmp_path / "index", request)

    def opener(identity: IndexIdentity = IDENTITY) -> DocumentIndex:
        opened.append(BACKENDS[request.param](place, identity))
        return opened[-1]

    yield opener
    for index in opened:
        index.close()


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def put(
    index: DocumentIndex,
    path: str,
    texts: list[str],
    vectors: list[np.ndarray],
    *,
    stored: frozenset[str] = frozenset(),
    error: str | None = None,
) -> tuple[list[int], list[int]]:
    chunks = [
        NewChunk(
            Chunk(path, "Title", ("Title",), text, i + 1, i + 1, None, i),
            f"k-{text}",
            " ".join(terms(text)),
        )
        for i, text in enumerate(texts)
    ]
    new = {c.vector_key: v for c, v in zip(chunks, vectors, strict=True)}
    return index.replace_file(
        file_update(
            path,
            chunks,
            np.stack(vectors) if vectors else None,
            new_vectors={k: v for k, v in new.items() if k not in stored},
            title="Title",
            content_hash=f"hash-{os.fsencode(path).decode('latin-1')}-{len(texts)}",
            size=10,
            error=error,
        )
    )


def test_a_new_index_is_empty(open_index: Opener) -> None:
    index = open_index()
    assert index.identity == IDENTITY and index.location and not index.read_only
    assert index.files() == {} and index.file_errors() == []
    assert index.counts() == IndexCounts(0, 0) and index.last_update() is None
    assert index.dense_search(unit(1, 0, 0), 5) == []
    assert index.keyword_search(["sun"], 5) == []
    assert index.document_frequencies(["sun"]) == (0, {})


def test_a_file_is_replaced_whole_and_found_by_every_search(open_index: Opener) -> None:
    index = open_index()
    before = time.time()
    with index.writing():
        removed, added = put(
            index,
            "garden.md",
            ["Tomatoes need sun.", "Basil likes warm soil."],
            [unit(1, 0, 0), unit(0, 1, 0)],
        )
    assert removed == [] and len(added) == 2
    record = index.files()["garden.md"]
    assert (record.kind, record.content_hash, record.error) == (
        "markdown",
        "hash-garden.md-2",
        None,
    )
    assert index.counts() == IndexCounts(1, 2)
    assert (index.last_update() or 0) >= before - 1
    chunks = index.chunks_by_id(added)
    assert [chunks[i].text for i in added] == ["Tomatoes need sun.", "Basil likes warm soil."]
    assert chunks[added[0]].start_line == 1 and chunks[added[0]].heading_path == ("Title",)
    assert index.dense_search(unit(1, 0.1, 0), 1)[0][0] == added[0]
    assert index.similarity(unit(0, 1, 0), [added[1], 424242]) == {added[1]: pytest.approx(1.0)}
    assert [i for i, _ in index.keyword_search(terms("warm basil"), 5)] == [added[1]]
    assert index.document_frequencies(terms("sun")) == (2, {"sun": 1})
    assert index.content_hashes(["garden.md", "absent.md"]) == {"garden.md": "hash-garden.md-2"}
    # replacing the file replaces every chunk, its terms and its vectors
    with index.writing():
        removed, again = put(
            index,
            "garden.md",
            ["Tomatoes need sun."],
            [unit(1, 0, 0)],
            stored=frozenset({"k-Tomatoes need sun."}),
        )
    assert sorted(removed) == sorted(added) and len(again) == 1
    assert index.counts() == IndexCounts(1, 1)
    assert index.keyword_search(terms("basil"), 5) == []
    assert [i for i, _ in index.dense_search(unit(0, 1, 0), 5)] == again


def test_vectors_are_kept_by_content_key(open_index: Opener) -> None:
    index = open_index()
    with index.writing():
        put(index, "a.md", ["Same text."], [unit(0, 0, 1)])
    assert set(index.vectors_for_keys(["k-Same text.", "k-unknown"])) == {"k-Same text."}
    assert index.vectors_for_keys(["k-Same text."])["k-Same text."] == pytest.approx(unit(0, 0, 1))


def test_vectors_kept_before_any_file_survive_an_interruption(open_index: Opener) -> None:
    index = open_index()
    with contextlib.suppress(KeyboardInterrupt), index.writing():
        index.add_vectors({"k-Early.": unit(0, 1, 1)})
        raise KeyboardInterrupt  # the run stops before its first file commit
    index.close()
    again = open_index()
    assert set(again.vectors_for_keys(["k-Early."])) == {"k-Early."}
    assert again.files() == {} and again.counts() == IndexCounts(0, 0)
    with again.writing():  # a file that uses them later: stored once, found by search
        (added,) = put(again, "a.md", ["Early."], [unit(0, 1, 1)], stored=frozenset({"k-Early."}))[
            1
        ]
    assert again.dense_search(unit(0, 1, 1), 1)[0][0] == added


def test_paths_that_are_not_utf8_and_notes_round_trip(open_index: Opener) -> None:
    index = open_index()
    name = os.fsdecode(b"caf\xe9.md")
    with index.writing():
        (added,) = put(index, name, ["Latin one."], [unit(1, 1, 0)])[1]
        index.replace_file(
            file_update(
                "scan.pdf",
                [],
                kind="pdf",
                title="Scan",
                note="left out 2 running header/footer line(s)",
            )
        )
    assert set(index.files()) == {name, "scan.pdf"}
    assert index.chunks_by_id([added])[added].path == name
    assert index.file_notes() == [("scan.pdf", "left out 2 running header/footer line(s)")]
    with index.writing():
        index.remove_files([name])
    assert set(index.files()) == {"scan.pdf"}


def test_errors_touches_and_removal(open_index: Opener) -> None:
    index = open_index()
    with index.writing():
        put(index, "scan.pdf", [], [], error="PDF has no text layer (scanned?)")
        put(index, "a.md", ["Alpha."], [unit(1, 0, 0)])
        index.touch_file("a.md", 99, 12345)
    assert index.file_errors() == [("scan.pdf", "PDF has no text layer (scanned?)")]
    assert index.content_hashes(["scan.pdf"]) == {}  # a file in error has no usable hash
    assert index.counts() == IndexCounts(1, 1)  # a file in error is not counted
    assert (index.files()["a.md"].size, index.files()["a.md"].mtime_ns) == (99, 12345)
    assert index.files(["a.md", "nope.md"]) == {"a.md": index.files()["a.md"]}  # only those
    with index.writing():
        removed = index.remove_files(["a.md", "scan.pdf"])
        index.prune_vectors()
    assert len(removed) == 1 and index.files() == {} and index.file_errors() == []
    assert index.dense_search(unit(1, 0, 0), 5) == []


def test_another_handle_sees_committed_changes_after_refresh(open_index: Opener) -> None:
    reader, writer = open_index(), open_index()
    heard = threading.Event()
    tells = reader.subscribe(heard.set)  # an index that can tell, tells
    before = reader.generation()
    with writer.writing():
        (added,) = put(writer, "b.md", ["Bravo."], [unit(0, 1, 0)])[1]
    reader.refresh()
    assert reader.generation() > before
    assert reader.dense_search(unit(0, 1, 0), 1)[0][0] == added
    assert reader.chunks_by_id([added])[added].text == "Bravo."
    assert not tells or heard.wait(10)


def test_another_model_starts_over_and_other_chunking_keeps_vectors(open_index: Opener) -> None:
    index = open_index()
    with index.writing():
        put(index, "a.md", ["Alpha."], [unit(1, 0, 0)])
    index.close()
    rechunked = open_index(IndexIdentity("model-a", "a.gguf", 3, ChunkSettings(max_cost=500)))
    assert rechunked.files() == {} and set(rechunked.vectors_for_keys(["k-Alpha."])) == {"k-Alpha."}
    rechunked.close()
    other = open_index(IndexIdentity("model-b", "b.gguf", 3, ChunkSettings(max_cost=500)))
    assert other.files() == {} and other.vectors_for_keys(["k-Alpha."]) == {}
