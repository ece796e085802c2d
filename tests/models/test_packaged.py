"""The models wheel: found first, without importing it; a stale or damaged one is told apart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from citeline.models import ModelError, minilm, packaged, smollm
from citeline.models.bert_gguf import CONVERTER_VERSION


def install_models_wheel(root: Path, *, converter: int = CONVERTER_VERSION) -> Path:
    """A ``citeline_models`` package as the wheel installs it, holding the real model
    files (linked), on ``sys.path`` ahead of any installed one."""
    package = root / packaged.PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise AssertionError('imported')\n", "utf-8")
    embedding = package / "all-MiniLM-L6-v2.f16.gguf"
    embedding.symlink_to(minilm.converted_model_path())
    generator = package / smollm.GENERATOR_FILE_NAME
    generator.symlink_to(smollm.source_model_path())
    manifest = {
        "version": "0.1.0",
        "models": {
            minilm.MODEL_NAME: {"file": embedding.name, "converter": converter},
            smollm.GENERATOR_MODEL_NAME: {"file": generator.name},
        },
    }
    (package / packaged.MANIFEST).write_text(json.dumps(manifest), "utf-8")
    return package


@pytest.fixture()
def wheel_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    return site


def test_the_models_wheel_is_found_first_and_not_imported(wheel_site: Path) -> None:
    package = install_models_wheel(wheel_site)
    assert packaged.package_dir() == package
    assert minilm.default_embedding_model_path() == package / "all-MiniLM-L6-v2.f16.gguf"
    assert smollm.default_generator_model_path() == package / smollm.GENERATOR_FILE_NAME
    assert packaged.PACKAGE not in sys.modules
    models = packaged.packaged_models()
    assert sorted(models) == sorted([minilm.MODEL_NAME, smollm.GENERATOR_MODEL_NAME])
    assert models[minilm.MODEL_NAME].converter == CONVERTER_VERSION
    assert models[smollm.GENERATOR_MODEL_NAME].converter is None


def test_a_model_converted_by_another_converter_is_converted_again(wheel_site: Path) -> None:
    install_models_wheel(wheel_site, converter=CONVERTER_VERSION + 1)
    assert minilm.default_embedding_model_path() == minilm.converted_model_path()
    assert smollm.default_generator_model_path().parent == wheel_site / packaged.PACKAGE


def test_a_missing_file_falls_back_to_the_source_packages(wheel_site: Path) -> None:
    package = install_models_wheel(wheel_site)
    (package / smollm.GENERATOR_FILE_NAME).unlink()
    assert smollm.default_generator_model_path() == smollm.source_model_path()


def test_a_damaged_manifest_is_a_one_line_model_error(wheel_site: Path) -> None:
    package = install_models_wheel(wheel_site)
    (package / packaged.MANIFEST).write_text("{not json", "utf-8")
    with pytest.raises(ModelError, match=r"cannot read .*manifest\.json"):
        minilm.default_embedding_model_path()
    (package / packaged.MANIFEST).write_text('{"models": {"all-MiniLM-L6-v2": {}}}', "utf-8")
    with pytest.raises(ModelError, match="has no file; reinstall it"):
        minilm.default_embedding_model_path()


def test_without_the_wheel_nothing_is_packaged(monkeypatch: pytest.MonkeyPatch) -> None:
    real = packaged.importlib.util.find_spec
    monkeypatch.setattr(
        packaged.importlib.util,
        "find_spec",
        lambda name: None if name == packaged.PACKAGE else real(name),
    )
    assert packaged.package_dir() is None and packaged.packaged_models() == {}
    assert minilm.default_embedding_model_path() == minilm.converted_model_path()
