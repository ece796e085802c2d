"""The folder-selection rule: an opened folder is served only with a marker; a folder
the user named always; the folders setting replaces the opened folders; the minimal
citeline.toml written for "index this folder"."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from citeline.service.errors import ServiceError
from citeline.service.selection import (
    MINIMAL_SETTINGS,
    NO_MARKER,
    NOT_IN_SETTING,
    Unserved,
    mark,
    marked,
    select,
)


@pytest.fixture()
def folders(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name in ("toml", "index", "plain", "named"):
        out[name] = tmp_path / name
        out[name].mkdir()
    (out["toml"] / "citeline.toml").write_text("[search]\ntop_k = 3\n")
    (out["index"] / ".citeline").mkdir()
    return out


def test_markers(folders: dict[str, Path], tmp_path: Path) -> None:
    assert marked(folders["toml"]) and marked(folders["index"])
    assert not marked(folders["plain"]) and not marked(tmp_path / "missing")
    odd = tmp_path / "odd"
    (odd / "citeline.toml").mkdir(parents=True)  # a folder by that name is no marker
    (odd / ".citeline").write_text("")  # nor is a file named .citeline
    assert not marked(odd)


def test_an_opened_folder_is_served_only_with_a_marker(folders: dict[str, Path]) -> None:
    chosen = select([folders["toml"], folders["plain"], folders["index"]])
    assert chosen.served == [folders["toml"], folders["index"]]
    assert chosen.unserved == [Unserved(folders["plain"], NO_MARKER)]
    assert "citeline.toml" in NO_MARKER and "Index This Folder" in NO_MARKER


def test_a_named_folder_is_served_regardless(folders: dict[str, Path]) -> None:
    chosen = select([folders["plain"], folders["toml"]], [folders["named"], folders["plain"]])
    assert chosen.served == [folders["plain"], folders["toml"], folders["named"]]
    assert chosen.unserved == []
    # one spelling per folder: a path with `..` or a trailing slash is the same folder
    again = select([folders["toml"]], [folders["toml"] / ".." / "toml"])
    assert again.served == [folders["toml"]]


def test_the_folders_setting_replaces_the_opened_folders(folders: dict[str, Path]) -> None:
    chosen = select(
        [folders["toml"], folders["plain"]], [folders["index"]], setting=[folders["named"]]
    )
    assert chosen.served == [folders["named"], folders["index"]]
    assert chosen.unserved == [
        Unserved(folders["toml"], NOT_IN_SETTING),
        Unserved(folders["plain"], NOT_IN_SETTING),
    ]
    both = select([folders["plain"]], setting=[folders["plain"]])
    assert both.served == [folders["plain"]] and both.unserved == []


def test_nothing_opened_nothing_served() -> None:
    assert select([]).served == [] and select([], setting=[]).served == []


def test_mark_writes_a_comment_only_settings_file_once(folders: dict[str, Path]) -> None:
    plain = folders["plain"]
    assert mark(plain) is True
    text = (plain / "citeline.toml").read_text()
    assert text == MINIMAL_SETTINGS and tomllib.loads(text) == {}
    assert all(line.startswith("#") for line in text.splitlines())
    assert marked(plain) and select([plain]).served == [plain]
    assert mark(plain) is False and (plain / "citeline.toml").read_text() == text
    before = (folders["toml"] / "citeline.toml").read_text()
    assert mark(folders["toml"]) is False  # a marked folder is left as it is
    assert (folders["toml"] / "citeline.toml").read_text() == before
    assert mark(folders["index"]) is False and not (folders["index"] / "citeline.toml").exists()


def test_mark_refuses_what_it_cannot_write(folders: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="does not exist"):
        mark(tmp_path / "missing")
    with pytest.raises(ServiceError, match="does not exist"):
        mark(folders["toml"] / "citeline.toml")  # a file, not a folder
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "citeline.toml").symlink_to(tmp_path / "elsewhere.toml")  # dangling
    with pytest.raises(ServiceError, match="not a regular file"):
        mark(linked)
    assert not (tmp_path / "elsewhere.toml").exists()  # never written through the link
    if os.geteuid() != 0:  # root writes anywhere
        locked = folders["plain"]
        locked.chmod(0o500)
        try:
            with pytest.raises(ServiceError, match="cannot write"):
                mark(locked)
        finally:
            locked.chmod(0o700)
