"""What the answer stage says to the user, in the question's language."""

from __future__ import annotations

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "refusal": "The documents do not contain the answer to this question.",
        "nearest": "Nearest passages (none of them answers it):",
        "page": "page",
        "lines": "lines",
    },
    "zh": {
        "refusal": "文档中没有这个问题的答案。",
        "nearest": "最接近的段落（都没有回答这个问题）：",
        "page": "第{n}页",
        "lines": "行",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES.get(language, MESSAGES["en"])[key]
