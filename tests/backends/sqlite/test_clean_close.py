"""The stamp a clean close leaves: trusted only while the database is exactly as that
close left it, with real SQLite files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from citeline.backends.sqlite import clean_close
from citeline.backends.sqlite.store import SqliteStore, StoreDamaged, rebuild_marker


def closed_store(path: Path) -> Path:
    """A store with a row, opened and closed cleanly."""
    store = SqliteStore(path)
    store.set_meta("note", "x" * 50_000)
    store.close()
    return path


def quick_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``quick_check`` the store runs from now on."""
    seen: list[str] = []
    connect = sqlite3.connect

    def tracing(*args, **kwargs):  # type: ignore[no-untyped-def]
        db = connect(*args, **kwargs)
        db.set_trace_callback(lambda sql: seen.append(sql) if "quick_check" in sql else None)
        return db

    monkeypatch.setattr(sqlite3, "connect", tracing)
    return seen


def test_a_clean_close_spares_the_next_open_its_check_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = closed_store(tmp_path / "s.db")
    assert clean_close.stamp_path(path).exists()
    checks = quick_checks(monkeypatch)
    store = SqliteStore(path)
    assert checks == [] and store.get_meta("note") == "x" * 50_000
    assert not clean_close.stamp_path(path).exists()  # consumed: a crash now leaves none
    other = SqliteStore(path)  # opened while the first is open: checked
    assert len(checks) == 1
    other.close()  # the first still holds the WAL: no stamp
    assert not clean_close.stamp_path(path).exists()
    store.close()
    assert clean_close.stamp_path(path).exists()


@pytest.mark.parametrize("damage", ["pages overwritten", "header zeroed", "truncated"])
def test_damage_right_after_a_clean_close_is_still_found(tmp_path: Path, damage: str) -> None:
    path = closed_store(tmp_path / "s.db")
    with path.open("r+b") as handle:  # at once: within the same clock tick as the close
        if damage == "pages overwritten":
            handle.seek(4096)
            handle.write(os.urandom(4096 * 4))
        elif damage == "header zeroed":
            handle.write(bytes(100))
        else:
            handle.truncate(path.stat().st_size // 2)
    assert not clean_close.consume(path)
    with pytest.raises(StoreDamaged, match="damaged"):
        SqliteStore(path).chunks_by_id(list(range(1, 50)))


def test_a_change_with_its_mtime_put_back_is_still_seen(tmp_path: Path) -> None:
    path = closed_store(tmp_path / "s.db")
    before = path.stat()
    with path.open("r+b") as handle:
        handle.seek(4096)
        handle.write(os.urandom(4096))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as recorded
    assert not clean_close.consume(path)  # the ctime moved


def test_a_wal_beside_the_database_means_a_check(tmp_path: Path) -> None:
    path = closed_store(tmp_path / "s.db")
    path.with_name("s.db-wal").write_bytes(b"")
    assert not clean_close.consume(path)
    assert not clean_close.stamp_path(path).exists()


def test_a_stamp_of_garbage_or_of_another_file_is_not_trusted(tmp_path: Path) -> None:
    path = closed_store(tmp_path / "s.db")
    clean_close.stamp_path(path).write_text("{not json")
    assert not clean_close.consume(path)
    closed_store(path)
    replacement = tmp_path / "other.db"
    closed_store(replacement)
    os.replace(replacement, path)  # another database in its place
    assert not clean_close.consume(path)


def test_no_stamp_after_damage_met_in_use(tmp_path: Path) -> None:
    path = closed_store(tmp_path / "s.db")
    store = SqliteStore(path)
    rebuild_marker(path).touch()  # what a statement meeting damage leaves
    store.close()
    assert not clean_close.stamp_path(path).exists()
    with pytest.raises(StoreDamaged, match="found damaged while in use"):
        SqliteStore(path)
