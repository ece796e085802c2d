"""The ask flow's decisions, with a scripted generator (the real-model flow is
tested in test_flow_real.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence

import pytest

from citeline.core.answering.fitted import ENGLISH
from citeline.core.answering.flow import EXTRACTIVE, GENERATIVE, AskContext, ask
from citeline.core.answering.results import Answer
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


def context(
    mode: str,
    generator: ScriptedGenerator,
    streamed: list[str],
    threshold: float = 0.0,
    unknown: Callable[[Sequence[str]], set[str]] | None = None,
) -> AskContext:
    return AskContext(
        retrieve=lambda question, k: list(HITS),
        # the flow's decisions, whatever the fitted weights: with threshold 0 every
        # answer is graded "answer", with 1 "closest"
        scorer=UnitScorer(
            lambda terms: dict.fromkeys(terms, 1.0),
            unknown or (lambda terms: set()),
            english=dataclasses.replace(ENGLISH, threshold=threshold),
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
    assert answer.grade == "answer" and answer.grade_label == "Answer"
    assert answer.to_json()["grade"] == "answer" and answer.refusal is None


def test_an_unsupported_generated_sentence_is_dropped_and_recorded() -> None:
    generator = ScriptedGenerator(
        "The coffee machine must be descaled every 30 days [1]. "
        "You can't change the embedding model because it is gone [2]."
    )
    streamed: list[str] = []
    answer = ask(QUESTION, context(GENERATIVE, generator, streamed))
    assert generator.calls == 1 and answer.mode == GENERATIVE
    assert answer.text == "The coffee machine must be descaled every 30 days. [1]"
    assert "kitchen.md" in [c.path for c in answer.citations]
    assert answer.dropped == [
        {
            "sentence": "You can't change the embedding model because it is gone.",
            "reason": "cites evidence that does not support it",
            "support": answer.dropped[0]["support"],
        }
    ]
    assert "embedding model" in "".join(streamed)  # it streamed, then settled without it
    assert "embedding model" not in answer.text
    assert answer.grade == "answer" and not answer.refused


def test_nothing_supported_falls_back_to_the_extractive_answer() -> None:
    generator = ScriptedGenerator("I like trains. They are fast [1].")
    answer = ask(QUESTION, context(GENERATIVE, generator, []))
    assert answer.generator_called and answer.mode == EXTRACTIVE
    assert answer.fallback == "unsupported"
    assert "descaled every 30 days" in answer.text and "[1]" in answer.text
    assert len(answer.dropped) == 2
    assert answer.grade == "answer"  # judged answerable before the generator wrote


def test_a_timeout_falls_back_to_the_extractive_answer() -> None:
    generator = ScriptedGenerator("The coffee machine must be descaled [1].")
    ctx = context(GENERATIVE, generator, [])
    ctx.settings = AnswerSettings(timeout_seconds=0.0)
    answer = ask(QUESTION, ctx)
    assert answer.degraded == "timeout" and answer.fallback == "timeout"
    assert answer.mode == EXTRACTIVE and "descaled every 30 days" in answer.text
    assert answer.grade == "answer"


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
    assert answer.grade == "refused" and answer.refusal == "off_topic"
    assert answer.grade_label == "Not found in the documents"
    data = answer.to_json()
    assert (data["grade"], data["refused"], data["citations"]) == ("refused", True, [])


def test_evidence_the_scorer_doubts_is_quoted_as_the_closest_passages_not_refused() -> None:
    for mode in (EXTRACTIVE, GENERATIVE):
        generator = ScriptedGenerator("unused")
        streamed: list[str] = []
        answer = ask(QUESTION, context(mode, generator, streamed, threshold=1.0))
        assert not answer.refused and answer.grade in ("answer", "closest"), mode
        assert answer.grade_label == "Closest passages — they may not answer the question"
        # quoted and cited like an answer; the generator never writes a doubtful answer
        assert answer.mode == EXTRACTIVE and generator.calls == 0
        assert "descaled every 30 days with citric acid. [1]" in answer.text
        assert answer.citations and answer.citations[0].path == "kitchen.md"
        assert "".join(streamed) == answer.text
        assert answer.to_json()["grade"] == "closest"


def test_a_question_naming_an_identifier_no_document_contains_is_refused() -> None:
    generator = ScriptedGenerator("unused")
    asked: list[list[str]] = []

    def unknown(terms: Sequence[str]) -> set[str]:
        asked.append(list(terms))
        return {t for t in terms if t == "descaler9000"}

    ctx = context(GENERATIVE, generator, [], unknown=unknown)
    answer = ask("How often must the Descaler9000 be descaled?", ctx)
    assert answer.refused and answer.grade == "refused" and answer.refusal == "unknown_term"
    assert generator.calls == 0 and answer.mode is None and answer.citations == []
    assert answer.text.startswith("The documents do not contain the answer")
    assert "kitchen.md" in answer.text  # the nearest passages are named
    assert ["descaler9000"] in asked
    # the same question without the unknown name is answered
    assert ask(QUESTION, ctx).grade == "answer"


def test_a_grade_that_contradicts_refused_is_an_error() -> None:
    with pytest.raises(ValueError):
        Answer("Q?", "en", "text", False, False, [], [], [], grade="refused")
    assert Answer("Q?", "zh", "text", True, False, [], [], []).grade_label == "文档中没有找到"


def test_a_keyword_only_question_the_scorer_finds_off_topic_is_refused() -> None:
    generator = ScriptedGenerator("unused")
    ctx = context(EXTRACTIVE, generator, [], threshold=1.0)
    ctx.dense_for_cjk = False  # the embedder does not read Chinese: keywords alone
    ctx.scorer.cjk = dataclasses.replace(ctx.scorer.cjk, floor=1.0)
    answer = ask("咖啡机多久除垢一次？", ctx)
    assert answer.refused and answer.refusal == "off_topic" and answer.citations == []
    ctx.scorer.cjk = dataclasses.replace(ctx.scorer.cjk, floor=0.0)
    assert ask("咖啡机多久除垢一次？", ctx).grade in ("answer", "closest")


def test_the_cjk_floor_does_not_refuse_evidence_found_across_languages() -> None:
    generator = ScriptedGenerator("unused")
    ctx = context(EXTRACTIVE, generator, [], threshold=1.0)
    ctx.scorer.cjk = dataclasses.replace(ctx.scorer.cjk, floor=1.0)  # refuses any CJK ask
    # a multilingual embedder admitted English evidence for a Chinese question: the
    # floor's character features cannot read it, so it does not refuse
    answer = ask("咖啡机多久除垢一次？", ctx)
    assert not answer.refused and answer.grade in ("answer", "closest")
    assert "kitchen.md" in [c.path for c in answer.citations]
    # with one passage in Chinese among the evidence, the floor judges as before
    chinese = hit(3, "咖啡机每三十天用柠檬酸除垢一次。", "zh/kitchen.md")
    ctx.retrieve = lambda question, k: [*HITS, chinese]
    assert ask("咖啡机多久除垢一次？", ctx).refusal == "off_topic"
    # an embedder that does not read Chinese: keyword evidence in English is no sign
    ctx.retrieve = lambda question, k: list(HITS)
    ctx.dense_for_cjk = False
    assert ask("咖啡机多久除垢一次？", ctx).refusal == "off_topic"


def test_a_keyword_only_cjk_question_whose_terms_no_document_holds_is_refused() -> None:
    generator = ScriptedGenerator("unused")
    known = {"咖啡", "啡机", "除垢"}
    ctx = context(EXTRACTIVE, generator, [], unknown=lambda terms: set(terms) - known)
    ctx.dense_for_cjk = False
    ctx.scorer.cjk = dataclasses.replace(ctx.scorer.cjk, floor=0.0)
    # half its content terms ("板球") are in no document: refused, the nearest named
    answer = ask("板球的规则是什么？", ctx)
    assert answer.refused and answer.refusal == "unknown_term" and "kitchen.md" in answer.text
    # one content term of three missing: answered from the evidence
    assert ask("咖啡机怎样除垢和保养？", ctx).grade in ("answer", "closest")
    # an embedder that reads Chinese matches it by meaning: not refused for its words
    ctx.dense_for_cjk = True
    assert not ask("板球的规则是什么？", ctx).refused
