"""Progress on stderr while the command line indexes, queries or answers."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator


class ProgressBar:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self.started = time.perf_counter()
        self.drawn = False

    def __call__(self, done: int, total: int, path: str) -> None:
        if not self.enabled or total == 0:
            return
        width = 30
        filled = int(width * done / total)
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        name = path if len(path) <= 40 else "…" + path[-39:]
        sys.stderr.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
            f" {rate:.1f} files/s {name:<40}"
        )
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


@contextlib.contextmanager
def progress(label: str) -> Iterator[ProgressBar]:
    """A progress bar labelled ``label`` for the duration of the block."""
    bar = ProgressBar(label)
    try:
        yield bar
    finally:
        bar.close()
