"""Which files in a folder are documents: ignore rules, hidden folders, symlinks.

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

from citeline.core import loaders

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


class DocumentFilter:
    """Which files under a documents folder are documents: the one rule for the
    walker, the watcher and editor saves.

    :meth:`candidate` is the cheap part, from the path alone (no hidden part, not
    in the index folder, a supported format): what the watcher and saves ask
    before scheduling work.  :meth:`walk` lists every document; :meth:`check` says
    whether one path is a document now, reading only the ignore files of its own
    folders, so planning a saved file costs nothing in the size of the tree.
    """

    def __init__(
        self,
        root: Path,
        index_dir: Path | None = None,
        is_supported: Callable[[str], bool] = loaders.is_supported_name,
    ) -> None:
        self.root = root.resolve()
        self.index_dir = index_dir.resolve() if index_dir is not None else None
        self._index_rel: str | None = None
        if self.index_dir is not None:
            with contextlib.suppress(ValueError):
                self._index_rel = self.index_dir.relative_to(self.root).as_posix()
        self._is_supported = is_supported

    def in_index_folder(self, rel: str) -> bool:
        index_rel = self._index_rel
        return bool(index_rel) and (rel == index_rel or rel.startswith(f"{index_rel}/"))

    def visible(self, rel: str) -> bool:
        """Whether a relative path is one the folder's documents may live in: no
        hidden part, not in the index folder."""
        if rel in ("", "."):
            return False
        if any(part.startswith(".") for part in rel.split("/")):
            return False
        return not self.in_index_folder(rel)

    def candidate(self, rel: str) -> bool:
        """Whether a relative path can be a document, judged from the path alone."""
        return self.visible(rel) and self._is_supported(rel.rpartition("/")[2])

    def check(self, rel: str) -> bool | None:
        """Whether ``rel`` is a document now (as :meth:`walk` would find it).

        None when only a walk can tell: the path goes through a symlinked folder,
        which the walk indexes under its real path when it meets that first.
        """
        if not self.candidate(rel):
            return False
        rules: list[_Rule] = []
        folder, rel_folder = self.root, ""
        _read_rules(folder, rel_folder, rules)
        *folders, name = rel.split("/")
        for part in folders:
            path = folder / part
            rel_folder = f"{rel_folder}/{part}" if rel_folder else part
            if path.is_symlink():
                return None
            if not path.is_dir() or _ignored(rules, rel_folder, True):
                return False
            folder = path
            _read_rules(folder, rel_folder, rules)
        path = folder / name
        if path.is_symlink() and not self._inside(path):
            return False
        return path.is_file() and not _ignored(rules, rel, False)

    def _inside(self, path: Path) -> bool:
        """Whether a symlink's target lies inside the documents folder."""
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return False
        return target == self.root or self.root in target.parents

    def walk(self) -> Iterator[tuple[str, Path]]:
        """``(relative path with forward slashes, absolute path)`` of every document."""
        for rel, entry in self.entries():
            yield rel, Path(entry.path)

    def entries(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """``(relative path, directory entry)`` of every document, as :meth:`walk` lists
        them: a whole-folder plan stats the entries and builds a ``Path`` only for the
        files that changed (building one per file was most of a 25,000-file check)."""
        visited: set[str] = set()
        rules: list[_Rule] = []

        def walk(folder: Path, rel_folder: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
            real = os.path.realpath(folder)
            if real in visited:
                return
            visited.add(real)
            _read_rules(folder, rel_folder, rules)
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
                if entry.is_symlink() and not self._inside(Path(entry.path)):
                    continue
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
                if is_dir:
                    path = Path(entry.path)
                    if self.index_dir is not None and os.path.realpath(path) == str(self.index_dir):
                        continue
                    if _ignored(rules, rel, True):
                        continue
                    yield from walk(path, rel)
                elif (
                    entry.is_file()
                    and self._is_supported(entry.name)
                    and not _ignored(rules, rel, False)
                ):
                    yield rel, entry

        yield from walk(self.root, "")


def _read_rules(folder: Path, rel_folder: str, rules: list[_Rule]) -> None:
    """Add the rules of ``folder``'s ignore files (gitignore's, then Citeline's)."""
    for name in IGNORE_FILES:
        ignore_file = folder / name
        if ignore_file.is_file():
            with contextlib.suppress(OSError):
                text = ignore_file.read_text("utf-8", "replace")
                rules.extend(parse_ignore_file(text, rel_folder))
