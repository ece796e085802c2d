"""Shared fixtures: the real default embedding model, loaded once per session."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from citeline.app import make_embedder, make_generator
from citeline.core.embedding import Embedder
from citeline.core.generation import Generator
from citeline.settings import EmbeddingSettings, GenerationSettings

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
