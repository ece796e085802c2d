"""A checked-in ``citeline.toml`` that points the index somewhere it must not go: each
case runs ``citeline status`` on a folder holding it, with a home folder and a place
outside the documents folder that hold the user's files.  Nothing outside the folder
is ever moved, renamed or written, a file that is not an index is never treated as a
damaged one, and the user is told why the setting was refused.

Outcomes: ``refused`` (the setting is dropped with a warning naming it; the index is
the default ``.citeline``; exit 0), ``error`` (the place is inside the folder but is
not an index: one line, exit 2, the file untouched), ``used`` (a place inside the
folder that is free: the index goes there).
Used by tests/torture/test_confinement.py and benchmarks/torture.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from citeline.cache import cache_dir
from torture.hostile import PROSE


@dataclass(frozen=True)
class Case:
    name: str
    path: str  # the [index] path the checked-in file sets
    outcome: str  # refused | error | used
    prepare: Callable[[Path, Path], None] = lambda docs, outside: None


def _link_out(docs: Path, outside: Path) -> None:
    (docs / "link").symlink_to(outside)


def _notes_folder(docs: Path, outside: Path) -> None:
    (docs / "notes").mkdir()
    (docs / "notes" / "plan.md").write_text("# Plan\n\n" + PROSE)


CASES = (
    Case("home dotfile", "~/.bashrc", "refused"),
    Case("home folder", "~", "refused"),
    Case("absolute file outside", "{outside}/precious.txt", "refused"),
    Case("absolute folder outside", "{outside}", "refused"),
    Case("dot-dot out", "../outside/precious.txt", "refused"),
    Case("symlink out", "link", "refused", _link_out),
    Case("through a symlink out", "link/idx", "refused", _link_out),
    Case("the folder itself", ".", "refused"),
    Case("a document", "README.md", "error"),
    Case("a folder of documents", "notes", "error", _notes_folder),
    Case("a free place inside", "idx", "used"),
)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every name under ``folder`` with its bytes (or its link target, or "dir")."""
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = path.read_bytes()
    return found


def run_case(work: Path, case: Case) -> str | None:
    """None when the case has its outcome and nothing outside the documents folder (nor
    the README or notes inside it) changed; else what went wrong."""
    base = work / case.name.replace(" ", "-")
    home, outside, docs = base / "home", base / "outside", base / "docs"
    for folder in (home, outside, docs):
        folder.mkdir(parents=True)
    (home / ".bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    (outside / "precious.txt").write_text("the user's own file\n")
    (docs / "README.md").write_text("# Readme\n\n" + PROSE)
    case.prepare(docs, outside)
    setting = case.path.replace("{outside}", str(outside))
    (docs / "citeline.toml").write_text(f"[index]\npath = {setting!r}\n".replace("'", '"'))
    before_home, before_outside = snapshot(home), snapshot(outside)
    before_docs = {k: v for k, v in snapshot(docs).items() if k != "citeline.toml"}
    # The model cache stays where it is: only the files a user keeps in their home count.
    cache = os.environ.get("CITELINE_CACHE_DIR") or str(cache_dir())
    env = {**os.environ, "HOME": str(home), "CITELINE_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-m", "citeline.cli", "status", "--docs", str(docs), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if "Traceback" in done.stderr:
        return f"traceback: {done.stderr[-400:]}"
    if snapshot(home) != before_home:
        return "the home folder changed"
    if snapshot(outside) != before_outside:
        return "the folder outside changed"
    after_docs = snapshot(docs)
    for rel, content in before_docs.items():
        if after_docs.get(rel) != content:
            return f"{rel} in the documents folder changed"
    if any(".damaged-" in rel for rel in after_docs):
        return "something was moved aside as damaged"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if case.outcome == "refused":
        if done.returncode != 0:
            return f"exit {done.returncode}: {done.stderr[-300:]}"
        said = [line for line in lines if "[index] path" in line and "refused" in line]
        if len(said) != 1:
            return f"expected one warning naming [index] path, got {lines}"
        if not (docs / ".citeline" / "index.sqlite3").is_file():
            return "the default index was not used"
    elif case.outcome == "error":
        if done.returncode != 2 or len(lines) != 1 or "leaves it alone" not in lines[0]:
            return f"expected one line and exit 2, got exit {done.returncode}: {lines}"
    elif case.outcome == "used":
        if done.returncode != 0 or lines:
            return f"exit {done.returncode}: {lines}"
        if not (docs / setting / "index.sqlite3").is_file():
            return "the index is not where the setting put it"
    return None


def run_all(work: Path) -> dict[str, str | None]:
    return {case.name: run_case(work, case) for case in CASES}
