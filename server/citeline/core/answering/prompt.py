"""The generator's prompt: numbered, labelled evidence and the rules of the answer."""

from __future__ import annotations

from collections.abc import Sequence

from citeline.core.answering.evidence import evidence_block
from citeline.core.answering.language import LANGUAGE_NAMES
from citeline.core.answering.results import Evidence

REFUSAL_SENTENCE = "The documents do not contain the answer."

_SYSTEM = (
    "You answer questions using only the numbered evidence the user gives you. "
    "After each sentence, write the number of the evidence it comes from in square "
    "brackets, like [1]. Do not use anything you know that is not in the evidence. "
    "If the evidence does not contain the answer, reply only: {refusal} "
    "Answer in {language}, briefly."
)


def build_messages(
    question: str, evidence: Sequence[Evidence], language: str
) -> list[dict[str, str]]:
    blocks = "\n\n".join(evidence_block(e.n, e.hit, language) for e in evidence)
    system = _SYSTEM.format(
        refusal=REFUSAL_SENTENCE, language=LANGUAGE_NAMES.get(language, "English")
    )
    user = f"Evidence:\n\n{blocks}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
