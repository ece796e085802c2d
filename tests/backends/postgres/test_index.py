"""The team index beyond the DocumentIndex contract (tests/contracts/): readers are
read-only and guard the embedding model, writers exclude each other, retrieval agrees
with the embedded index on the same chunks, vectors outlive their chunks for a while,
and a lost server is an IndexUnavailable that heals on its own; a writer's searches
read the committed collection while a big file is written.  A real server."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.faiss import FaissVectorIndex
from citeline.backends.postgres.connection import CollectionMissing, DatabaseUnavailable, WriterBusy
from citeline.backends.postgres.index import WRITE_SLICE, PostgresIndex
from citeline.core.chunking import ChunkSettings
from citeline.core.documents import Chunk
from citeline.core.errors import BackendError, IndexMismatch, IndexUnavailable
from citeline.core.index import DocumentIndex, IndexIdentity, NewChunk
from citeline.core.keywords import query_terms, terms
from postgres import TestServer
from updates import file_update

MODEL_A = IndexIdentity("model-a", "a.gguf", 8, ChunkSettings())
MODEL_B = IndexIdentity("model-b", "b.gguf", 8, ChunkSettings())

TEXTS = [
    "Edit pg_hba.conf to allow password authentication, then reload the server.",
    "The server keeps its index in the documents folder.",
    "Reload the page to see the new index. Reload it again if the index is stale.",
    "索引保存在文档文件夹里。",
    "Tomatoes need six hours of sun; the café serves them with basil.",
    "Bake the loaf at 230 degrees for thirty-five minutes.",
    "Jupiter has at least ninety-five moons, and a cafe named after it.",
]


def vector(seed: int, dimension: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dimension).astype(np.float32)
    return v / np.linalg.norm(v)


def put(index: DocumentIndex, path: str, texts: list[str], seed: int = 0) -> list[int]:
    chunks = [
        NewChunk(Chunk(path, "T", ("T",), t, i + 1, i + 1, None, i), f"k-{t}", " ".join(terms(t)))
        for i, t in enumerate(texts)
    ]
    vectors = np.stack([vector(seed + i) for i in range(len(texts))])
    _, added = index.replace_file(file_update(path, chunks, vectors, content_hash=f"h-{path}"))
    return added


@pytest.fixture()
def collection(postgres: TestServer) -> str:
    return postgres.fresh_collection()


def writer(
    postgres: TestServer, collection: str, identity: IndexIdentity = MODEL_A
) -> PostgresIndex:
    return PostgresIndex(postgres.url, collection, identity, read_only=False)


def test_a_reader_never_writes(postgres: TestServer, collection: str) -> None:
    w = writer(postgres, collection)
    with w.writing():
        put(w, "a.md", TEXTS[:2])
    reader = PostgresIndex(postgres.url, collection, MODEL_A, read_only=True)
    try:
        assert reader.read_only and reader.counts().chunks == 2
        with pytest.raises(BackendError, match="read-only"), reader.writing():
            pass
        with pytest.raises(BackendError, match="read-only"):
            reader.remove_files(["a.md"])
        # the server itself refuses a reader's writes
        conn = reader._connection()
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute(f"DELETE FROM citeline_{collection}.files")
    finally:
        reader.close()
        w.close()


def test_a_reader_of_a_missing_collection_is_told_how_to_make_it(postgres: TestServer) -> None:
    with pytest.raises(CollectionMissing, match="citeline index --store URL --collection nothing"):
        PostgresIndex(postgres.url, "nothing", MODEL_A, read_only=True)
    assert issubclass(CollectionMissing, IndexUnavailable)  # the service retries it


def test_a_reader_with_another_model_gets_both_names(postgres: TestServer, collection: str) -> None:
    w = writer(postgres, collection)
    with w.writing():
        put(w, "a.md", TEXTS[:1])
    with pytest.raises(IndexMismatch, match=r"a\.gguf \(8 dimensions\).*b\.gguf \(8 dimensions\)"):
        PostgresIndex(postgres.url, collection, MODEL_B, read_only=True)
    reader = PostgresIndex(postgres.url, collection, MODEL_A, read_only=True)
    # the writer moves to model B: the reader's next refresh says so
    w.close()
    writer(postgres, collection, MODEL_B).close()
    with pytest.raises(IndexMismatch, match=r"b\.gguf"):
        reader.refresh()
    reader.close()


def test_two_writers_exclude_each_other(postgres: TestServer, collection: str) -> None:
    first, second = writer(postgres, collection), writer(postgres, collection)
    with first.writing():
        put(first, "a.md", TEXTS[:1])
        with pytest.raises(WriterBusy, match=r"another writer .*citeline writer"), second.writing():
            pass
    with second.writing():  # free again once the first is done
        put(second, "b.md", TEXTS[1:2])
    assert first.counts().files == 2
    # a writer with another model may not start over under a running writer
    with first.writing(), pytest.raises(WriterBusy, match="another embedding model"):
        writer(postgres, collection, MODEL_B)
    first.close()
    second.close()


def test_retrieval_agrees_with_the_embedded_index(
    postgres: TestServer, collection: str, tmp_path: Path
) -> None:
    embedded = EmbeddedIndex(tmp_path / "idx", MODEL_A, FaissVectorIndex)
    team = writer(postgres, collection)
    exact = PostgresIndex(postgres.url, collection, MODEL_A, read_only=True, exact=True)
    for index in (embedded, team):
        with index.writing():
            put(index, "a.md", TEXTS[:4])
            put(index, "b.md", TEXTS[4:], seed=10)
    ids = dict(
        zip(
            sorted(embedded.chunks_by_id(range(1, 100))),
            sorted(team.chunks_by_id(range(1, 100))),
            strict=True,
        )
    )
    for query in ["reload index", "pg_hba.conf", "索引保存在哪里", "cafe", "café sun", "moons"]:
        q = query_terms(query)
        want = [(ids[i], s) for i, s in embedded.keyword_search(q, 10)]
        got = team.keyword_search(q, 10)
        assert [i for i, _ in got] == [i for i, _ in want], query
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9), query
        assert team.document_frequencies(q) == embedded.document_frequencies(q) or "é" in query
    for seed in range(5):
        query = vector(100 + seed)
        want = [(ids[i], s) for i, s in embedded.dense_search(query, 5)]
        for index in (team, exact):
            got = index.dense_search(query, 5)
            assert [i for i, _ in got] == [i for i, _ in want]
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    team.close()
    exact.close()
    embedded.close()


def test_hnsw_recall_against_exact_search(postgres: TestServer, collection: str) -> None:
    team = writer(postgres, collection, IndexIdentity("m", "m.gguf", 32, ChunkSettings()))
    rng = np.random.default_rng(7)
    with team.writing():
        for f in range(40):
            texts = [f"note {f} part {i}" for i in range(50)]
            vectors = rng.normal(size=(50, 32)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            chunks = [
                NewChunk(Chunk(f"{f}.md", "T", (), t, i + 1, i + 1, None, i), f"k{f}-{i}", t)
                for i, t in enumerate(texts)
            ]
            team.replace_file(file_update(f"{f}.md", chunks, vectors))
    exact = PostgresIndex(postgres.url, collection, team.identity, read_only=True, exact=True)
    found = 0
    for _ in range(30):
        q = rng.normal(size=32).astype(np.float32)
        q /= np.linalg.norm(q)
        truth = {i for i, _ in exact.dense_search(q, 10)}
        found += len(truth & {i for i, _ in team.dense_search(q, 10)})
    assert found / 300 >= 0.95
    team.close()
    exact.close()


def test_vectors_outlive_their_chunks_for_a_while(postgres: TestServer, collection: str) -> None:
    team = writer(postgres, collection)
    with team.writing():
        put(team, "a.md", TEXTS[:2])
        team.remove_files(["a.md"])
        assert set(team.vectors_for_keys([f"k-{TEXTS[0]}"])) == {f"k-{TEXTS[0]}"}
        assert team.prune_vectors() == 0  # kept a week
        postgres.execute(f"UPDATE citeline_{collection}.vectors SET last_used = 0")
        assert team.prune_vectors() == 2
    assert team.vectors_for_keys([f"k-{TEXTS[0]}"]) == {}
    team.close()


def test_seeded_vectors_are_reused(postgres: TestServer, collection: str) -> None:
    team = writer(postgres, collection)
    assert (
        team.import_vectors([[("k-x", vector(1)), ("k-y", vector(2))], [("k-x", vector(1))]]) == 3
    )
    found = team.vectors_for_keys(["k-x", "k-y", "k-z"])
    assert set(found) == {"k-x", "k-y"} and found["k-y"] == pytest.approx(vector(2))
    team.close()


def test_a_lost_server_is_unavailable_until_it_returns() -> None:
    server = TestServer()
    try:
        team = PostgresIndex(server.url, "outage", MODEL_A, read_only=False)
        with team.writing():
            put(team, "a.md", TEXTS[:2])
        reader = PostgresIndex(server.url, "outage", MODEL_A, read_only=True)
        calls: list[float] = []
        heard = threading.Event()

        def changed() -> None:
            calls.append(time.monotonic())
            heard.set()

        assert reader.subscribe(changed)
        server.stop()
        assert heard.wait(30), "the listener did not report the loss"
        with pytest.raises(DatabaseUnavailable, match="#outage cannot be reached"):
            reader.keyword_search(["server"], 5)
        heard.clear()
        server.start()
        assert heard.wait(30), "the listener did not report the return"
        assert [i for i, _ in reader.dense_search(vector(0), 1)] != []  # the same handle works
        reader.close()
        team.close()
    finally:
        server.close()


def test_searches_from_two_threads_share_one_connection(
    postgres: TestServer, collection: str
) -> None:
    """A hybrid search runs its keyword half on another thread beside the dense half:
    both on the reader's one connection.  Each keeps its transaction to itself (a
    keyword search's snapshot never becomes a savepoint of a dense search's
    transaction), and every answer is the one a lone search gives."""
    w = writer(postgres, collection)
    with w.writing():
        put(w, "a.md", TEXTS)
    reader = PostgresIndex(postgres.url, collection, MODEL_A, read_only=True)
    q = query_terms("reload the index")
    want_keyword = reader.keyword_search(q, 5)
    want_dense = reader.dense_search(vector(3), 5)
    assert want_keyword and want_dense
    errors: list[BaseException] = []
    got: dict[str, list[list[tuple[int, float]]]] = {"keyword": [], "dense": []}

    def loop(name: str) -> None:
        try:
            for _ in range(150):
                if name == "keyword":
                    got[name].append(reader.keyword_search(q, 5))
                else:
                    got[name].append(reader.dense_search(vector(3), 5))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(n,)) for n in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert got["keyword"] == [want_keyword] * 150
    assert got["dense"] == [want_dense] * 150
    reader.close()
    w.close()


def test_the_writers_searches_read_the_old_file_while_a_big_one_is_replaced(
    postgres: TestServer, collection: str
) -> None:
    """A big file is written a slice at a time with the writing block's ``between``
    after each: the writer's own searches there (and a keyword half on another thread,
    as a hybrid search runs it) are answered on its second connection, from the
    committed collection: every hit is of the file's old version until the commit,
    then of the new one; never a mix, never a wait for the write."""
    size = 3 * WRITE_SLICE + 10
    old_texts = [f"old passage {i} about the harbour lighthouse" for i in range(size)]
    new_texts = [f"new passage {i} about the harbour lighthouse" for i in range(size)]
    w = writer(postgres, collection)
    with w.writing():
        old_ids = set(put(w, "big.md", old_texts))
        put(w, "small.md", TEXTS)
    reader = PostgresIndex(postgres.url, collection, MODEL_A, read_only=True)
    q = query_terms("harbour lighthouse passage")
    seen: list[tuple[str, set[str]]] = []
    beside_errors: list[BaseException] = []

    def kinds(index: PostgresIndex, ids: list[int]) -> set[str]:
        return {c.text.split()[0] for c in index.chunks_by_id(ids).values() if "passage" in c.text}

    def probe() -> None:
        try:
            look()
        except BaseException as exc:  # reported below (a failing ``between`` is dropped)
            beside_errors.append(exc)

    def look() -> None:
        for name, index in (("writer", w), ("reader", reader)):
            dense = [i for i, _ in index.dense_search(vector(5), 40)]
            keyword = [i for i, _ in index.keyword_search(q, 40)]
            seen.append((name, kinds(index, dense) | kinds(index, keyword)))
            seen.append((name + " counts", {str(index.counts().chunks)}))
        found: list[list[tuple[int, float]]] = []

        def beside() -> None:
            try:
                found.append(w.keyword_search(q, 40))
            except BaseException as exc:  # reported below
                beside_errors.append(exc)

        thread = threading.Thread(target=beside)
        thread.start()
        thread.join(30)
        assert not thread.is_alive(), "a keyword search on another thread waited for the write"
        assert found and {i for i, _ in found[0]} <= old_ids, found

    with w.writing(between=probe):
        new_ids = put(w, "big.md", new_texts, seed=1000)
    assert not beside_errors, beside_errors
    assert len(seen) == 4 * 3  # three pauses (four slices), four looks in each
    total = str(size + len(TEXTS))
    for name, found_kinds in seen:
        assert found_kinds == ({total} if "counts" in name else {"old"}), (name, found_kinds)
    for index in (w, reader):
        index.refresh()
        hits = [i for i, _ in index.keyword_search(q, 40)]
        assert hits and set(hits) <= set(new_ids)
        assert kinds(index, hits) == {"new"}
    reader.close()
    w.close()
