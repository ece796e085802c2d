"""Running a set through the pipeline: corpora written as files, hits collapsed to
documents, latency.  (The whole run is in test_report.py and test_eval_cli.py.)"""

from __future__ import annotations

from pathlib import Path

from citeline.core.documents import Chunk, Hit
from citeline.evaluation.datasets import EvalQuery, EvalSet
from citeline.evaluation.runner import (
    MethodResult,
    QueryResult,
    collapse,
    corpus_folder,
    write_corpus,
)


def evalset() -> EvalSet:
    documents = {"d1": ("Tomatoes", "They need sun."), "d2": ("", "Bread rises.")}
    return EvalSet("garden:test", [EvalQuery("q1", "sun?", {"d1": 1})], documents)


def test_a_corpus_gets_a_stable_folder_and_is_written_once(tmp_path: Path) -> None:
    folder = corpus_folder(tmp_path, evalset())
    assert folder == corpus_folder(tmp_path, evalset()) and folder.name == "docs"
    assert folder.parent.name.startswith("garden-")
    assert write_corpus(evalset(), folder) == 2
    assert (folder / "d1.md").read_text() == "# Tomatoes\n\nThey need sun.\n"
    assert (folder / "d2.md").read_text() == "Bread rises.\n"
    assert write_corpus(evalset(), folder) == 0  # unchanged files are not rewritten


def test_chunk_hits_collapse_to_their_documents() -> None:
    def hit(path: str) -> Hit:
        return Hit(0, 1, 1.0, Chunk(path, "", (), "", 1, 1, None, 0))

    assert collapse(evalset(), [hit("d2.md"), hit("d1.md"), hit("d2.md")]) == ["d2", "d1"]


def test_metrics_and_latency_per_method() -> None:
    result = MethodResult({"q1": QueryResult(["d1"], [], 0.004)})
    assert result.metrics(evalset().queries)["hit@1"] == 1.0
    assert result.latency() == {"p50_ms": 4.0, "p95_ms": 4.0, "mean_ms": 4.0}
    assert result.per_query_ms() == {"q1": 4.0}
    assert MethodResult().latency()["p50_ms"] == 0.0
