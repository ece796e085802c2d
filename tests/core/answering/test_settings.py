"""The answer stage's settings."""

from citeline.core.answering.settings import ANSWER_MODES, AnswerSettings


def test_the_default_mode_resolves_by_the_generator() -> None:
    assert AnswerSettings().mode == "auto"
    assert ANSWER_MODES == ("auto", "extractive", "generative")
    defaults = AnswerSettings()
    assert defaults.min_keyword_score_cjk < defaults.min_keyword_score  # CJK bigrams match less
