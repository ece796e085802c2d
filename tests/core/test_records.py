"""The ask log: one JSON line per ask, never a failure of the answer."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from citeline.core import records
from citeline.core.answering.results import Answer, Evidence, citation_for
from citeline.core.documents import Chunk, Hit
from citeline.core.records import RECORDS_FILE, delete_records, read_records, record_ask


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


def cited_answer(path: str = "kitchen.md") -> Answer:
    chunk = Chunk(
        path=path,
        title="Kitchen",
        heading_path=("Kitchen", "Coffee"),
        text="The coffee machine is descaled every 30 days.",
        start_line=3,
        end_line=4,
        page=None,
        ordinal=0,
    )
    hit = Hit(chunk_id=7, chunk=chunk, score=0.5, rank=1)
    evidence = Evidence(1, hit)
    return Answer(
        question="How often is the coffee machine descaled?",
        language="en",
        text="Every 30 days. [1]",
        refused=False,
        generator_called=False,
        citations=[citation_for(evidence, True)],
        hits=[hit],
        evidence=[evidence],
        mode="extractive",
    )


def test_a_record_carries_its_id_utc_time_passages_and_hashes(tmp_path: Path) -> None:
    record_id = record_ask(tmp_path, cited_answer(), {}, {"kitchen.md": "ab" * 32})
    (record,) = read_records(tmp_path)
    assert record.id == record_id and len(record_id or "") == 16
    assert record.time.endswith("Z") and record.time == record.data["time"]
    assert record.hashes == {"kitchen.md": "ab" * 32}
    assert record.passages == {1: "The coffee machine is descaled every 30 days."}
    answer = record.answer
    assert answer["answer"] == "Every 30 days. [1]" and answer["citations"][0]["start_line"] == 3
    assert not {"prompt", "hashes", "passages", "models", "id", "time"} & set(answer)


def test_the_log_keeps_the_newest_asks_and_trims_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "MAX_RECORDS", 5)
    monkeypatch.setattr(records, "TRIM_SLACK", 2)
    ids = [record_ask(tmp_path, answer(), {}) for _ in range(7)]
    assert [r.id for r in read_records(tmp_path)] == ids[-5:]  # 7 kept, 5 seen
    assert len((tmp_path / RECORDS_FILE).read_text().splitlines()) == 7
    ids.append(record_ask(tmp_path, answer(), {}))  # the 8th: over 5 + 2, rewritten
    assert len((tmp_path / RECORDS_FILE).read_text().splitlines()) == 5
    assert [r.id for r in read_records(tmp_path)] == ids[-5:]


def test_records_are_deleted_one_by_one_or_all(tmp_path: Path) -> None:
    first, second, third = (record_ask(tmp_path, answer(), {}) for _ in range(3))
    assert delete_records(tmp_path, [str(second)]) == 1
    assert [r.id for r in read_records(tmp_path)] == [first, third]
    assert delete_records(tmp_path, ["nope"]) == 0
    assert delete_records(tmp_path) == 2
    assert read_records(tmp_path) == [] and not (tmp_path / RECORDS_FILE).exists()
    assert delete_records(tmp_path) == 0


def test_old_and_damaged_lines(tmp_path: Path) -> None:
    """A record from before ids (local time with an offset) gets a stable id and UTC;
    a line that is not a record is skipped."""
    old = json.dumps({"time": "2026-03-02T10:41:07+0100", "question": "Old?", "answer": "Yes."})
    (tmp_path / RECORDS_FILE).write_text(f"{old}\nnot json\n[1, 2]\n\n")
    (record,) = read_records(tmp_path)
    assert record.time == "2026-03-02T09:41:07.000Z" and record.hashes == {}
    assert [r.id for r in read_records(tmp_path)] == [record.id]  # the same id again
    assert delete_records(tmp_path, [record.id]) == 1
    assert (tmp_path / RECORDS_FILE).read_text() == "not json\n[1, 2]\n"


def test_a_log_that_is_not_a_regular_file_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"question": "elsewhere"}) + "\n")
    index = tmp_path / "index"
    index.mkdir()
    (index / RECORDS_FILE).symlink_to(secret)
    with caplog.at_level(logging.WARNING):
        assert read_records(index) == []
    assert "cannot read the ask log" in caplog.text


_WRITER = """
import sys
from pathlib import Path
from citeline.core import records
from citeline.core.answering.results import Answer
records.MAX_RECORDS, records.TRIM_SLACK = int(sys.argv[3]), int(sys.argv[4])
start = Path(sys.argv[1]) / "start"
while not start.exists():  # both writers begin together
    pass
answer = Answer(question="Where?", language="en", text="Nowhere. " * 2000, refused=True,
                generator_called=False, citations=[], hits=[], evidence=[], timings={})
ids = [records.record_ask(Path(sys.argv[1]), answer, {}) for _ in range(int(sys.argv[2]))]
sys.stdout.write("\\n".join(i or "-" for i in ids))
"""


def _concurrent_writers(tmp_path: Path, count: int, keep: int, slack: int) -> list[list[str]]:
    """Two processes appending ``count`` records each at once; each one's ids in order."""
    import subprocess
    import sys

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(tmp_path), str(count), str(keep), str(slack)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    (tmp_path / "start").touch()
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    return [out.split("\n") for out in outputs]


def test_two_processes_appending_at_once_lose_no_line(tmp_path: Path) -> None:
    written = _concurrent_writers(tmp_path, 300, keep=1000, slack=100)
    assert all("-" not in ids and len(ids) == 300 for ids in written)
    lines = (tmp_path / RECORDS_FILE).read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line)["id"] for line in lines[:-1])  # none torn
    assert sorted(r.id for r in read_records(tmp_path)) == sorted(written[0] + written[1])


def test_two_processes_appending_and_trimming_keep_every_newest_line(tmp_path: Path) -> None:
    """With trims rewriting the log under the appends, what is left of each writer's
    records is the newest run of them: no line of either was dropped by the other's trim."""
    written = _concurrent_writers(tmp_path, 400, keep=100, slack=10)
    kept = [r.id for r in read_records(tmp_path)]
    assert 100 <= len(kept) <= 110
    for ids in written:
        mine = [i for i in kept if i in set(ids)]
        assert mine == ids[len(ids) - len(mine) :]  # a suffix: nothing missing in between
