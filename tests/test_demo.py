"""The demo corpus: the checkout's samples in place, or a copy of the installed ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from citeline.demo import PACKAGED, demo_documents, sync_copy
from citeline.service.errors import ServiceError
from conftest import SAMPLES


def test_in_a_checkout_the_demo_indexes_the_repository_samples() -> None:
    assert PACKAGED.is_symlink()
    assert demo_documents() == SAMPLES


def test_installed_samples_are_copied_into_the_cache_and_kept_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    installed = tmp_path / "site-packages" / "citeline" / "samples"
    shutil.copytree(SAMPLES, installed, ignore=shutil.ignore_patterns(".citeline"))
    docs = demo_documents(installed)
    assert docs == tmp_path / "cache" / "demo" / "samples"
    names = sorted(str(p.relative_to(installed)) for p in installed.rglob("*") if p.is_file())
    assert sorted(str(p.relative_to(docs)) for p in docs.rglob("*") if p.is_file()) == names
    assert (docs / "zh").is_dir() and (docs / "citeline-guide.pdf").read_bytes()[:4] == b"%PDF"

    (docs / ".citeline").mkdir()
    (docs / ".citeline" / "index.sqlite").write_bytes(b"kept")
    assert sync_copy(installed, docs) == 0  # nothing changed: nothing written

    (installed / "getting-started.md").write_text("# Changed\n", "utf-8")
    (installed / "troubleshooting.md").unlink()
    shutil.rmtree(installed / "zh")
    assert sync_copy(installed, docs) == 1
    assert (docs / "getting-started.md").read_text("utf-8") == "# Changed\n"
    assert not (docs / "troubleshooting.md").exists() and not (docs / "zh").exists()
    assert (docs / ".citeline" / "index.sqlite").read_bytes() == b"kept"


def test_missing_samples_are_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="sample documents are not installed"):
        demo_documents(tmp_path / "nowhere")
