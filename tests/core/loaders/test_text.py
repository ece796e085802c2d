"""Plain text and reStructuredText loading, and text decoding."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from citeline.core.documents import LoadError, SourceDocument
from citeline.core.loaders import load_document


def _load(tmp_path: Path, name: str, content: str | bytes) -> SourceDocument:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return load_document(path, name)


def _spans(doc: SourceDocument) -> list[tuple[tuple[str, ...], int | None, int | None, str]]:
    return [(b.heading_path, b.start_line, b.end_line, b.text) for b in doc.blocks]


def test_plain_text_paragraphs(tmp_path: Path) -> None:
    doc = _load(
        tmp_path,
        "notes.txt",
        "\n\nFirst paragraph\ncontinues here.   \n\n  \t\nSecond one.\n\n\nThird\n",
    )
    assert doc.kind == "text"
    assert doc.title == "notes"
    assert doc.title_from_content is False
    assert _spans(doc) == [
        ((), 3, 4, "First paragraph\ncontinues here."),
        ((), 7, 7, "Second one."),
        ((), 10, 10, "Third"),
    ]


def test_crlf_lone_cr_and_utf16_bom(tmp_path: Path) -> None:
    crlf = _load(tmp_path, "a.text", b"one\r\ntwo\r\n\r\nthree")
    assert _spans(crlf) == [((), 1, 2, "one\ntwo"), ((), 4, 4, "three")]
    old_mac = _load(tmp_path, "b.txt", b"one\rtwo\r\rthree\r")
    assert _spans(old_mac) == [((), 1, 2, "one\ntwo"), ((), 4, 4, "three")]
    utf16 = _load(tmp_path, "c.txt", "héllo\r\n\r\nwörld\r\n".encode("utf-16"))
    assert _spans(utf16) == [((), 1, 1, "héllo"), ((), 3, 3, "wörld")]
    bom8 = _load(tmp_path, "d.txt", b"\xef\xbb\xbfStart\n")
    assert _spans(bom8) == [((), 1, 1, "Start")]


def test_a_few_invalid_utf8_bytes_are_replaced(tmp_path: Path) -> None:
    content = "Café au lait — naïve résumé.\n".encode() * 20 + b"bad \xff\xfe byte\n"
    doc = _load(tmp_path, "menu.txt", content)
    assert len(doc.blocks) == 1
    assert doc.blocks[0].start_line == 1
    assert doc.blocks[0].end_line == 21
    assert doc.blocks[0].text.split("\n")[-1] == "bad \ufffd\ufffd byte"
    assert doc.blocks[0].text.split("\n")[0] == "Café au lait — naïve résumé."


def test_windows_1252_text_is_decoded(tmp_path: Path) -> None:
    content = "Déjà vu, façade, crème brûlée, naïve, Ångström.\n".encode("cp1252") * 3
    doc = _load(tmp_path, "legacy.txt", content)
    assert _spans(doc) == [
        ((), 1, 3, "\n".join(["Déjà vu, façade, crème brûlée, naïve, Ångström."] * 3)),
    ]


def test_binary_without_nul_is_rejected(tmp_path: Path) -> None:
    rng = random.Random(7)
    content = bytes(rng.randrange(1, 256) for _ in range(4000))
    with pytest.raises(LoadError) as info:
        _load(tmp_path, "data.txt", content)
    assert str(info.value) == "looks like a binary file, not text"


RST = """\
=============
 User Manual
=============

Welcome to the manual.

Installation
============

Run the installer.
It takes a minute.

Requirements
------------

Python 3.11.

----

Configuration
=============

Edit ``citeline.toml``.

Not a title
because this line is part of a paragraph
=====
"""


def test_rst_titles_build_sections(tmp_path: Path) -> None:
    doc = _load(tmp_path, "manual.rst", RST)
    assert doc.kind == "text"
    assert doc.title == "User Manual"
    assert doc.title_from_content is True
    assert _spans(doc) == [
        (("User Manual",), 5, 5, "Welcome to the manual."),
        (("User Manual", "Installation"), 10, 11, "Run the installer.\nIt takes a minute."),
        (("User Manual", "Installation", "Requirements"), 16, 16, "Python 3.11."),
        (("User Manual", "Configuration"), 23, 23, "Edit ``citeline.toml``."),
        (
            ("User Manual", "Configuration"),
            25,
            27,
            "Not a title\nbecause this line is part of a paragraph\n=====",
        ),
    ]


def test_rst_without_titles_uses_stem(tmp_path: Path) -> None:
    doc = _load(tmp_path, "changelog.rst", "* fixed a bug\n* added a feature\n")
    assert doc.title == "changelog"
    assert doc.title_from_content is False
    assert _spans(doc) == [((), 1, 2, "* fixed a bug\n* added a feature")]


def test_rst_short_underline_is_not_a_title(tmp_path: Path) -> None:
    doc = _load(tmp_path, "x.rst", "Long heading text\n====\n\nBody.\n")
    assert doc.title == "x"
    assert _spans(doc) == [((), 1, 2, "Long heading text\n===="), ((), 4, 4, "Body.")]
