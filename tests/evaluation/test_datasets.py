"""Evaluation sets read from BEIR folders, SQuAD JSON and a user's question file."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.evaluation import datasets
from citeline.evaluation.datasets import DatasetError
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "eval"


def test_a_beir_folder() -> None:
    evalset = datasets.load("beir", FIXTURES / "scifact-slice", "train")
    assert evalset.name == "scifact-slice:train"
    assert len(evalset.queries) == 15 and evalset.documents and len(evalset.documents) == 57
    query = evalset.queries[0]
    assert query.relevant and all(doc in evalset.documents for doc in query.relevant)
    assert evalset.doc_id(evalset.file_name("123")) == "123"


def test_squad_paragraphs_are_the_documents() -> None:
    evalset = datasets.load("squad", FIXTURES / "cmrc2018-trial-slice.json")
    assert evalset.suffix == ".txt" and evalset.documents
    query = evalset.queries[0]
    (doc,) = query.relevant
    assert doc in evalset.documents and query.answers


def test_a_question_file(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"question": "Where?", "sources": ["a.md", "manual.pdf#page=3"], "answers": "here"}\n'
        "\n"
        '{"id": "off", "question": "Nothing?", "sources": []}\n'
    )
    first, second = datasets.load("questions", path).queries
    assert first.relevant == {"a.md": 1, "manual.pdf": 1} and first.answers == ("here",)
    assert second.id == "off" and second.relevant == {}


def test_malformed_sets_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": 3}\n')
    with pytest.raises(DatasetError, match="needs"):
        datasets.load("questions", bad)
    bad.write_text("not json\n")
    with pytest.raises(DatasetError, match="not JSON"):
        datasets.load("questions", bad)
    with pytest.raises(DatasetError, match="BEIR"):
        datasets.load("beir", tmp_path)
    with pytest.raises(DatasetError, match="SQuAD"):
        datasets.load("squad", bad)
