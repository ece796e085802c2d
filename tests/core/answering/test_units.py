"""The answer-unit splitter: English, Chinese, code, list and table cases (the sentence
rule's own table is tests/core/test_sentences.py)."""

from __future__ import annotations

from citeline.core.answering.units import Unit, is_contents_line, split_units


def test_paragraph_lines_are_joined_and_split_into_sentences() -> None:
    units = split_units("The index is kept\nin a folder. It has\ntwo files.")
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "The index is kept in a folder."),
        ("sentence", "It has two files."),
    ]


def test_chinese_lines_join_without_spaces() -> None:
    units = split_units("索引保存在\n文档文件夹中。")
    assert [u.text for u in units] == ["索引保存在文档文件夹中。"]
    units = split_units("窗口（默认 `a`，\n重叠 `b`）。中文的“；”\n和英文的句号。")
    assert [u.text for u in units] == ["窗口（默认 `a`，重叠 `b`）。", "中文的“；”和英文的句号。"]
    units = split_units("He said “yes”\nand “no”\n“maybe”.")
    assert [u.text for u in units] == ["He said “yes” and “no” “maybe”."]


def test_list_items_are_units_with_their_lead_in() -> None:
    text = (
        "Citeline reads these formats:\n\n- Markdown and MDX\n- HTML pages,\n  with tables\n1. PDF"
    )
    units = split_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "Citeline reads these formats:"),
        ("item", "- Markdown and MDX"),
        ("item", "- HTML pages, with tables"),
        ("item", "1. PDF"),
    ]
    assert {u.lead for u in units if u.kind == "item"} == {"Citeline reads these formats:"}


def test_wrapped_list_items_are_not_code() -> None:
    text = (
        "- Editing one paragraph re-embeds only the chunks whose text\n"
        "  changed.\n"
        "- Renaming a file embeds nothing."
    )
    units = split_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("item", "- Editing one paragraph re-embeds only the chunks whose text changed."),
        ("item", "- Renaming a file embeds nothing."),
    ]


def test_list_in_the_same_block_as_its_lead() -> None:
    units = split_units("Options:\n* --json prints JSON\n* --docs names the folder")
    assert [u.kind for u in units] == ["sentence", "item", "item"]
    assert units[1].lead == "Options:"


def test_a_list_without_a_colon_has_no_lead() -> None:
    units = split_units("Some words here.\n\n- one\n- two")
    assert [u.lead for u in units if u.kind == "item"] == ["", ""]


def test_table_rows_carry_the_header() -> None:
    text = "| setting | default |\n|---|---|\n| top_k | 5 |\n| rrf_k | 10 |"
    units = split_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("row", "| top_k | 5 |"),
        ("row", "| rrf_k | 10 |"),
    ]
    assert units[0].display == "| setting | default |\n|---|---|\n| top_k | 5 |"


def test_a_fenced_code_block_stays_whole_even_with_blank_lines() -> None:
    text = "Install it:\n\n```bash\npip install citeline\n\nciteline --help\n```\n\nDone. Next."
    units = split_units(text)
    assert [u.kind for u in units] == ["sentence", "code", "sentence", "sentence"]
    assert units[1].text == "```bash\npip install citeline\n\nciteline --help\n```"


def test_an_unclosed_fence_runs_to_the_end() -> None:
    units = split_units("Run:\n\n```\nmake all\nmake test")
    assert units[-1].kind == "code"
    assert units[-1].text == "```\nmake all\nmake test"


def test_preformatted_lines_are_one_code_unit() -> None:
    text = "Example:\n\n    $ citeline index\n    $ citeline ask 'Where?'"
    units = split_units(text)
    assert [u.kind for u in units] == ["sentence", "code"]


def test_positions_and_blocks_follow_reading_order() -> None:
    units = split_units("One. Two.\n\nThree.")
    assert [u.position for u in units] == [0, 1, 2]
    assert [u.block for u in units] == [0, 0, 1]


def test_units_are_the_sources_words() -> None:
    text = "Keep it verbatim: `a.b` and [links](x.md). Second sentence!\n\n- item *one*"
    flat = " ".join(text.split())
    for unit in split_units(text):
        assert unit.text in flat


def test_a_table_of_contents_line_is_no_answer_unit() -> None:
    contents = [
        "21 6.3 What about ”sid”?",
        "6.3 What about sid? 21",
        "Installing from source ........ 12",
        "Installing from source . . . . . 12",
    ]
    for line in contents:
        assert is_contents_line(Unit(line, "sentence", 0, 0)), line
    prose = [
        "Version 6.3 added the option.",
        "The default is 21.",
        "See section 6.3 for the details.",
        "1.5 GB is the limit for one file in 2.3 and later versions.",
        "Wait... then run it.",
    ]
    for line in prose:
        assert not is_contents_line(Unit(line, "sentence", 0, 0)), line
    assert not is_contents_line(Unit("21 6.3 What about sid?", "code", 0, 0))
