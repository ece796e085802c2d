"""Writing systems and the question's language: the CJK sets, each with one home."""

from citeline.core import chunking, keywords
from citeline.core.scripts import (
    CJK_RUN,
    WIDE_CHAR,
    cjk_count,
    detect_language,
    is_cjk,
    is_cjk_question,
)


def test_language_detection() -> None:
    assert detect_language("How do I rebuild the index?") == "en"
    assert detect_language("索引保存在哪里？") == "zh"
    assert detect_language("Citeline 的索引保存在哪里？") == "zh"
    assert detect_language("インデックスはどこ？") == "ja"
    assert detect_language("색인은 어디에 있나요?") == "ko"


def test_cjk_means_mostly_cjk() -> None:
    assert is_cjk("Stam1na的主唱是谁？")
    assert not is_cjk("What does 索引 mean?")
    assert not is_cjk("plain English")


def test_fullwidth_forms_are_wide_but_not_cjk_words() -> None:
    # Fullwidth Latin costs a token per character when chunking, but is not a CJK run:
    # keyword terms see it after NFKC, as Latin.
    assert WIDE_CHAR.match("Ｆ") and not CJK_RUN.match("Ｆ")
    assert WIDE_CHAR.match("索") and CJK_RUN.match("索")
    assert not WIDE_CHAR.match("F")
    assert cjk_count("ＦＡＩＳＳ索引") == 2


def test_chunk_costs_and_keyword_terms_use_these_sets() -> None:
    assert chunking.text_cost("ab") == 2
    assert chunking.text_cost("索引") == 8
    assert chunking.text_cost("ＦＡ") == 8  # fullwidth: one token each, like CJK
    assert keywords.terms("使用FAISS索引") == ["使用", "faiss", "索引"]


def test_a_question_is_cjk_by_its_language() -> None:
    # one rule for the ask flow, retrieval and the evaluation: kana or hangul make a
    # question Japanese or Korean even beside more Latin letters; Chinese by share
    assert is_cjk_question("Citeline 的索引保存在哪里？")
    assert is_cjk_question("What is インデックス in the manual?")
    assert is_cjk_question("What does 색인 mean here?")
    assert not is_cjk_question("What does 索引 mean?")
    assert not is_cjk_question("How do I rebuild the index?")
