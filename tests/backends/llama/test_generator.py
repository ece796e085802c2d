"""The chat model on llama.cpp (its contract is tests/contracts/test_generator.py):
loading errors are one line naming the file; it counts tokens as the model does."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.backends.llama import runtime
from citeline.backends.llama.generator import DECODE_THREADS, GenerationError, LlamaGenerator
from citeline.core.generation import Generator
from citeline.models.smollm import GENERATOR_FILE_NAME


def test_the_default_model_is_named_by_its_file(real_generator: Generator) -> None:
    assert isinstance(real_generator, LlamaGenerator)
    assert real_generator.name == GENERATOR_FILE_NAME
    assert real_generator.context_size == 2048
    assert real_generator.count_tokens("Hello world") == 2


def test_unusable_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(GenerationError, match=r"missing\.gguf does not exist"):
        LlamaGenerator(tmp_path / "missing.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(GenerationError, match=r"cannot load generation model .*bad\.gguf") as info:
        LlamaGenerator(bad)
    assert "\n" not in str(info.value)


def test_tokens_are_decoded_on_one_thread_and_the_prompt_read_on_all(
    real_generator: Generator,
) -> None:
    assert isinstance(real_generator, LlamaGenerator)
    import llama_cpp

    ctx = real_generator._llm.ctx  # llama.cpp's context, read through the bindings
    assert llama_cpp.llama_n_threads(ctx) == DECODE_THREADS == 1
    assert llama_cpp.llama_n_threads_batch(ctx) == runtime.available_cpus()
