"""Scoring answers per mode: the reference check, and each mode's figures from a real
(small) folder with the real embedder and a scripted answer model."""

from __future__ import annotations

from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.results import Answer, Citation
from citeline.evaluation import runner
from citeline.evaluation.answers import (
    MODES,
    _Tally,
    contains_reference,
    normalise,
    run_answers,
)
from citeline.evaluation.datasets import EvalQuery, EvalSet
from citeline.settings import EmbeddingSettings, GenerationSettings, load_settings
from conftest import CountingEmbedder
from memory import ScriptedGenerator


def test_references_are_compared_without_case_punctuation_or_markers() -> None:
    assert normalise("Every 30 days [1].") == "every30days"
    assert contains_reference("It is descaled every 30 days [1].", ["every 30 Days"])
    assert not contains_reference("Monthly [1].", ["every 30 days"])
    assert not contains_reference("anything", [""])


EVALSET = EvalSet(
    "kitchen:test",
    [
        EvalQuery(
            "q1",
            "How often is the coffee machine descaled with citric acid?",
            {"kitchen": 1},
            ("every 30 days",),
        ),
        EvalQuery("q2", "Who painted the ceiling of the Sistine Chapel?", {}),
    ],
    {
        "kitchen": (
            "Kitchen",
            "The coffee machine is descaled every 30 days with citric acid.",
        ),
        "garden": ("Garden", "Tomatoes need six hours of direct sun every day."),
    },
)


def test_each_mode_reports_its_figures(tmp_path: Path, embedder: CountingEmbedder) -> None:
    docs = runner.corpus_folder(tmp_path, EVALSET)
    runner.write_corpus(EVALSET, docs)
    settings, _ = load_settings(docs)
    models = ModelPool(
        embedders={EmbeddingSettings(): embedder},
        generators={GenerationSettings(): ScriptedGenerator("It is descaled every 30 days [1].")},
    )
    workspace = open_workspace(docs, settings, models)
    try:
        workspace.update()
        figures = run_answers(workspace, EVALSET, 2, MODES)
    finally:
        workspace.close()
    assert set(figures) == set(MODES)
    for mode in MODES:
        report = figures[mode]
        assert report["questions"] == 2 and report["unanswerable"] == 1
        assert report["unanswerable_refused"] in (0.0, 1.0)
        assert set(report["seconds"]) >= {"p50", "p95"}  # type: ignore[arg-type]


def test_a_false_refusal_counts_against_citations_but_not_among_answered() -> None:
    question = EVALSET.queries[0]
    kitchen = Citation(1, 1, f"kitchen{EVALSET.suffix}", "Kitchen", "", None, 1, 1, 0.9, True)
    tally = _Tally()
    for text, refused, citations in (("Descaled [1].", False, [kitchen]), ("No.", True, [])):
        tally.add(
            question, Answer(question.text, "en", text, refused, False, citations, [], []), EVALSET
        )
    figures = tally.report()
    assert figures["answerable_refused"] == 0.5
    assert figures["citation_accuracy"] == 0.5
    assert figures["citation_accuracy_answered"] == 1.0


def test_grades_are_counted_for_answerable_and_unanswerable_questions() -> None:
    answerable, unanswerable = EVALSET.queries
    kitchen = Citation(1, 1, f"kitchen{EVALSET.suffix}", "Kitchen", "", None, 1, 1, 0.9, True)
    tally = _Tally()
    for query, grade in (
        (answerable, "answer"),
        (answerable, "closest"),
        (answerable, "refused"),
        (unanswerable, "answer"),
        (unanswerable, "closest"),
        (unanswerable, "closest"),
        (unanswerable, "refused"),
    ):
        refused = grade == "refused"
        answer = Answer(
            query.text,
            "en",
            "No." if refused else "Descaled every 30 days [1].",
            refused,
            False,
            [] if refused else [kitchen],
            [],
            [],
            grade=grade,
        )
        tally.add(query, answer, EVALSET)
    figures = tally.report()
    assert (figures["answerable"], figures["unanswerable"]) == (3, 4)
    assert figures["answerable_refused"] == figures["answerable_graded_answer"] == 0.3333
    assert figures["answer_contains_reference"] == 0.6667  # a refusal contains nothing
    assert figures["unanswerable_graded_answer"] == 0.25
    assert figures["unanswerable_graded_closest"] == 0.5
    assert figures["unanswerable_refused"] == 0.25
    assert figures["refusal_precision"] == 0.5
