"""The parse child: PDFs parsed in another process, a crash or a file over the budget
costing that file only, the caller's work let in while the child parses."""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf
import pytest

from citeline.backends import parsing
from citeline.backends.parsing import ParseChild, isolated_parse
from citeline.core.documents import LoadError
from citeline.core.loaders import parse_document

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from torture import pdfs


def _pdf(pages: int) -> bytes:
    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"Page {n + 1}: the keeper logs the weather.")
    doc.set_toc([[1, f"Part {n + 1}", n + 1] for n in range(pages)])
    data: bytes = doc.tobytes()
    return data


@pytest.fixture(scope="module")
def child() -> ParseChild:
    return ParseChild()


def test_a_pdf_parsed_in_the_child_is_what_the_process_would_parse(child: ParseChild) -> None:
    data = _pdf(3)
    here = parse_document(data, Path("a.pdf"), "a.pdf")
    assert child.parse(data, Path("a.pdf"), "a.pdf") == here
    assert [b.heading_path for b in here.blocks] == [("Part 1",), ("Part 2",), ("Part 3",)]
    with pytest.raises(LoadError, match="not a valid PDF"):
        child.parse(b"%PDF-1.7 garbage", Path("b.pdf"), "b.pdf")


def test_a_crash_costs_the_file_and_the_next_pdf_gets_a_new_child(
    child: ParseChild, tmp_path: Path
) -> None:
    deep = pdfs.outline_pdf(60_000, deep=True)
    started = child.started
    with pytest.raises(LoadError, match=r"could not be read: the PDF parser crashed \(SIGSEGV\)"):
        child.parse(deep, Path("deep.pdf"), "deep.pdf")
    assert len(child.parse(_pdf(1), Path("a.pdf"), "a.pdf").blocks) == 1
    assert child.started == started + 1


def test_a_file_over_the_time_budget_is_stopped_while_the_caller_works() -> None:
    slow = ParseChild()
    calls = []
    try:
        slow.parse(_pdf(1), Path("warm.pdf"), "warm.pdf")  # the child's start is not timed
        slow.seconds = 0.5
        with pytest.raises(LoadError, match=r"took more than 0\.5 s"):
            slow.parse(
                # about 3 s of parsing on a quiet box: six times the budget
                pdfs.outline_pdf(20_000, deep=False, pages=20_000),
                Path("big.pdf"),
                "big.pdf",
                lambda: calls.append(1),
            )
        assert len(calls) >= 10  # every WAIT_STEP while it parsed
        slow.seconds = parsing.PARSE_SECONDS
        assert len(slow.parse(_pdf(1), Path("a.pdf"), "a.pdf").blocks) == 1
    finally:
        slow.stop()


def test_a_memory_budget_too_small_to_start_is_one_line() -> None:
    tiny = ParseChild(memory_bytes=64 * 1024 * 1024)
    try:
        with pytest.raises(LoadError) as refused:  # PyMuPDF cannot even load in 64 MB
            tiny.parse(_pdf(1), Path("a.pdf"), "a.pdf")
        assert "\n" not in str(refused.value) and str(refused.value)
    finally:
        tiny.stop()


def test_only_pdfs_go_to_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_SHARED", None)
    doc = isolated_parse(b"# Title\n\nText.\n", Path("a.md"), "a.md", lambda: None)
    assert doc.title == "Title" and parsing._SHARED is None
    doc = isolated_parse(_pdf(1), Path("a.pdf"), "a.pdf", lambda: None)
    assert parsing._SHARED is not None and len(doc.blocks) == 1
    parsing._SHARED.stop()


def test_a_big_result_comes_back_in_parts_with_the_callers_work_between(
    child: ParseChild,
) -> None:
    data = _pdf(3 * parsing.BLOCKS_PER_PART + 7)
    here = parse_document(data, Path("big.pdf"), "big.pdf")
    parts = -(-len(here.blocks) // parsing.BLOCKS_PER_PART)
    assert parts >= 4
    calls: list[int] = []
    there = child.parse(data, Path("big.pdf"), "big.pdf", lambda: calls.append(1))
    assert there == here  # the parts joined are the document, in order
    assert len(calls) >= parts  # once after each part at least, besides the waits
    # the child stays in step: the next file's answer is its own
    assert child.parse(_pdf(2), Path("a.pdf"), "a.pdf").blocks[1].heading_path == ("Part 2",)


def test_an_error_of_the_callers_work_between_parts_costs_a_new_child() -> None:
    own = ParseChild()
    data = _pdf(2 * parsing.BLOCKS_PER_PART + 1)
    calls: list[int] = []

    def between() -> None:
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt

    try:
        own.parse(_pdf(1), Path("warm.pdf"), "warm.pdf")
        with pytest.raises(KeyboardInterrupt):
            own.parse(data, Path("big.pdf"), "big.pdf", between)
        started = own.started
        assert own.parse(_pdf(2), Path("a.pdf"), "a.pdf").blocks[1].heading_path == ("Part 2",)
        assert own.started == started + 1  # the parts left unread went with the old child
    finally:
        own.stop()
