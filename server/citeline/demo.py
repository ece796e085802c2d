"""The demo corpus: Citeline's own documentation, shipped in the wheel as package data.

In a checkout ``citeline/samples`` is a link to the repository's ``samples/``, which
the demo indexes in place.  In an installed wheel it is a folder inside
site-packages, which may be read-only and should not collect an index: the demo
indexes a copy in the cache folder instead, brought in step with the installed
documents on every run (a changed file is copied again, a removed one removed; the
copy's own index is kept, so a second demo reuses its embeddings).
"""

from __future__ import annotations

import os
from pathlib import Path

from citeline import cache
from citeline.service.errors import ServiceError

#: Where the sample documents live in the package.
PACKAGED = Path(__file__).parent / "samples"
#: The index folder inside a documents folder, which a copy keeps.
_INDEX_FOLDER = ".citeline"


def demo_documents(packaged: Path = PACKAGED) -> Path:
    """The folder the demo indexes: the checkout's ``samples/``, or the cache's copy
    of the installed ones.  Raises ``ServiceError`` when they are not installed."""
    if packaged.is_symlink():
        return packaged.resolve()
    if not (packaged / "getting-started.md").is_file():
        raise ServiceError(
            f"the sample documents are not installed ({packaged} is missing): reinstall citeline"
        )
    target = cache.cache_dir() / "demo" / "samples"
    sync_copy(packaged, target)
    return target


def sync_copy(source: Path, target: Path) -> int:
    """Make ``target`` hold exactly ``source``'s files (its ``.citeline`` aside);
    returns how many files were written."""
    wanted: set[Path] = set()
    written = 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if _INDEX_FOLDER in relative.parts or not path.is_file():
            continue
        wanted.add(relative)
        destination = target / relative
        data = path.read_bytes()
        try:
            if destination.read_bytes() == data:
                continue
        except OSError:
            pass
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, destination)
        written += 1
    for path in sorted(target.rglob("*"), reverse=True):
        relative = path.relative_to(target)
        if _INDEX_FOLDER in relative.parts:
            continue
        if path.is_file() and relative not in wanted:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return written
