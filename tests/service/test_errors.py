"""The expected-error vocabulary covers every error a user can act on."""

from __future__ import annotations

from citeline.backends.llama.embedder import EmbeddingError
from citeline.backends.llama.generator import GenerationError
from citeline.backends.llama.reranker import RerankError
from citeline.backends.sqlite.store import StoreError
from citeline.evaluation.datasets import DatasetError
from citeline.models import ModelError
from citeline.service.errors import EXPECTED_ERRORS
from citeline.service.workers import WorkerStopped


def test_model_index_request_and_dataset_errors_are_expected() -> None:
    for error in (
        EmbeddingError,
        RerankError,
        GenerationError,
        StoreError,
        ModelError,
        WorkerStopped,
        DatasetError,
    ):
        assert issubclass(error, EXPECTED_ERRORS), error


def test_bugs_are_not() -> None:
    for error in (KeyError, ValueError, RuntimeError, OSError):
        assert not issubclass(error, EXPECTED_ERRORS)
