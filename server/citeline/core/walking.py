"""Finding the documents in a folder: ignore rules, hidden folders, symlinks.

Skipped: hidden files and folders (a leading dot), the index folder, anything a
``.gitignore`` or ``.citelineignore`` excludes (in the folder where the file
sits and below it, with gitignore's anchoring, ``**``, directory-only and ``!``
negation rules), unsupported formats, and symlinks whose target lies outside the
documents folder.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

IGNORE_FILES = (".gitignore", ".citelineignore")


@dataclass(frozen=True)
class _Rule:
    base: str  # folder (relative, forward slashes, "" for the root) the rule file lives in
    pattern: re.Pattern[str]
    negated: bool
    directory_only: bool


def _translate(glob: str) -> str:
    """gitignore glob to regex (without anchors)."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = glob.find("]", i + 1)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close
        elif c == "\\" and i + 1 < len(glob):
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def parse_ignore_file(text: str, base: str) -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = f"^{body}$" if anchored else f"^(?:.*/)?{body}$"
        rules.append(_Rule(base, re.compile(regex), negated, directory_only))
    return rules


def _ignored(rules: list[_Rule], rel: str, is_dir: bool) -> bool:
    result = False
    for rule in rules:
        if rule.directory_only and not is_dir:
            continue
        if rule.base:
            if not rel.startswith(rule.base + "/"):
                continue
            subject = rel[len(rule.base) + 1 :]
        else:
            subject = rel
        if rule.pattern.match(subject):
            result = not rule.negated
    return result


def iter_documents(
    root: Path, is_supported: Callable[[Path], bool], index_dir: Path | None = None
) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative path with forward slashes, absolute path)`` for every document."""
    root = root.resolve()
    index_real = index_dir.resolve() if index_dir is not None else None
    visited: set[str] = set()
    rules: list[_Rule] = []

    def walk(folder: Path, rel_folder: str) -> Iterator[tuple[str, Path]]:
        real = os.path.realpath(folder)
        if real in visited:
            return
        visited.add(real)
        for name in IGNORE_FILES:
            ignore_file = folder / name
            if ignore_file.is_file():
                with contextlib.suppress(OSError):
                    text = ignore_file.read_text("utf-8", "replace")
                    rules.extend(parse_ignore_file(text, rel_folder))
        try:
            # Real entries before symlinks, so a folder reachable both ways is
            # indexed under its real path.
            entries = sorted(os.scandir(folder), key=lambda e: (e.is_symlink(), e.name))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            path = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue
                if target != root and root not in target.parents:
                    continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if index_real is not None and os.path.realpath(path) == str(index_real):
                    continue
                if _ignored(rules, rel, True):
                    continue
                yield from walk(path, rel)
            elif entry.is_file() and is_supported(path) and not _ignored(rules, rel, False):
                yield rel, path

    yield from walk(root, "")
