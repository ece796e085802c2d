"""Which folders are served: the one rule every client follows.

A folder the editor merely opened (a workspace folder, the root an editor
guessed, the directory an agent was started in) is served only when it holds a
marker: a ``citeline.toml`` file or a ``.citeline/`` folder.  A folder the user
named (the ``folders`` setting, ``citeline serve --docs DIR``, ``citeline mcp
--docs DIR``, or the "index this folder" request) is served regardless.  When the
``folders`` setting is set it replaces the opened folders altogether.

Nothing is written into a folder that is not served; :func:`mark` writes the
minimal ``citeline.toml`` the "index this folder" request leaves behind, so that
the folder is served again next time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from citeline.service.errors import ServiceError
from citeline.service.folders import folder_key
from citeline.settings import SETTINGS_FILE

INDEX_MARKER = ".citeline"
NO_MARKER = (
    f"not served: no {SETTINGS_FILE} or {INDEX_MARKER}/ folder in it"
    " (index it with “Citeline: Index This Folder”, or list it in the citeline.folders setting)"
)
NOT_IN_SETTING = "not served: the citeline.folders setting lists the folders to serve"

MINIMAL_SETTINGS = f"""\
# Citeline serves this folder because this file is here ({SETTINGS_FILE}).
# Every setting is optional; the defaults are in Citeline's user guide. For example:
#
# [search]
# top_k = 5
#
# [records]
# asks = true   # keep past answers in .citeline/asks.jsonl
"""


@dataclass(frozen=True)
class Unserved:
    """A folder the editor opened that is not served, and why (one line)."""

    root: Path
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"docs": str(self.root), "reason": self.reason}


@dataclass(frozen=True)
class Selection:
    served: list[Path]  # in order: opened folders first, then named ones
    unserved: list[Unserved] = field(default_factory=list)


def marked(root: Path) -> bool:
    """Whether ``root`` holds ``citeline.toml`` (a file) or ``.citeline/`` (a folder)."""
    try:
        return (root / SETTINGS_FILE).is_file() or (root / INDEX_MARKER).is_dir()
    except OSError:
        return False


def select(
    opened: Iterable[Path],
    named: Iterable[Path] = (),
    setting: Sequence[Path] | None = None,
) -> Selection:
    """The folders to serve.  ``opened``: what the editor opened; ``named``: what the
    user named on the command line or by request; ``setting``: the ``folders``
    setting (None when unset; when set, it replaces ``opened``)."""
    wanted = [*(setting or ()), *named]
    named_keys = {folder_key(p) for p in wanted}
    served: list[Path] = []
    seen: set[str] = set()
    unserved: list[Unserved] = []

    def serve(root: Path) -> None:
        key = folder_key(root)
        if key not in seen:
            seen.add(key)
            served.append(root)

    for root in opened:
        key = folder_key(root)
        if key in named_keys or (setting is None and marked(root)):
            serve(root)
        elif key not in seen and all(u.root != root for u in unserved):
            unserved.append(Unserved(root, NO_MARKER if setting is None else NOT_IN_SETTING))
    for root in wanted:
        serve(root)
    return Selection(served, unserved)


def mark(root: Path) -> bool:
    """Write the minimal ``citeline.toml`` into ``root`` unless it holds a marker
    already; whether it wrote one.  A folder that does not exist, or cannot be
    written, is a one-line :class:`ServiceError`; an existing file is never replaced."""
    if not root.is_dir():
        raise ServiceError(f"documents folder {root} does not exist")
    if marked(root):
        return False
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root / SETTINGS_FILE, flags, 0o644)
    except FileExistsError:  # a link or something else by that name: leave it alone
        raise ServiceError(f"{root / SETTINGS_FILE} exists but is not a regular file") from None
    except OSError as exc:
        raise ServiceError(f"cannot write {root / SETTINGS_FILE}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(MINIMAL_SETTINGS)
    return True
