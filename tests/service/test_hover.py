"""What hover searches with: the sentence under the cursor, else the line."""

from __future__ import annotations

from citeline.service.hover import hover_query

TEXT = """\
# Notes

Tomatoes need sun. Basil likes
warm soil and regular water! Mint spreads.

- Short
"""
LINES = TEXT.splitlines(keepends=True)


def test_the_sentence_under_the_cursor_even_across_lines() -> None:
    assert hover_query(LINES, 2, 3) == "Tomatoes need sun."
    assert hover_query(LINES, 2, 22) == "Basil likes warm soil and regular water!"
    assert hover_query(LINES, 3, 5) == "Basil likes warm soil and regular water!"
    assert hover_query(LINES, 3, 35) == "Mint spreads."


def test_a_heading_or_short_line_is_searched_whole() -> None:
    assert hover_query(LINES, 0, 3) == "Notes"
    assert hover_query(LINES, 5, 3) == "Short"


def test_blank_lines_and_out_of_range_give_nothing() -> None:
    assert hover_query(LINES, 1, 0) == ""
    assert hover_query(LINES, 99, 0) == ""
    assert hover_query([], 0, 0) == ""


def test_cjk_sentences() -> None:
    lines = ["索引保存在文档文件夹里。模型只加载一次，之后一直使用。\n"]
    assert hover_query(lines, 0, 2) == "索引保存在文档文件夹里。"
    assert hover_query(lines, 0, 15) == "模型只加载一次，之后一直使用。"


def test_an_abbreviation_does_not_end_the_hovered_sentence() -> None:
    lines = ["Use a small model, e.g. MiniLM, for speed. It loads once.\n"]
    assert hover_query(lines, 0, 30) == "Use a small model, e.g. MiniLM, for speed."
