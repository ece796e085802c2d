"""The models wheel (``citeline-models``): default models ready to load, looked up first.

A release ships the default models as a wheel of their own (``scripts/release.sh``
builds it): the embedding model already converted to GGUF by Citeline's converter,
the answer model as its GGUF, their licences, and ``manifest.json``, which names
each file.  The package is located without importing it.  A converted model is used
only when it was written by this converter version; otherwise (an older models
wheel beside a newer Citeline) the model is converted from its source package as
without the wheel.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from citeline.models import ModelError, read_json

PACKAGE = "citeline_models"
DISTRIBUTION = "citeline-models"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class PackagedModel:
    """One model file of the models wheel."""

    name: str
    path: Path
    converter: int | None  # the converter version that wrote it; None: shipped as GGUF
    license: str


def package_dir() -> Path | None:
    """The installed ``citeline_models`` folder, or None."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_models() -> dict[str, PackagedModel]:
    """The models the installed wheel holds, by name ({} without the wheel).  Raises
    ``ModelError`` when the wheel is installed but its manifest is damaged."""
    folder = package_dir()
    if folder is None:
        return {}
    manifest = read_json(folder / MANIFEST, required=True)
    found: dict[str, PackagedModel] = {}
    for name, entry in (manifest.get("models") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise ModelError(f"{folder / MANIFEST}: model {name!r} has no file; reinstall it")
        converter = entry.get("converter")
        found[name] = PackagedModel(
            name=name,
            path=folder / entry["file"],
            converter=converter if isinstance(converter, int) else None,
            license=str(entry.get("license", "")),
        )
    return found


def packaged_model(name: str, *, converter: int | None = None) -> Path | None:
    """The wheel's file for model ``name`` when it is present (and, for a converted
    model, written by ``converter``); None otherwise."""
    model = packaged_models().get(name)
    if model is None or not model.path.is_file():
        return None
    if converter is not None and model.converter != converter:
        return None
    return model.path
