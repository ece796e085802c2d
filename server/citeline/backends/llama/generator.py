"""The :class:`~citeline.core.generation.Generator` on llama.cpp: a GGUF chat model.

It streams text pieces for a chat (system + user messages), formatted with the
model's own chat template from its GGUF metadata.  ``should_stop`` is polled
between tokens, which is how timeouts and cancellation stop it.  Use from one
thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from citeline.backends.llama import runtime
from citeline.backends.llama.cpu_share import CPU, ThreadLimit
from citeline.core.errors import BackendError

log = logging.getLogger(__name__)


DECODE_THREADS = 1


class GenerationError(BackendError):
    """The generation model cannot be loaded or failed; one line naming the file."""


class LlamaGenerator:
    """A GGUF chat model through llama-cpp-python, loaded once and kept."""

    def __init__(
        self,
        model_path: Path,
        *,
        context_size: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
    ) -> None:
        if not model_path.is_file():
            raise GenerationError(f"generation model {model_path} does not exist")
        try:
            llama_cpp = runtime.import_llama_cpp(GenerationError, f"generation model {model_path}")
            from llama_cpp import Llama  # typed; loaded by import_llama_cpp

            runtime.prepare_llama(llama_cpp)  # llama.cpp's own logging silenced, once
            threads = n_threads or runtime.available_cpus()
            # The prompt is read on every thread; tokens are decoded on one: a small
            # model's per-token work is too little to share across threads that wait
            # for each other at every layer (measured: docs/performance.md).
            self._llm = Llama(
                model_path=str(model_path),
                n_ctx=context_size,
                n_threads=DECODE_THREADS,
                n_threads_batch=threads,
                seed=seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise GenerationError(
                f"cannot load generation model {model_path}: {str(exc).splitlines()[0]}"
            ) from exc
        self._path = model_path
        self._context = int(self._llm.n_ctx())
        ctx = self._llm._ctx.ctx  # llama-cpp-python's context pointer
        self._thread_limit = ThreadLimit(
            self, threads, lambda n: llama_cpp.llama_set_n_threads(ctx, DECODE_THREADS, n)
        )

    @property
    def name(self) -> str:
        return self._path.name

    @property
    def context_size(self) -> int:
        return self._context

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        should_stop: Callable[[], bool],
    ) -> Iterator[str]:
        try:
            with CPU.busy(self):
                self._thread_limit.fit()  # this model's share of the cores
                stream = self._llm.create_chat_completion(
                    messages=list(messages),  # type: ignore[arg-type]
                    max_tokens=max_tokens,
                    temperature=temperature,
                    top_p=0.9,
                    repeat_penalty=1.1,
                    stream=True,
                )
                for part in stream:
                    if should_stop():
                        return
                    delta = part["choices"][0]["delta"]  # type: ignore[index]
                    piece = delta.get("content") if isinstance(delta, dict) else None
                    if piece:
                        yield str(piece)
                    self._thread_limit.fit()  # before the next token is computed
        except (ValueError, RuntimeError) as exc:
            raise GenerationError(f"generation with {self.name} failed: {exc}") from exc
