"""The evaluation report built from a small set, through the real pipeline."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.evaluation import runner
from citeline.evaluation.answers import MODES
from citeline.evaluation.datasets import EvalQuery, EvalSet
from citeline.evaluation.off_topic import OFF_TOPIC_QUESTIONS
from citeline.evaluation.report import evaluate, summary_lines
from citeline.settings import EmbeddingSettings, GenerationSettings, load_settings
from conftest import CountingEmbedder
from memory import ScriptedGenerator

EVALSET = EvalSet(
    "garden:test",
    [
        EvalQuery("q1", "How many hours of sun do tomatoes need?", {"tomatoes": 1}, ("six",)),
        EvalQuery("q2", "How long is bread dough kneaded?", {"bread": 1}),
    ],
    {
        "tomatoes": ("Tomatoes", "Tomatoes need six hours of direct sun every day."),
        "bread": ("Bread", "Knead the dough for ten minutes, then let it rise."),
        "moons": ("Jupiter", "Jupiter has at least ninety-five moons."),
    },
)


@contextlib.contextmanager
def no_progress(label: str) -> Iterator[None]:
    yield None


def test_every_method_is_scored_and_refusal_measured(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    docs = runner.corpus_folder(tmp_path, EVALSET)
    runner.write_corpus(EVALSET, docs)
    settings, _ = load_settings(docs)
    models = ModelPool(
        embedders={EmbeddingSettings(): embedder},
        generators={GenerationSettings(): ScriptedGenerator()},
    )
    workspace = open_workspace(docs, settings, models)
    try:
        out = evaluate(workspace, EVALSET, answers=1, progress=no_progress)
    finally:
        workspace.close()
    assert (out["dataset"], out["queries"], out["documents"]) == ("garden:test", 2, 3)
    for method in runner.METHODS:
        assert out[method]["hit@5"] == 1.0 and set(out[method]["per_query_ms"]) == {"q1", "q2"}
    assert "reranked" not in out
    assert 0.0 <= out["refusal"]["off_topic_refused"] <= 1.0
    assert len(OFF_TOPIC_QUESTIONS) == 24
    assert set(out["answers"]) == set(MODES)  # each mode's figures
    assert all(figures["questions"] == 1 for figures in out["answers"].values())
    lines = summary_lines(out)
    assert lines[0].startswith("garden:test: 2 queries, 3 documents")
    assert [line.split()[0] for line in lines[2:5]] == list(runner.METHODS)
    refusal = next(i for i, line in enumerate(lines) if line.startswith("refusal:"))
    heads = [line for line in lines[refusal + 1 :] if not line.startswith("  ")]
    assert [line.split(",")[0] for line in heads] == [f"answers ({m})" for m in MODES]
    assert all("1 answerable: refused" in line and "fact contained" in line for line in heads)
    assert sum(line.startswith("  off-topic refused") for line in lines) == len(MODES)
