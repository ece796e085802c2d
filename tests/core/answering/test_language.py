"""What the answer stage says, in the question's language."""

from citeline.core.answering.language import LANGUAGE_NAMES, MESSAGES, message


def test_every_language_says_the_same_things() -> None:
    assert set(MESSAGES["zh"]) == set(MESSAGES["en"])
    assert message("zh", "refusal") == "文档中没有这个问题的答案。"
    assert message("ko", "refusal") == MESSAGES["en"]["refusal"]  # English when unknown
    assert LANGUAGE_NAMES["zh"] == "Chinese"
