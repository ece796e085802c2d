"""Retrieval: fusion math by hand, then dense, keyword, hybrid and reranked search on a
real index with the real embedding model and the tests' own GGUF cross-encoder."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from citeline.app import ModelPool, Workspace, open_workspace
from citeline.core.chunking import embedding_text
from citeline.core.documents import Hit
from citeline.core.reranking import Reranker
from citeline.core.retrieval import QUERY_VECTORS_KEPT, Retriever, rrf
from citeline.settings import RerankingSettings, Settings, load_settings
from conftest import CountingEmbedder

T = TypeVar("T")

# -- fusion by hand ----------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(rrf([[1, 2, 3], [3, 1]], [1.0, 1.0], k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert [cid for cid, _ in rrf([[1, 2, 3], [3, 1]], [1.0, 1.0], k=60)] == [1, 3, 2]


def test_rrf_weights_decide_between_disagreeing_lists() -> None:
    dense_first = rrf([[1, 2], [2, 1]], [1.0, 0.5], k=10)
    assert dense_first[0] == (1, pytest.approx(1 / 11 + 0.5 / 12))
    assert dense_first[1] == (2, pytest.approx(1 / 12 + 0.5 / 11))
    assert [cid for cid, _ in rrf([[1, 2], [2, 1]], [0.5, 1.0], k=10)] == [2, 1]


def test_rrf_small_k_rewards_the_top_ranks_more() -> None:
    # one list puts a chunk first; the other ranks a second chunk 2nd and 3rd... of both
    ranked = [[7, 8, 9], [9, 8, 7]]
    small, large = dict(rrf(ranked, [1, 1], k=1)), dict(rrf(ranked, [1, 1], k=1000))
    assert small[7] > small[8]  # a first place counts for more than two second places
    assert large[8] == pytest.approx(large[7], rel=1e-3)


def test_rrf_ties_break_by_chunk_id_and_empty_lists_are_fine() -> None:
    assert rrf([[5, 4], [4, 5]], [1.0, 1.0], k=60) == [
        (4, pytest.approx(1 / 61 + 1 / 62)),
        (5, pytest.approx(1 / 61 + 1 / 62)),
    ]
    assert rrf([[], [3]], [1.0, 1.0], k=60) == [(3, pytest.approx(1 / 61))]
    assert rrf([], [], k=60) == []


# -- real search -------------------------------------------------------------------

CORPUS = {
    "errors.md": "# Error codes\n\nE-1024 means the index lock is held by another process."
    " Wait for the other indexer or delete the stale lock file.\n",
    "install.md": "# Installing\n\nRun pip install --no-cache-dir citeline in a fresh"
    " virtual environment. The first start converts the embedding model.\n",
    "postgres.md": "# Database access\n\nEdit pg_hba.conf to allow md5 password"
    " authentication, then reload the PostgreSQL server.\n",
    "garden.md": "# Garden\n\nTomatoes need full sun, deep watering and warm soil."
    " Basil grows well beside them.\n",
    "zh.md": "# 索引\n\n索引保存在文档文件夹里的 .citeline 目录中。删除这个目录后，"
    "Citeline 会重新建立索引。\n",
    "models.md": "# Models\n\nThe embedding model turns every chunk into a vector."
    " Changing the model re-embeds all chunks; the index remembers which model built it.\n",
}


@pytest.fixture()
def workspace(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Workspace]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in CORPUS.items():
        (docs / name).write_text(text, encoding="utf-8")
    settings, _ = load_settings(docs)  # the bundled model's retrieval defaults
    ws = open_workspace(docs, settings, ModelPool(embedders={settings.embedding: embedder}))
    ws.update()
    yield ws
    ws.close()


def paths(hits: list[Hit]) -> list[str]:
    return [hit.chunk.path for hit in hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [("E-1024", "errors.md"), ("--no-cache-dir", "install.md"), ("pg_hba.conf", "postgres.md")],
)
def test_identifiers_are_found_by_keyword_and_hybrid(
    workspace: Workspace, query: str, expected: str
) -> None:
    for mode in ("keyword", "hybrid"):
        hits = workspace.retriever.search(query, k=3, mode=mode)
        assert paths(hits)[0] == expected, (mode, paths(hits))
    assert workspace.retriever.search(query, k=1, mode="keyword")[0].keyword > 0.5


def test_hybrid_hits_carry_both_absolute_scores(workspace: Workspace) -> None:
    hits = workspace.retriever.search("do tomatoes want sunshine", k=3, mode="hybrid")
    assert paths(hits)[0] == "garden.md"
    top = hits[0]
    assert top.dense is not None and 0.2 < top.dense <= 1.0
    assert top.keyword is not None and top.rerank is None
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert hits[0].score >= hits[1].score >= hits[2].score


def test_the_question_just_searched_is_not_embedded_again_for_its_answer(
    workspace: Workspace, embedder: CountingEmbedder
) -> None:
    retriever = workspace.retriever
    question = "do tomatoes want sunshine"
    retriever.search(question, k=3)
    searched = embedder.queries
    vector = retriever.query_vector(question)
    assert embedder.queries == searched
    assert np.array_equal(vector, embedder.inner.embed_query(question))
    retriever.query_vector("how long is bread kneaded")  # not searched yet: embedded
    assert embedder.queries == searched + 1
    retriever.search(question, k=3)  # searched again: its vector is kept
    assert embedder.queries == searched + 1


def test_query_vectors_are_kept_for_the_latest_queries_only(
    workspace: Workspace, embedder: CountingEmbedder
) -> None:
    retriever = workspace.retriever
    first = retriever.search("do tomatoes want sunshine", k=3)
    before = embedder.queries
    for n in range(QUERY_VECTORS_KEPT):
        retriever.query_vector(f"question number {n}")
    assert embedder.queries == before + QUERY_VECTORS_KEPT
    again = retriever.search("do tomatoes want sunshine", k=3)  # pushed out: embedded again
    assert embedder.queries == before + QUERY_VECTORS_KEPT + 1
    assert [h.chunk_id for h in again] == [h.chunk_id for h in first]
    assert [h.score for h in again] == [h.score for h in first]
    retriever.search("do tomatoes want sunshine", k=3)  # now kept
    assert embedder.queries == before + QUERY_VECTORS_KEPT + 1


def test_chinese_questions_use_keywords_with_the_bundled_model(workspace: Workspace) -> None:
    hits = workspace.retriever.search("索引保存在哪里", k=3)
    assert paths(hits)[0] == "zh.md"
    assert hits[0].dense is None  # MiniLM's cosine on Chinese is not evidence
    assert hits[0].keyword is not None and hits[0].keyword > 0.3


def test_a_dense_floor_puts_cosines_on_the_thresholds_scale(workspace: Workspace) -> None:
    settings = workspace.retriever.settings
    assert settings.calibrated(0.61) == 0.61  # MiniLM's cosines as they are
    floored = replace(settings, dense_floor=0.78)
    assert floored.calibrated(0.78) == 0.0 and floored.calibrated(1.0) == 1.0
    assert abs(floored.calibrated(0.868) - 0.4) < 1e-9
    raw = workspace.retriever.search("do tomatoes want sunshine", k=1, mode="dense")[0]
    workspace.retriever.settings = floored
    try:
        hit = workspace.retriever.search("do tomatoes want sunshine", k=1, mode="dense")[0]
    finally:
        workspace.retriever.settings = settings
    assert hit.chunk_id == raw.chunk_id  # the order is the cosine's
    assert raw.dense is not None and hit.dense is not None
    assert abs(hit.dense - (raw.dense - 0.78) / 0.22) < 1e-6 and hit.score == hit.dense


# -- reranking ---------------------------------------------------------------------

QUESTION = "what happens when I change the embedding model"


def test_reranking_reorders_the_best_candidates_by_the_rerankers_score(
    workspace: Workspace, real_reranker: Reranker
) -> None:
    plain = workspace.retriever.search(QUESTION, k=6)
    retriever = Retriever(
        workspace.index, workspace.embedder, workspace.retriever.settings, lambda: real_reranker, 4
    )
    reranked = retriever.search(QUESTION, k=6)
    chunking = workspace.index.identity.chunking

    head, rest = reranked[:4], reranked[4:]
    assert {h.chunk_id for h in head} == {h.chunk_id for h in plain[:4]}
    expected = real_reranker.score(QUESTION, [embedding_text(h.chunk, chunking) for h in head])
    assert [h.rerank for h in head] == pytest.approx([float(s) for s in expected])
    assert [h.rerank for h in head] == sorted((h.rerank for h in head), reverse=True)  # type: ignore[type-var]
    # the rest keep the fused order, without a reranker score; ranks are renumbered
    assert [(h.chunk_id, h.rerank) for h in rest] == [(h.chunk_id, None) for h in plain[4:]]
    assert [h.rank for h in reranked] == list(range(1, 7))
    # the seeded head does not agree with the fusion, so the order really changed
    assert [h.chunk_id for h in head] != [h.chunk_id for h in plain[:4]]
    # fewer results than candidates: the best of the reranked candidates
    assert [h.chunk_id for h in retriever.search(QUESTION, k=2)] == [h.chunk_id for h in head[:2]]
    # rerank=False, or no candidates, is the plain search
    for skipped in (
        retriever.search(QUESTION, k=6, rerank=False),
        Retriever(
            workspace.index, workspace.embedder, retriever.settings, lambda: real_reranker, 0
        ).search(QUESTION, k=6),
    ):
        assert [(h.chunk_id, h.rerank) for h in skipped] == [(h.chunk_id, None) for h in plain]


def test_a_configured_reranker_is_loaded_once_and_follows_setting_changes(
    workspace: Workspace, reranker_path: Path
) -> None:
    models = workspace.models
    on = replace(
        workspace.settings, reranking=RerankingSettings(model=str(reranker_path), candidates=3)
    )
    workspace.apply_settings(on)
    reranker = workspace.reranker
    assert reranker is not None and reranker.name == reranker_path.name
    hits = workspace.retriever.search(QUESTION, k=5)
    assert [h.rerank is not None for h in hits] == [True, True, True, False, False]

    workspace.apply_settings(replace(on, reranking=replace(on.reranking, candidates=5)))
    assert workspace.reranker is reranker  # same model: not loaded again
    assert all(h.rerank is not None for h in workspace.retriever.search(QUESTION, k=5))

    workspace.apply_settings(replace(on, reranking=RerankingSettings()))
    assert workspace.reranker is None
    assert all(h.rerank is None for h in workspace.retriever.search(QUESTION, k=5))
    assert len([r for r in models.rerankers.values() if r is not None]) == 1


def test_a_reranker_that_cannot_load_is_searched_without(
    workspace: Workspace, tmp_path: Path
) -> None:
    missing = tmp_path / "missing-reranker.gguf"
    workspace.apply_settings(
        replace(workspace.settings, reranking=RerankingSettings(model=str(missing)))
    )
    (workspace.docs_root / "new.md").write_text("# New\n\nA note added later.\n")
    assert workspace.update().files_changed == 1  # indexing needs no reranker
    hits = workspace.retriever.search(QUESTION, k=3)  # searched without the reranker
    assert hits and all(h.rerank is None for h in hits)


def test_reranker_from_citeline_toml(tmp_path: Path, reranker_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "citeline.toml").write_text(f'[reranking]\nmodel = "{reranker_path}"\ncandidates = 7\n')
    settings, warnings = load_settings(docs)
    assert warnings == [] and settings.reranking.candidates == 7
    assert settings.reranking.model == str(reranker_path)
    assert Settings().reranking.model == ""  # off by default


class RecordingBeside:
    """Runs what it is given on one thread of its own, recording the thread's name."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="beside-test")
        self.threads: list[str] = []

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        def run() -> T:
            self.threads.append(threading.current_thread().name)
            return fn()

        return self.pool.submit(run)


