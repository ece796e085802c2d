"""Where a sentence ends: a table of English, Chinese and mixed cases, and the
sentence under an offset."""

from __future__ import annotations

import pytest

from citeline.core.sentences import (
    ends_like_a_sentence,
    first_sentence_end,
    sentence_at,
    sentence_spans,
    split_sentences,
)

SENTENCES = [
    # plain English
    ("Run the index. Then ask a question.", ["Run the index.", "Then ask a question."]),
    ("Is it fast? Yes! It is.", ["Is it fast?", "Yes!", "It is."]),
    # abbreviations, initials and numbers do not end sentences
    (
        "Use a model, e.g. MiniLM, for speed. It is small.",
        ["Use a model, e.g. MiniLM, for speed.", "It is small."],
    ),
    ("See Fig. 3 for details. Done.", ["See Fig. 3 for details.", "Done."]),
    (
        "Written by J. R. Smith in 2020. Reprinted.",
        ["Written by J. R. Smith in 2020.", "Reprinted."],
    ),
    ("It costs 3.50 dollars. Cheap.", ["It costs 3.50 dollars.", "Cheap."]),
    ("The U.S. Army uses it. Really.", ["The U.S. Army uses it.", "Really."]),
    # file names and paths keep their dots
    (
        "Edit pg_hba.conf first. Then reload the server.",
        ["Edit pg_hba.conf first.", "Then reload the server."],
    ),
    (
        "The index lives in .citeline/index.sqlite3 under the folder. It is rebuilt on demand.",
        [
            "The index lives in .citeline/index.sqlite3 under the folder.",
            "It is rebuilt on demand.",
        ],
    ),
    # a lower-case word after a full stop continues the sentence
    ("Call foo. bar is next.", ["Call foo. bar is next."]),
    # quotes and brackets stay with their sentence
    ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
    ("(This is aside.) Main text.", ["(This is aside.)", "Main text."]),
    # Chinese
    ("索引保存在文档文件夹中。它可以随时重建！", ["索引保存在文档文件夹中。", "它可以随时重建！"]),
    ("是否支持PDF？支持；但需要文字层。", ["是否支持PDF？", "支持；", "但需要文字层。"]),
    ("他说：“你好。”然后离开了。", ["他说：“你好。”", "然后离开了。"]),
    (
        "句末：中文的“。”“！”“？”和英文的句号都算。再次在行末结束。",
        ["句末：中文的“。”“！”“？”和英文的句号都算。", "再次在行末结束。"],
    ),
    ("真的吗?是的", ["真的吗?", "是的"]),
    # mixed
    (
        "Citeline 支持中文。It also reads English.",
        ["Citeline 支持中文。", "It also reads English."],
    ),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCES)
def test_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_spans_point_at_the_sentences() -> None:
    text = "  Run the index.  Then ask. "
    assert [text[a:b] for a, b in sentence_spans(text)] == ["Run the index.", "Then ask."]


def test_the_sentence_at_an_offset() -> None:
    text = "Tomatoes need sun. Basil, e.g. Genovese, likes warm soil!"
    assert sentence_at(text, 3) == "Tomatoes need sun."
    assert sentence_at(text, 18) == "Basil, e.g. Genovese, likes warm soil!"  # the space
    assert sentence_at(text, 30) == "Basil, e.g. Genovese, likes warm soil!"
    assert sentence_at(text, 999) == "Basil, e.g. Genovese, likes warm soil!"
    assert sentence_at("   ", 1) == ""


def test_the_first_sentence_end_and_sentence_like_lines() -> None:
    assert first_sentence_end("and Dr. Who. Next one.") == len("and Dr. Who.")
    assert first_sentence_end("no end here") is None
    assert ends_like_a_sentence("It is small.") and ends_like_a_sentence("Ends (so)")
    assert not ends_like_a_sentence("Embedding model")
