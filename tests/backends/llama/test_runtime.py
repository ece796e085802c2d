"""llama.cpp's process setup and model files: one-line errors, metadata, identities."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import llama_cpp
import pytest

from citeline.backends.llama import runtime
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.embedding import Embedder
from citeline.core.errors import BackendError


class Problem(BackendError):
    pass


def test_a_file_must_exist_be_a_file_and_be_gguf(tmp_path: Path) -> None:
    with pytest.raises(Problem, match=r"model .*missing\.gguf does not exist"):
        runtime.check_gguf_file(tmp_path / "missing.gguf", "model", Problem)
    with pytest.raises(Problem, match="is a directory"):
        runtime.check_gguf_file(tmp_path, "model", Problem)
    (tmp_path / "text.gguf").write_text("hello")
    with pytest.raises(Problem, match="not a GGUF file"):
        runtime.check_gguf_file(tmp_path / "text.gguf", "model", Problem)
    (tmp_path / "ok.gguf").write_bytes(b"GGUF" + bytes(8))
    runtime.check_gguf_file(tmp_path / "ok.gguf", "model", Problem)


def test_a_file_identity_follows_its_content(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(100))
    first = runtime.file_identity(path)
    assert runtime.file_identity(path) == first
    path.write_bytes(b"GGUF" + bytes(99) + b"x")
    assert runtime.file_identity(path) != first


def test_the_backend_is_prepared_once_and_metadata_is_read(real_embedder: Embedder) -> None:
    assert isinstance(real_embedder, LlamaEmbedder)
    assert runtime.import_llama_cpp(Problem, "x") is llama_cpp
    runtime.prepare_llama(llama_cpp)  # again: nothing happens twice
    model = real_embedder._model
    assert runtime.model_meta(llama_cpp, model, "general.architecture") == "bert"
    assert runtime.model_meta(llama_cpp, model, "no.such.key") is None
    assert runtime.available_cpus() >= 1


def test_without_a_captured_message_the_error_says_so() -> None:
    runtime.clear_log()
    assert runtime.last_message() == "no details from llama.cpp"


def test_openmp_threads_wait_passively_unless_the_user_says_otherwise() -> None:
    # A fresh interpreter: libgomp reads the variable once, when llama.cpp loads.
    probe = (
        "import os; from citeline.backends.llama import runtime;"
        "runtime.import_llama_cpp(RuntimeError, 'a probe');"
        "print(os.environ['OMP_WAIT_POLICY'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "PASSIVE", out.stderr
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "ACTIVE", out.stderr


def test_the_c_api_comes_without_the_high_level_api_until_a_name_needs_it() -> None:
    code = """
import sys
from citeline.backends.llama import runtime
package = runtime.import_llama_cpp(RuntimeError, "model")
assert "llama_cpp.llama" not in sys.modules and "jinja2" not in sys.modules
assert package.llama_backend_init is sys.modules["llama_cpp.llama_cpp"].llama_backend_init
from llama_cpp import Llama
import llama_cpp
assert llama_cpp is package and Llama.__module__ == "llama_cpp.llama" and llama_cpp.__version__
assert runtime.import_llama_cpp(RuntimeError, "model") is package
"""
    subprocess.run([sys.executable, "-c", code], check=True)
