"""The ask flow's decisions, with a scripted generator (the real-model flow is
tested in test_flow_real.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence

from citeline.core.answering.fitted import ENGLISH
from citeline.core.answering.flow import EXTRACTIVE, GENERATIVE, AskContext, ask
from citeline.core.answering.scoring import UnitScorer
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Chunk, Hit

KITCHEN = (
    "The coffee machine must be descaled every 30 days with citric acid. "
    "Descaling takes about twenty minutes."
)
SECURITY = "Passwords must be at least 14 characters long and are rotated every 90 days."


def hit(n: int, text: str, path: str) -> Hit:
    chunk = Chunk(path, "Handbook", ("Handbook",), text, 1, 2, None, 0)
    return Hit(chunk_id=n, rank=n, score=0.9, chunk=chunk, dense=0.6, keyword=0.8)


HITS = [hit(1, KITCHEN, "kitchen.md"), hit(2, SECURITY, "security.md")]


class ScriptedGenerator:
    """Writes a fixed text, piece by piece; counts its calls."""

    name = "scripted.gguf"
    context_size = 2048

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        should_stop: Callable[[], bool],
    ) -> Iterator[str]:
        self.calls += 1
        for word in self.text.split(" "):
            if should_stop():
                return
            yield word + " "


def context(mode: str, generator: ScriptedGenerator, streamed: list[str]) -> AskContext:
    return AskContext(
        retrieve=lambda question, k: list(HITS),
        # the flow's decisions, whatever the fitted weights: any unit may answer
        scorer=UnitScorer(
            lambda terms: dict.fromkeys(terms, 1.0),
            english=dataclasses.replace(ENGLISH, threshold=0.0),
        ),
        generator=lambda: generator,
        settings=AnswerSettings(),
        mode=mode,
        on_token=streamed.append,
    )


QUESTION = "How often must the coffee machine be descaled?"


def test_extractive_answers_with_the_evidence_sentence_and_never_calls_the_generator() -> None:
    generator = ScriptedGenerator("unused")
    streamed: list[str] = []
    answer = ask(QUESTION, context(EXTRACTIVE, generator, streamed))
    assert generator.calls == 0 and not answer.generator_called
    assert answer.mode == EXTRACTIVE and not answer.refused
    assert "descaled every 30 days with citric acid. [1]" in answer.text
    assert answer.citations[0].path == "kitchen.md" and answer.citations[0].n == 1
    assert "".join(streamed) == answer.text  # it arrives at once
    assert answer.timings["first_text"] is not None


def test_an_unsupported_generated_sentence_is_dropped_and_recorded() -> None:
    generator = ScriptedGenerator(
        "The coffee machine must be descaled every 30 days [1]. "
        "You can't change the embedding model because it is gone [2]."
    )
    streamed: list[str] = []
    answer = ask(QUESTION, context(GENERATIVE, generator, streamed))
    assert generator.calls == 1 and answer.mode == GENERATIVE
    assert answer.text == "The coffee machine must be descaled every 30 days. [1]"
    assert [c.path for c in answer.citations] == ["kitchen.md"]
    assert answer.dropped == [
        {
            "sentence": "You can't change the embedding model because it is gone.",
            "reason": "cites evidence that does not support it",
            "support": answer.dropped[0]["support"],
        }
    ]
    assert "embedding model" in "".join(streamed)  # it streamed, then settled without it
    assert "embedding model" not in answer.text


def test_nothing_supported_falls_back_to_the_extractive_answer() -> None:
    generator = ScriptedGenerator("I like trains. They are fast [1].")
    answer = ask(QUESTION, context(GENERATIVE, generator, []))
    assert answer.generator_called and answer.mode == EXTRACTIVE
    assert answer.fallback == "unsupported"
    assert "descaled every 30 days" in answer.text and "[1]" in answer.text
    assert len(answer.dropped) == 2


def test_a_timeout_falls_back_to_the_extractive_answer() -> None:
    generator = ScriptedGenerator("The coffee machine must be descaled [1].")
    ctx = context(GENERATIVE, generator, [])
    ctx.settings = AnswerSettings(timeout_seconds=0.0)
    answer = ask(QUESTION, ctx)
    assert answer.degraded == "timeout" and answer.fallback == "timeout"
    assert answer.mode == EXTRACTIVE and "descaled every 30 days" in answer.text


def test_no_evidence_is_refused_without_scoring_or_generating() -> None:
    generator = ScriptedGenerator("unused")
    weak = [
        Hit(1, 1, 0.1, HITS[0].chunk, dense=0.1, keyword=0.1),
    ]
    ctx = context(GENERATIVE, generator, [])
    ctx.retrieve = lambda question, k: weak
    answer = ask("What is the boiling point of nitrogen?", ctx)
    assert answer.refused and generator.calls == 0 and answer.mode is None
    assert answer.text.startswith("The documents do not contain the answer")
