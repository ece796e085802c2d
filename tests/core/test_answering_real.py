"""The ask flow with the real default models over a small real corpus."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from citeline.app import ModelPool, Workspace, open_workspace
from citeline.core.generation import Generator
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


def test_answerable_question_cites_the_chunk_that_holds_the_answer(
    workspace: Workspace, real_generator: Generator
) -> None:
    gen = CountingGenerator(real_generator)
    streamed: list[str] = []
    answer = workspace.ask(
        "How often must the coffee machine be descaled?",
        on_token=streamed.append,
        generator=lambda: gen,
    )
    assert gen.calls == 1 and answer.generator_called and not answer.refused
    assert answer.citations, answer.text
    first = answer.citations[0]
    assert (first.path, first.section) == ("kitchen.md", "Kitchen handbook > Coffee machine")
    lines = (workspace.docs_root / "kitchen.md").read_text().splitlines()
    cited = "\n".join(lines[first.start_line - 1 : first.end_line])
    assert "descaled every 30 days" in cited
    assert "".join(streamed).strip() == answer.text.strip()
    assert answer.timings["first_token"] is not None
    assert answer.timings["total"] >= answer.timings["retrieval"]
    # the ask was recorded, with paths relative to the folder
    record = json.loads((workspace.index.index_dir / "asks.jsonl").read_text().splitlines()[-1])
    assert record["question"].startswith("How often")
    assert (
        record["models"]["generation"].endswith(".gguf")
        and "/" not in record["models"]["generation"]
    )
    assert all(not h["path"].startswith("/") for h in record["hits"])
    assert record["prompt"][1]["content"].count("[1]") >= 1


def test_off_topic_is_refused_without_calling_the_generator(
    workspace: Workspace, real_generator: Generator
) -> None:
    gen = CountingGenerator(real_generator)
    answer = workspace.ask(
        "What is the boiling point of liquid nitrogen on Mars?", generator=lambda: gen
    )
    assert gen.calls == 0 and not answer.generator_called
    assert answer.refused and answer.citations == []
    assert answer.text.startswith("The documents do not contain the answer")
    assert "kitchen.md" in answer.text or "security.md" in answer.text or "travel.md" in answer.text


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
    gen = CountingGenerator(real_generator, inject=" See also [7].")
    streamed: list[str] = []
    answer = workspace.ask(
        "How long must passwords be?", on_token=streamed.append, generator=lambda: gen
    )
    assert gen.calls == 1 and len(answer.evidence) <= 4
    assert len(answer.evidence) < 7
    assert "[7]" not in answer.text and "[7]" not in "".join(streamed)
    assert "See also" in answer.text
    assert all(c.n in {e.n for e in answer.evidence} for c in answer.citations)


def test_forced_timeout_returns_the_evidence(
    workspace: Workspace, real_generator: Generator
) -> None:
    settings = dataclasses.replace(workspace.settings.answer, timeout_seconds=0.0)
    workspace.settings = dataclasses.replace(workspace.settings, answer=settings)
    gen = CountingGenerator(real_generator)
    answer = workspace.ask("How often is the fridge cleaned?", generator=lambda: gen)
    assert answer.degraded == "timeout" and not answer.refused
    assert answer.text.startswith("No answer was generated in time")
    assert answer.citations and all(not c.cited for c in answer.citations)
    assert any(c.path == "kitchen.md" for c in answer.citations)
