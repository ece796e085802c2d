"""The folder watcher: real watchdog events reduced to document paths, rescans and
settings changes, delivered on the event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from citeline.core.walking import DocumentFilter
from citeline.service.watcher import FolderWatcher

Seen = list[tuple[set[str], bool, bool]]


async def collect(root: Path, change: Callable[[], object], settle: float = 1.0) -> Seen:
    seen: Seen = []
    watcher = FolderWatcher(
        DocumentFilter(root, root / ".citeline"),
        lambda paths, rescan, settings: seen.append((paths, rescan, settings)),
        asyncio.get_running_loop(),
    )
    watcher.start()
    try:
        change()
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(settle)  # late events of the same change
    finally:
        watcher.stop()
    return seen


async def test_documents_are_reported_and_the_rest_ignored(tmp_path: Path) -> None:
    (tmp_path / ".citeline").mkdir()

    def change() -> None:
        (tmp_path / ".citeline" / "index.sqlite3").write_text("x")
        (tmp_path / ".hidden.md").write_text("x")
        (tmp_path / "picture.png").write_bytes(b"x")
        (tmp_path / "notes.md").write_text("# Notes\n")

    seen = await collect(tmp_path, change)
    paths = set().union(*(p for p, _, _ in seen))
    assert paths == {"notes.md"}
    assert not any(rescan or settings for _, rescan, settings in seen)


async def test_a_new_folder_asks_for_a_rescan_and_citeline_toml_for_settings(
    tmp_path: Path,
) -> None:
    seen = await collect(tmp_path, lambda: (tmp_path / "sub").mkdir())
    assert any(rescan for _, rescan, _ in seen)
    seen = await collect(tmp_path, lambda: (tmp_path / "citeline.toml").write_text("[search]\n"))
    assert any(settings for _, _, settings in seen)
