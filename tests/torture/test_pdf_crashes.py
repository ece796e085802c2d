"""Torture: a PDF that crashes MuPDF costs that file only, through `citeline index`
and through a daemon watching the folder (tests/torture/pdf_crashes.py)."""

from __future__ import annotations

from pathlib import Path

from torture import pdf_crashes


def test_a_crashing_pdf_is_its_own_error_and_is_not_tried_again(tmp_path: Path) -> None:
    assert pdf_crashes.through_index(tmp_path) == dict.fromkeys(
        [*(k.name for k in pdf_crashes.KINDS), "second run"]
    )


def test_a_daemon_survives_a_crashing_pdf_and_its_restart(tmp_path: Path) -> None:
    assert pdf_crashes.through_daemon(tmp_path) is None


def test_searches_are_answered_while_a_big_pdf_is_read(tmp_path: Path) -> None:
    searches = pdf_crashes.search_while_parsing(tmp_path, 3000)
    assert searches.during >= 5  # answered one after another while it was read
