"""What the answer stage says to the user, in the question's language."""

from __future__ import annotations

LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "refusal": "The documents do not contain the answer to this question.",
        "nearest": "Nearest passages (none was close enough to answer from):",
        "uncited": "The answer did not cite its evidence; these are the passages it was given:",
        "timeout": "No answer was generated in time; here is the evidence that was found:",
        "cancelled": "Cancelled; here is the evidence that was found:",
        "model_refused": "The model could not answer from the evidence.",
        "page": "page",
        "lines": "lines",
    },
    "zh": {
        "refusal": "文档中没有这个问题的答案。",
        "nearest": "最接近的段落（都不足以回答这个问题）：",
        "uncited": "回答没有标注出处；以下是提供给模型的段落：",
        "timeout": "未能及时生成回答；以下是找到的证据：",
        "cancelled": "已取消；以下是找到的证据：",
        "model_refused": "模型无法根据这些证据回答。",
        "page": "第{n}页",
        "lines": "行",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES.get(language, MESSAGES["en"])[key]
