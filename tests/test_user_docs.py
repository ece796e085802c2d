"""What the user-facing documents tell people to run exists.

``docs/user-guide.md``, the README files and ``samples/`` (the demo corpus, which
``citeline demo`` quotes back with citations) name editor commands, settings and
``citeline`` subcommands.  Each one named is looked up where it is defined: the VS
Code extension's ``package.json``, the Neovim plugin's user commands, the Emacs
package's interactive commands, and the command line's parser.  A command renamed or
removed without its documentation fails here, and so does documentation of one that
was never built (the kind of instruction that sent users to code actions, ``gd`` and
``M-.``, which the server does not provide).
"""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

import pytest

from citeline.cli import _parser as build_parser
from conftest import REPO

VSCODE = REPO / "editor-clients" / "vscode"
NEOVIM = REPO / "editor-clients" / "neovim"
EMACS = REPO / "editor-clients" / "emacs"

USER_DOCS = sorted(
    [
        REPO / "README.md",
        REPO / "docs" / "user-guide.md",
        VSCODE / "README.md",
        NEOVIM / "README.md",
        NEOVIM / "doc" / "citeline.txt",
        EMACS / "README.md",
        *(REPO / "samples").glob("*.md"),
        *(REPO / "samples").glob("*.html"),
    ]
)

# "Citeline: Title" set off as a command is: **…**, *…*, <em>…</em>, <strong>…</strong>, "…"
_VSCODE_TITLE = re.compile(
    r"(?:\*\*|\*|<em>|<strong>|[\"“])Citeline: ([^*<\"”]{1,60}?)(?:\*\*|\*|</em>|</strong>|[\"”])"
)
_NEOVIM_COMMAND = re.compile(r"(?<![\w-]):(Cite[A-Z]\w*)")
_EMACS_COMMAND = re.compile(r"M-x (citeline-[\w-]+)")
# `citeline X` as code: in backticks or <code>, after a prompt or a venv's bin/, or
# starting a line of a code block
_CLI_COMMAND = re.compile(r"(?:`|<code>|\$ |bin/|^ *)citeline ([a-z][a-z-]+)\b", re.MULTILINE)
_VSCODE_SETTING = re.compile(r"`(citeline\.[a-z][\w.]*[A-Za-z])`")
FILE_NAMES = {"citeline.toml", "citeline.vsix", "citeline.el", "citeline.txt"}