def test_a_hybrid_search_runs_its_keyword_half_beside_the_embedding_only_when_given_a_thread(
    workspace: Workspace,
) -> None:
    alone = Retriever(workspace.index, workspace.embedder, workspace.retriever.settings)
    beside = RecordingBeside()
    given = Retriever(
        workspace.index, workspace.embedder, workspace.retriever.settings, beside=beside
    )
    try:
        expected = alone.search(QUESTION, k=6)
        assert given.search(QUESTION, k=6) == expected and beside.threads[0].startswith("beside")
        assert given.search(QUESTION, k=6, mode="dense") and len(beside.threads) == 1
        # the workspace's own thread, from service/workers.py, stopped when it closes
        assert workspace.beside is not None and workspace.retriever.beside is workspace.beside
        assert workspace.search(QUESTION, 6) == expected
    finally:
        beside.pool.shutdown()


# -- across languages: the language direction (multilingual-e5-small) --------------

ENGLISH_PAGES = {
    "en/backup.md": "# Backups\n\nCopy the data folder to another disk every night and keep"
    " the last seven copies.",
    "en/garden.md": "# The garden\n\nTomatoes want six hours of sunshine and water every"
    " second day.",
    "en/trains.md": "# Trains\n\nThe night train to the coast leaves at ten and arrives at"
    " six in the morning.",
    "en/bread.md": "# Bread\n\nLet the dough rise for two hours before baking it at 220 degrees.",
    "en/cats.md": "# Cats\n\nCats sleep for most of the day and hunt at dawn and dusk.",
    "en/taxes.md": "# Taxes\n\nThe tax return is due at the end of April each year.",
    "en/chess.md": "# Chess\n\nA pawn that reaches the last row becomes a queen.",
    "en/moon.md": "# The Moon\n\nThe Moon goes round the Earth in about twenty-seven days.",
}
CHINESE_PAGES = {
    "zh/tea.md": "# 茶\n\n绿茶用八十度的水冲泡，泡两分钟就可以喝了。",
    "zh/bike.md": "# 自行车\n\n轮胎每个月充一次气，链条要定期上油。",
    "zh/river.md": "# 长江\n\n长江是中国最长的河流，全长约六千三百公里。",
    "zh/piano.md": "# 钢琴\n\n每天练琴半小时，先弹音阶再弹曲子。",
    "zh/rain.md": "# 雨季\n\n南方的雨季从五月开始，一直持续到七月。",
    "zh/panda.md": "# 熊猫\n\n大熊猫主要吃竹子，每天要吃十几公斤。",
    "zh/exam.md": "# 考试\n\n高考在每年六月七日开始，持续两到三天。",
    "zh/phone.md": "# 手机\n\n手机电量低于百分之二十时，系统会提示你充电。",
}


