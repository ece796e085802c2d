"""Torture: a folder of hostile files indexes in one run, each file with the outcome
the table says (tests/torture/hostile.py), nothing fatal, and a second run does nothing."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.settings import Settings
from conftest import CountingEmbedder
from torture.hostile import KINDS, build, verdicts


def index_outcomes(root: Path, embedder: CountingEmbedder) -> tuple[dict[str, str | None], int]:
    """Each kind's verdict after one index run, and what a second run embedded."""
    made = build(root)
    settings = Settings()
    ws = open_workspace(root, settings, ModelPool(embedders={settings.embedding: embedder}))
    try:
        report = ws.update()
        assert not report.cancelled
        records = ws.index.files()
        again = ws.update()
    finally:
        ws.close()
    with sqlite3.connect(root / ".citeline" / "index.sqlite3") as db:
        counts = dict(db.execute("SELECT file_id, count(*) FROM chunks GROUP BY file_id"))
    files = {path: (counts.get(r.id, 0), r.error) for path, r in records.items()}
    return verdicts(made, files), again.embedded + again.files_changed


def test_every_hostile_kind_has_its_expected_outcome(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    assert len(KINDS) >= 40
    root = tmp_path / "docs"
    root.mkdir()
    started = time.monotonic()
    results, second_run = index_outcomes(root, embedder)
    failed = {name: why for name, why in results.items() if why is not None}
    assert failed == {}
    assert second_run == 0  # nothing changed, nothing done
    assert time.monotonic() - started < 120
