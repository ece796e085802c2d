"""What the answer stage says to the user, in the question's language."""

from __future__ import annotations

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "refusal": "The documents do not contain the answer to this question.",
        "nearest": "Nearest passages (none of them answers it):",
        "page": "page",
        "lines": "lines",
        "grade_answer": "Answer",
        "grade_closest": "Closest passages — they may not answer the question",
        "grade_refused": "Not found in the documents",
    },
    "zh": {
        "refusal": "文档中没有这个问题的答案。",
        "nearest": "最接近的段落（都没有回答这个问题）：",
        "page": "第{n}页",
        "lines": "行",
        "grade_answer": "答案",
        "grade_closest": "最接近的段落——可能没有回答这个问题",
        "grade_refused": "文档中没有找到",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES.get(language, MESSAGES["en"])[key]
