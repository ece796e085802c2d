"""Past answers read back from real asks: listed newest first, searched, shown with
their sources compared with the files now, deleted; nothing when asks are not recorded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.app import ModelPool, open_workspace
from citeline.service.history import FolderHistory, page, preview
from citeline.service.workspace import Workspace
from citeline.settings import load_settings
from corpora import GARDEN, KITCHEN, write_files

COFFEE = "How often is the coffee machine descaled?"
BREAD = "How long is the dough kneaded?"


def open_folder(root: Path, models: ModelPool, **overrides: object) -> Workspace:
    settings, _ = load_settings(root, overrides)
    ws = open_workspace(root, settings, models)
    ws.update()
    return ws


@pytest.fixture()
def kitchen(tmp_path: Path, models: ModelPool) -> Iterator[Workspace]:
    ws = open_folder(write_files(tmp_path / "kitchen", KITCHEN), models)
    yield ws
    ws.close()


def history_of(ws: Workspace) -> FolderHistory:
    return FolderHistory.of(ws.docs_root, ws.settings)


def test_asks_are_listed_newest_first_and_searched(kitchen: Workspace) -> None:
    coffee = kitchen.ask(COFFEE)
    kitchen.ask(BREAD)
    history = history_of(kitchen)
    found = page([history])
    assert found.total == 2
    assert [e.question for e in found.entries] == [BREAD, COFFEE]
    entry = found.entries[1]  # the coffee ask
    assert entry.folder == kitchen.docs_root and entry.time.endswith("Z")
    assert entry.grade in ("answer", "closest") and entry.mode == coffee.mode
    assert entry.sources == len(coffee.citations) >= 1
    assert entry.preview == preview(coffee.text) and len(entry.preview) <= 200
    # a case-insensitive substring of the question or of the answer
    assert [e.question for e in page([history], "COFFEE MACHINE").entries] == [COFFEE]
    word = coffee.text.split()[1].strip(".,").upper()  # a word of the answer only
    assert COFFEE in [e.question for e in page([history], word).entries]
    assert page([history], "no such words anywhere").entries == []
    # pages
    assert [e.question for e in page([history], None, limit=1, offset=1).entries] == [COFFEE]
    assert page([history], None, limit=1, offset=10).entries == []


def test_an_entry_is_the_answer_as_given_and_says_when_a_source_changed(
    kitchen: Workspace,
) -> None:
    answer = kitchen.ask(COFFEE)
    history = history_of(kitchen)
    (entry,) = page([history]).entries
    recorded = history.entry(entry.id)
    assert recorded is not None and not recorded.stale
    shown = recorded.to_json()
    assert shown["id"] == entry.id and shown["time"] == entry.time
    assert shown["answer"] == answer.text and shown["question"] == COFFEE
    assert [c["start_line"] for c in shown["citations"]] == [c.start_line for c in answer.citations]
    assert all(c["changed"] is False for c in shown["citations"])
    assert set(recorded.passages) == {c.n for c in answer.citations}
    assert not {"prompt", "hashes", "passages", "models"} & set(shown)

    cited = kitchen.docs_root / answer.citations[0].path
    cited.write_text(cited.read_text() + "\n## Tea\n\nThe kettle is descaled monthly.\n")
    changed = history.entry(entry.id)
    assert changed is not None and changed.stale
    assert changed.to_json()["stale"] is True
    assert all(c["changed"] for c in changed.to_json()["citations"])
    assert changed.copies[answer.citations[0].path] == "differs"
    cited.unlink()
    gone = history.entry(entry.id)
    assert gone is not None and gone.copies[answer.citations[0].path] == "missing"
    assert history.entry("0123456789abcdef") is None


def test_entries_are_deleted_one_by_one_or_all(kitchen: Workspace) -> None:
    kitchen.ask(COFFEE)
    kitchen.ask(BREAD)
    history = history_of(kitchen)
    newest, oldest = page([history]).entries
    assert history.delete(newest.id) == 1
    assert [e.id for e in page([history]).entries] == [oldest.id]
    assert history.delete(newest.id) == 0
    assert history.delete(None) == 1
    assert page([history]).total == 0


def test_several_folders_merge_newest_first(
    kitchen: Workspace, tmp_path: Path, models: ModelPool
) -> None:
    garden = open_folder(write_files(tmp_path / "garden", GARDEN), models)
    try:
        kitchen.ask(COFFEE)
        garden.ask("How much sun do tomatoes need?")
        found = page([history_of(kitchen), history_of(garden)])
        assert found.total == 2
        assert [e.folder.name for e in found.entries] == ["garden", "kitchen"]
    finally:
        garden.close()


def test_nothing_is_recorded_when_asks_are_off(tmp_path: Path, models: ModelPool) -> None:
    ws = open_folder(write_files(tmp_path / "quiet", KITCHEN), models, records={"asks": False})
    try:
        ws.ask(COFFEE)
        assert page([history_of(ws)]).total == 0
        assert not (ws.index_dir / "asks.jsonl").exists()
    finally:
        ws.close()
