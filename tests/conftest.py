"""Shared fixtures: the real default models, loaded once per session; a small
cross-encoder reranker and a MiniLM conversion the tests build themselves; small corpora."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from lsprotocol import types

from citeline.app import ModelPool, make_embedder, make_generator, make_reranker
from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator
from citeline.core.reranking import Reranker
from citeline.lsp.server import build_server
from citeline.models.bert_gguf import convert_bert_to_gguf
from citeline.models.minilm import minilm_source_dir
from citeline.settings import EmbeddingSettings, GenerationSettings, RerankingSettings
from corpora import GARDEN, KITCHEN, write_files
from inprocess import Served, initialize
from postgres import TestServer
from recording import JsonCapture, settled
from reference_bert import ReferenceBert

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"


def copy_samples(dest: Path) -> Path:
    """The bundled sample documents, without any index a demo run left beside them."""
    shutil.copytree(SAMPLES, dest, ignore=shutil.ignore_patterns(".citeline"))
    return dest


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.embedded = 0
        self.queries = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return self.inner.embed_query(text)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    return make_embedder(EmbeddingSettings())


@pytest.fixture()
def embedder(real_embedder: Embedder) -> CountingEmbedder:
    return CountingEmbedder(real_embedder)


@pytest.fixture(scope="session")
def real_generator() -> Generator:
    return make_generator(GenerationSettings())


def build_cross_encoder(dest: Path, seed: int = 0) -> Path:
    """A BertForSequenceClassification checkpoint the tests make themselves.

    all-MiniLM-L6-v2's encoder and pooler with a seeded random classifier: a real
    cross-encoder architecture (its scores are meaningless for relevance), so the
    conversion, llama.cpp's rank pooling and the reranking path are exercised for
    real and can be checked against a numpy forward pass of the same weights.
    """
    from safetensors.numpy import load_file, save_file

    source = minilm_source_dir()
    dest.mkdir(parents=True)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(source / name, dest / name)
    config = json.loads((source / "config.json").read_text())
    config["architectures"] = ["BertForSequenceClassification"]
    config["id2label"] = {"0": "LABEL_0"}
    config["label2id"] = {"LABEL_0": 0}
    (dest / "config.json").write_text(json.dumps(config))
    weights = {
        f"bert.{name}": value for name, value in load_file(source / "model.safetensors").items()
    }
    rng = np.random.default_rng(seed)
    hidden = int(config["hidden_size"])
    weights["classifier.weight"] = rng.normal(0.0, 1.0, (1, hidden)).astype(np.float32)
    weights["classifier.bias"] = np.array([0.25], dtype=np.float32)
    save_file(weights, dest / "model.safetensors")
    return dest


@pytest.fixture(scope="session")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("cross-encoder") / "tiny-cross-encoder")


@pytest.fixture(scope="session")
def reranker_path(cross_encoder_dir: Path) -> Path:
    """The test cross-encoder as a GGUF reranker (F32, so scores match the reference)."""
    target = cross_encoder_dir.parent / "tiny-cross-encoder.f32.gguf"
    convert_bert_to_gguf(cross_encoder_dir, target, f16=False)
    return target


@pytest.fixture(scope="session")
def real_reranker(reranker_path: Path) -> Reranker:
    reranker = make_reranker(RerankingSettings(model=str(reranker_path)))
    assert reranker is not None
    return reranker


@pytest.fixture()
def models(embedder: CountingEmbedder, real_generator: Generator) -> ModelPool:
    """The default models, loaded once per session, for workspaces and services."""
    return ModelPool(
        embedders={EmbeddingSettings(): embedder},
        generators={GenerationSettings(): real_generator},
    )


# -- all-MiniLM-L6-v2 converted by the tests themselves (F16, as the default), its
# numpy reference forward pass, and the embedder over that conversion


@pytest.fixture(scope="session")
def source_dir() -> Path:
    return minilm_source_dir()


@pytest.fixture(scope="session")
def gguf_path(source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("minilm") / "minilm.gguf"
    convert_bert_to_gguf(source_dir, target, f16=True)
    return target


@pytest.fixture(scope="session")
def reference(source_dir: Path) -> ReferenceBert:
    return ReferenceBert(source_dir, max_seq_length=256)


@pytest.fixture(scope="session")
def converted(gguf_path: Path) -> Iterator[LlamaEmbedder]:
    """The embedder on the tests' own conversion (one thread: reproducible timings)."""
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1) as model:
        yield model


# -- a language server in this process, serving two small folders


@pytest.fixture()
async def served(tmp_path: Path, models: ModelPool) -> AsyncIterator[Served]:
    ls = build_server(backends=models)
    wire = JsonCapture()
    ls.protocol.set_writer(wire)
    initialize(ls, types.ClientCapabilities())  # VS Code-like enough: no showDocument
    garden = write_files(tmp_path / "garden", GARDEN)
    kitchen = write_files(tmp_path / "kitchen", KITCHEN)
    ls.service.folders.editor_settings = {"answer": {"max_answer_tokens": 32}}
    ls.service.serve([garden, kitchen])
    deadline = time.monotonic() + 600
    while any(f.state != "ready" or not settled(f) for f in ls.service.folders):
        assert time.monotonic() < deadline, "the folders never got ready"
        await asyncio.sleep(0.05)
    yield Served(ls, wire, garden, kitchen)
    await ls.service.shutdown(30)
    ls.service.stop(30)


# -- a real PostgreSQL + pgvector server (the team index), once per session


@pytest.fixture(scope="session")
def postgres() -> Iterator[TestServer]:
    server = TestServer()
    yield server
    server.close()
