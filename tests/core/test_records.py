"""The ask log: one JSON line per ask, never a failure of the answer."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from citeline.core.answering.results import Answer
from citeline.core.records import RECORDS_FILE, record_ask


def answer() -> Answer:
    return Answer(
        question="Where?",
        language="en",
        text="Nowhere.",
        refused=True,
        generator_called=False,
        citations=[],
        hits=[],
        evidence=[],
        timings={"total": 0.1},
    )


def test_each_ask_is_one_json_line(tmp_path: Path) -> None:
    record_ask(tmp_path, answer(), {"embedding": "mini.gguf"})
    record_ask(tmp_path, answer(), {"embedding": "mini.gguf"})
    lines = (tmp_path / RECORDS_FILE).read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert record["question"] == "Where?" and record["models"] == {"embedding": "mini.gguf"}
    assert record["evidence"] == [] and record["time"]


def test_a_folder_that_cannot_be_written_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        record_ask(tmp_path / "missing", answer(), {})
    assert "could not record the ask" in caplog.text