def flat_text(path: Path) -> str:
    """The document's text with markup line breaks folded, so a title split over two
    lines reads as one."""
    text = path.read_text("utf-8")
    if path.suffix == ".html":
        text = html.unescape(re.sub(r"<(?!/?(?:em|strong)\b)[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text)


def named(
    pattern: re.Pattern[str], *, docs: list[Path] = USER_DOCS, flat: bool = True
) -> dict[str, set[str]]:
    """Each name the pattern finds -> the documents that name it (``flat``: in the
    text with its line breaks folded; else in the file as it is)."""
    found: dict[str, set[str]] = {}
    for doc in docs:
        text = flat_text(doc) if flat else doc.read_text("utf-8")
        for name in pattern.findall(text):
            found.setdefault(name.strip(), set()).add(str(doc.relative_to(REPO)))
    return found


def package_json() -> dict[str, object]:
    return json.loads((VSCODE / "package.json").read_text("utf-8"))


def vscode_titles() -> set[str]:
    commands = package_json()["contributes"]["commands"]  # type: ignore[index]
    return {c["title"] for c in commands if c.get("category") == "Citeline"}


def vscode_settings() -> set[str]:
    configuration = package_json()["contributes"]["configuration"]  # type: ignore[index]
    return set(configuration["properties"])  # type: ignore[index]


def neovim_commands() -> set[str]:
    source = "\n".join(p.read_text("utf-8") for p in (NEOVIM / "lua").rglob("*.lua"))
    return set(re.findall(r'command\("(Cite\w+)"', source))


def emacs_commands() -> set[str]:
    """The package's interactive commands (a defun whose body starts with
    ``(interactive``, its docstring skipped)."""
    source = (EMACS / "citeline.el").read_text("utf-8")
    commands = set()
    for match in re.finditer(r"\(defun (citeline-[\w-]+) \(", source):
        body = source[match.end() : match.end() + 1500]
        head = re.sub(r'"(?:[^"\\]|\\.)*"', "", body, count=1)  # the docstring
        if re.match(r"[^()]*\)\s*\(interactive\b", head):
            commands.add(match.group(1))
    return commands


def cli_commands() -> set[str]:
    parser = build_parser()
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name for action in subparsers for name in action.choices}


def test_every_vscode_command_the_docs_name_exists() -> None:
    titles = vscode_titles()
    assert "Index This Folder…" in titles and "Install the Server…" in titles
    documented = named(_VSCODE_TITLE)
    assert len(documented) >= 10
    # A title may be followed by its own words ("*Citeline: Reindex* brings…" is caught
    # whole), so a documented name must be a title or a title followed by a space.
    unknown = {
        name: where
        for name, where in documented.items()
        if name not in titles and not any(name.startswith(t + " ") for t in titles)
    }
    assert unknown == {}, f"VS Code commands the docs name that package.json lacks: {unknown}"


def test_every_vscode_setting_the_docs_name_exists() -> None:
    settings = vscode_settings()
    documented = named(_VSCODE_SETTING)
    assert "citeline.folders" in documented and "citeline.server.command" in documented
    # a setting's section (`citeline.server`) names the settings under it
    unknown = {
        name: where
        for name, where in documented.items()
        if name not in settings
        and name not in FILE_NAMES
        and not any(s.startswith(name + ".") for s in settings)
    }
    assert unknown == {}, f"VS Code settings the docs name that package.json lacks: {unknown}"


def test_every_neovim_command_the_docs_name_exists() -> None:
    commands = neovim_commands()
    assert {"CiteAsk", "CiteIndexFolder", "CiteReindex"} <= commands
    documented = named(_NEOVIM_COMMAND)
    assert "CiteIndexFolder" in documented
    unknown = {name: where for name, where in documented.items() if name not in commands}
    assert unknown == {}, f"Neovim commands the docs name that the plugin lacks: {unknown}"


def test_every_emacs_command_the_docs_name_is_interactive() -> None:
    commands = emacs_commands()
    assert {"citeline-ask", "citeline-reindex", "citeline-index-folder"} <= commands
    assert "citeline--server" not in commands and "citeline-root" not in commands
    documented = named(_EMACS_COMMAND)
    assert "citeline-index-folder" in documented
    unknown = {name: where for name, where in documented.items() if name not in commands}
    assert unknown == {}, f"Emacs commands the docs name that citeline.el lacks: {unknown}"


def test_every_citeline_subcommand_the_docs_name_exists() -> None:
    commands = cli_commands()
    assert {"doctor", "demo", "serve", "index", "ask"} <= commands
    documented = named(_CLI_COMMAND, flat=False)
    assert {"doctor", "demo", "ask", "serve", "index"} <= set(documented)
    unknown = {name: where for name, where in documented.items() if name not in commands}
    assert unknown == {}, f"citeline subcommands the docs name that the CLI lacks: {unknown}"


def test_the_docs_send_no_one_to_features_the_server_lacks() -> None:
    """The server offers no code actions and no go-to-definition: a document may say
    so, but never tell a user to use them."""
    instructions = re.compile(
        r"(?:press|use|run|type|with) (?:`gd`|<kbd>g</kbd><kbd>d</kbd>|`M-\.`|<code>M-\.</code>"
        r"|code actions?|`M-x eglot`|<code>M-x eglot</code>)",
        re.IGNORECASE,
    )
    found = {
        str(doc.relative_to(REPO)): instructions.findall(doc.read_text("utf-8"))
        for doc in USER_DOCS
    }
    assert {doc: hits for doc, hits in found.items() if hits} == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run *Citeline: Show\n  Logs* to see it", {"Show Logs"}),
        ("<em>Citeline: Run\n Doctor</em>", {"Run Doctor"}),
        ("the status bar says Citeline: ready", set()),
    ],
)
def test_the_reader_finds_titles_split_over_lines(
    tmp_path: Path, text: str, expected: set[str]
) -> None:
    doc = tmp_path / ("doc.html" if "<em>" in text else "doc.md")
    doc.write_text(text, "utf-8")
    assert set(_VSCODE_TITLE.findall(flat_text(doc))) == expected
