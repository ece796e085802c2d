"""Writing the answer: the :class:`Generator` protocol the answer stage depends on.

A generator streams text pieces for a chat (system + user messages); ``should_stop``
is polled between tokens, which is how timeouts and cancellation stop it.  The
implementation on llama.cpp is ``citeline.backends.llama.generator``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol


class Generator(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def context_size(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        should_stop: Callable[[], bool],
    ) -> Iterator[str]: ...
