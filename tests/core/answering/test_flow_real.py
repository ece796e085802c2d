"""The ask flow with the real default models over a small real corpus."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from citeline.app import ModelPool, open_workspace
from citeline.core.generation import Generator
from citeline.service.workspace import Workspace
from citeline.settings import Settings
from conftest import CountingEmbedder

CORPUS = {
    "kitchen.md": (
        "# Kitchen handbook\n\n"
        "## Coffee machine\n\n"
        "The coffee machine must be descaled every 30 days with citric acid.\n"
        "Descaling takes about twenty minutes.\n\n"
        "## Fridge\n\n"
        "The fridge is cleaned every Friday afternoon by the office team.\n"
    ),
    "security.md": (
        "# Security policy\n\n"
        "## Passwords\n\n"
        "Passwords must be at least 14 characters long and are rotated every 90 days.\n\n"
        "## Badges\n\n"
        "Visitors receive a red badge at the front desk and must return it when leaving.\n"
    ),
    "travel.md": (
        "# Travel policy\n\n"
        "## Trains\n\n"
        "Train tickets are booked in second class for trips shorter than four hours.\n"
    ),
}


class CountingGenerator:
    """The real generator, counting calls; optionally appending text to its stream."""

    def __init__(self, inner: Generator, inject: str = "") -> None:
        self.inner = inner
        self.inject = inject
        self.calls = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def context_size(self) -> int:
        return self.inner.context_size

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        should_stop: Callable[[], bool],
    ) -> Iterator[str]:
        self.calls += 1
        yield from self.inner.stream_chat(
            messages, max_tokens=max_tokens, temperature=temperature, should_stop=should_stop
        )
        if self.inject:
            yield self.inject


@pytest.fixture()
def workspace(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Workspace]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in CORPUS.items():
        (docs / name).write_text(text)
    settings = Settings()
    ws = open_workspace(docs, settings, ModelPool(embedders={settings.embedding: embedder}))
    ws.update()
    yield ws
    ws.close()


def generative(workspace: Workspace) -> None:
    answer = dataclasses.replace(workspace.settings.answer, mode="generative")
    workspace.settings = dataclasses.replace(workspace.settings, answer=answer)


def test_answerable_question_is_answered_with_the_sentence_that_holds_the_answer(
    workspace: Workspace, real_generator: Generator
) -> None:
    gen = CountingGenerator(real_generator)
    streamed: list[str] = []
    answer = workspace.ask(
        "How often must the coffee machine be descaled?",
        on_token=streamed.append,
        generator=lambda: gen,
    )
    # the bundled generator does not write answers: the evidence's own sentence does
    assert gen.calls == 0 and not answer.generator_called and not answer.refused
    assert answer.mode == "extractive" and answer.grade == "answer"
    assert "The coffee machine must be descaled every 30 days with citric acid. [1]" in answer.text
    first = answer.citations[0]
    assert (first.n, first.path, first.section) == (
        1,
        "kitchen.md",
        "Kitchen handbook > Coffee machine",
    )
    lines = (workspace.docs_root / "kitchen.md").read_text().splitlines()
    cited = "\n".join(lines[first.start_line - 1 : first.end_line])
    assert "descaled every 30 days" in cited
    assert "".join(streamed) == answer.text
    assert answer.timings["first_text"] is not None
    assert answer.timings["total"] >= answer.timings["retrieval"]
    # the ask was recorded, with paths relative to the folder
    record = json.loads((workspace.index_dir / "asks.jsonl").read_text().splitlines()[-1])
    assert record["question"].startswith("How often")
    assert record["mode"] == "extractive" and "generation" not in record["models"]
    assert (record["grade"], record["grade_label"]) == ("answer", "Answer")
    assert all(not h["path"].startswith("/") for h in record["hits"])


def test_generative_answers_keep_only_sentences_their_evidence_supports(
    workspace: Workspace, real_generator: Generator
) -> None:
    generative(workspace)
    gen = CountingGenerator(real_generator, inject=" Bananas grow on the moon [1].")
    streamed: list[str] = []
    answer = workspace.ask(
        "How often must the coffee machine be descaled?",
        on_token=streamed.append,
        generator=lambda: gen,
    )
    assert gen.calls == 1 and answer.generator_called and not answer.refused
    assert "Bananas grow on the moon" in "".join(streamed)
    assert "Bananas" not in answer.text
    assert any("Bananas" in str(d["sentence"]) for d in answer.dropped)
    assert answer.mode in ("generative", "extractive")
    if answer.mode == "extractive":  # nothing the 135M model wrote was supported
        assert answer.fallback == "unsupported"
    assert answer.citations and "kitchen.md" in {c.path for c in answer.citations}
    assert {c.n for c in answer.citations} <= {e.n for e in answer.evidence}
    record = json.loads((workspace.index_dir / "asks.jsonl").read_text().splitlines()[-1])
    assert record["models"]["generation"].endswith(".gguf")
    assert "/" not in record["models"]["generation"]
    assert record["prompt"][1]["content"].count("[1]") >= 1
    assert any("Bananas" in d["sentence"] for d in record["dropped"])


def test_off_topic_is_refused_without_calling_the_generator(
    workspace: Workspace, real_generator: Generator
) -> None:
    generative(workspace)
    gen = CountingGenerator(real_generator)
    answer = workspace.ask(
        "What is the boiling point of liquid nitrogen on Mars?", generator=lambda: gen
    )
    assert gen.calls == 0 and not answer.generator_called
    assert answer.refused and answer.citations == [] and answer.mode is None
    assert answer.text.startswith("The documents do not contain the answer")
    assert "kitchen.md" in answer.text or "security.md" in answer.text or "travel.md" in answer.text


def test_on_topic_question_the_documents_do_not_answer_is_refused(
    workspace: Workspace, real_generator: Generator
) -> None:
    generative(workspace)
    gen = CountingGenerator(real_generator)
    answer = workspace.ask("Which brand of citric acid does the office buy?", generator=lambda: gen)
    assert answer.refused and gen.calls == 0, answer.text
    assert answer.grade == "refused" and answer.refusal == "off_topic"


def test_chinese_off_topic_is_refused_in_chinese(
    workspace: Workspace, real_generator: Generator
) -> None:
    gen = CountingGenerator(real_generator)
    answer = workspace.ask("火星上的液氮沸点是多少？", generator=lambda: gen)
    assert gen.calls == 0 and answer.refused and answer.language == "zh"
    assert answer.text.startswith("文档中没有这个问题的答案")


def test_markers_to_missing_evidence_are_stripped(
    workspace: Workspace, real_generator: Generator
) -> None:
    generative(workspace)
    gen = CountingGenerator(real_generator, inject=" See also [7].")
    streamed: list[str] = []
    answer = workspace.ask(
        "How long must passwords be?", on_token=streamed.append, generator=lambda: gen
    )
    assert gen.calls == 1 and len(answer.evidence) < 7
    assert "[7]" not in answer.text and "[7]" not in "".join(streamed)
    assert all(c.n in {e.n for e in answer.evidence} for c in answer.citations)


def test_forced_timeout_falls_back_to_the_extractive_answer(
    workspace: Workspace, real_generator: Generator
) -> None:
    generative(workspace)
    settings = dataclasses.replace(workspace.settings.answer, timeout_seconds=0.0)
    workspace.settings = dataclasses.replace(workspace.settings, answer=settings)
    gen = CountingGenerator(real_generator)
    answer = workspace.ask("How often is the fridge cleaned?", generator=lambda: gen)
    assert answer.degraded == "timeout" and answer.fallback == "timeout"
    assert answer.mode == "extractive" and not answer.refused
    assert "The fridge is cleaned every Friday afternoon by the office team. [1]" in answer.text
    assert answer.citations and all(c.cited for c in answer.citations)
    assert answer.citations[0].path == "kitchen.md"