@pytest.fixture(scope="module")
def mixed_workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    docs = tmp_path_factory.mktemp("mixed")
    (docs / "citeline.toml").write_text('[embedding]\nmodel = "multilingual-e5-small"\n')
    for name, text in {**ENGLISH_PAGES, **CHINESE_PAGES}.items():
        (docs / name).parent.mkdir(exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    settings, _ = load_settings(docs)
    assert settings.retrieval.language_neutral  # e5's default
    ws = open_workspace(docs, settings)
    ws.update()
    yield ws
    ws.close()


def _rank(hits: list[Hit], path: str) -> int:
    return paths(hits).index(path) + 1 if path in paths(hits) else 99


def test_questions_across_languages_rank_the_other_languages_page_by_meaning(
    mixed_workspace: Workspace,
) -> None:
    retriever = mixed_workspace.retriever
    asks = {
        "How long is the Yangtze river?": "zh/river.md",
        "What do giant pandas eat?": "zh/panda.md",
        "面包烤之前要发酵多久？": "en/bread.md",
        "月球绕地球一圈要多少天？": "en/moon.md",
    }
    neutral = {q: retriever.search(q, k=16, mode="dense") for q in asks}
    settings = retriever.settings
    retriever.settings = replace(settings, language_neutral=False)
    try:
        plain = {q: retriever.search(q, k=16, mode="dense") for q in asks}
    finally:
        retriever.settings = settings
    for question, page in asks.items():
        assert _rank(neutral[question], page) == 1, question
        assert _rank(neutral[question], page) <= _rank(plain[question], page)
    # the ranking changed; the scores did not: each hit keeps the query's own cosine
    question = "How long is the Yangtze river?"
    vector = retriever.query_vector(question)
    cosines = mixed_workspace.index.similarity(vector, [h.chunk_id for h in neutral[question]])
    for hit in neutral[question]:
        assert hit.dense == pytest.approx(settings.calibrated(cosines[hit.chunk_id]), abs=1e-6)
    # a question in the page's own language still finds it first
    assert paths(retriever.search("长江有多长？", k=3))[0] == "zh/river.md"


def test_a_folder_of_one_kind_of_text_has_no_language_direction(workspace: Workspace) -> None:
    # the MiniLM fixture's corpus: English pages and one Chinese page (fewer than a mean)
    assert workspace.retriever.language_direction() is None
