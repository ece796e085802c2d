"""Writing systems and the question's language."""

from citeline.core.scripts import detect_language, is_cjk


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
