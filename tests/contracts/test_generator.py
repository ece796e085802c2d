"""The Generator contract, run against every implementation: the default llama.cpp
chat model (loaded once per session) and the scripted generator."""

from __future__ import annotations

import pytest

from citeline.backends.llama.generator import LlamaGenerator
from citeline.core.generation import Generator
from memory import ScriptedGenerator

MESSAGES = [
    {"role": "system", "content": "Answer in one short sentence."},
    {"role": "user", "content": "What colour is the sky on a clear day?"},
]


@pytest.fixture(params=["llama", "scripted"])
def generator(request: pytest.FixtureRequest) -> Generator:
    if request.param == "llama":
        real: Generator = request.getfixturevalue("real_generator")
        assert isinstance(real, LlamaGenerator)  # the implementation the product uses
        return real
    return ScriptedGenerator()


def test_it_names_itself_and_counts_tokens(generator: Generator) -> None:
    assert generator.name and generator.context_size > 0
    assert generator.count_tokens("") == 0
    assert 0 < generator.count_tokens("sky") < generator.count_tokens("the sky is blue today")


def test_it_streams_text_pieces_within_max_tokens(generator: Generator) -> None:
    pieces = list(
        generator.stream_chat(MESSAGES, max_tokens=8, temperature=0.0, should_stop=lambda: False)
    )
    assert pieces and all(isinstance(p, str) and p for p in pieces)
    assert generator.count_tokens("".join(pieces)) <= 8 + 2  # re-tokenising may differ a little


def test_should_stop_is_polled_between_tokens(generator: Generator) -> None:
    assert (
        list(
            generator.stream_chat(MESSAGES, max_tokens=8, temperature=0.0, should_stop=lambda: True)
        )
        == []
    )
    polls: list[int] = []

    def stop_after_two() -> bool:
        polls.append(1)
        return len(polls) > 2

    pieces = list(
        generator.stream_chat(MESSAGES, max_tokens=32, temperature=0.0, should_stop=stop_after_two)
    )
    assert len(pieces) <= 2
