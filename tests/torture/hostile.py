"""Hostile files: every kind of file a documents folder can hold that a loader, the
walker or the store could trip on, each with the outcome a user should see.

Outcomes: ``indexed`` (in the index with at least one chunk), ``empty`` (in the
index, no chunks, no error), ``error`` (in the index with a one-line error, shown
as a diagnostic), ``skipped`` (not a document: never read, not in the index).
Used by tests/torture/test_hostile_files.py and benchmarks/torture.py.
"""

from __future__ import annotations

import gzip
import os
import socket
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

PROSE = "The lighthouse keeper logs the weather at dawn and at dusk every day.\n"


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path], Path]  # creates the file in a folder, returns its path
    outcome: str  # indexed | empty | error | skipped


def _write(name: str, data: bytes | str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / os.fsdecode(name.encode("utf-8", "surrogateescape"))
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        return path

    return make


def _raw_name(raw: bytes, data: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = Path(os.fsdecode(os.fsencode(folder) + b"/" + raw))
        path.write_bytes(data)
        return path

    return make


def _pdf(
    name: str, pages: list[str], *, encrypt: bool = False, empty: bool = False
) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        doc = pymupdf.open()
        for text in pages:
            page = doc.new_page()
            if text:
                page.insert_text((72, 72), text)
        if empty and not pages:
            doc.new_page()
        path = folder / name
        if encrypt:
            doc.save(
                path,
                encryption=pymupdf.PDF_ENCRYPT_AES_256,
                owner_pw="owner",
                user_pw="user",
            )
        else:
            doc.save(path)
        return path

    return make


def _truncated_pdf(folder: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), PROSE)
    data = doc.tobytes()
    path = folder / "truncated.pdf"
    path.write_bytes(data[: len(data) // 3])
    return path


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.md"
    os.mkfifo(path)
    return path


def _socket(folder: Path) -> Path:
    path = folder / "sock.md"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()
    return path


def _symlink(target: str, name: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.symlink_to(target)
        return path

    return make


def _symlink_loop(folder: Path) -> Path:
    (folder / "loop-a.md").symlink_to(folder / "loop-b.md")
    (folder / "loop-b.md").symlink_to(folder / "loop-a.md")
    return folder / "loop-a.md"


def _dir_named_md(folder: Path) -> Path:
    path = folder / "folder.md"
    path.mkdir()
    return path


def _unreadable(folder: Path) -> Path:
    path = folder / "secret.md"
    path.write_text(PROSE)
    path.chmod(0)
    return path


def _sparse_huge(folder: Path) -> Path:
    path = folder / "huge-sparse.md"
    with open(path, "wb") as handle:
        handle.truncate(200 * 1024 * 1024)  # 200 MB of holes: refused from its size
    return path


def _deep(folder: Path) -> Path:
    path = folder
    for i in range(40):
        path = path / f"d{i}"
    path.mkdir(parents=True)
    (path / "deep.md").write_text("# Deep\n\n" + PROSE)
    return path / "deep.md"


def _hidden(folder: Path) -> Path:
    (folder / ".hidden").mkdir()
    path = folder / ".hidden" / "note.md"
    path.write_text(PROSE)
    return path


_NESTED_HTML = "<div>" * 5000 + "<p>" + PROSE + "</p>" + "</div>" * 5000
_NESTED_MD = "> " * 2000 + PROSE
_BOMB = zlib.compress(b"A" * 10_000_000)

KINDS: list[Kind] = [
    Kind("plain markdown", _write("plain.md", "# Plain\n\n" + PROSE), "indexed"),
    Kind("plain text", _write("plain.txt", PROSE), "indexed"),
    Kind("html", _write("page.html", f"<h1>Page</h1><p>{PROSE}</p>"), "indexed"),
    Kind("pdf", _pdf("doc.pdf", [PROSE]), "indexed"),
    Kind("empty markdown", _write("empty.md", ""), "empty"),
    Kind("whitespace only", _write("blank.md", " \n\t\n\n   \n"), "empty"),
    Kind("BOM only", _write("bom.txt", b"\xef\xbb\xbf"), "empty"),
    Kind(
        "UTF-8 BOM markdown", _write("bom.md", b"\xef\xbb\xbf# Bom\n\n" + PROSE.encode()), "indexed"
    ),
    Kind("UTF-16 text", _write("utf16.txt", ("# U16\n\n" + PROSE).encode("utf-16")), "indexed"),
    Kind(
        "Latin-1 bytes",
        _write("latin1.md", "# Caf\xe9\n\n".encode("latin-1") + PROSE.encode()),
        "indexed",
    ),
    Kind(
        "binary as markdown", _write("binary.md", os.urandom(0) + bytes(range(256)) * 64), "error"
    ),
    Kind("NUL bytes in text", _write("nul.txt", "a\0b\0" * 1000 + PROSE), "error"),
    Kind("gzip named .md", _write("gz.md", gzip.compress(PROSE.encode() * 50)), "error"),
    Kind("zlib bomb named .txt", _write("bomb.txt", _BOMB), "error"),
    Kind("one 200 KB line", _write("oneline.txt", "word " * 40_000), "indexed"),
    Kind("100k short lines", _write("lines.md", "x\n" * 100_000), "indexed"),
    # Headings alone make no chunk (a known limit, docs/reliability.md).
    Kind("100k headings", _write("headings.md", "# h\n" * 100_000), "empty"),
    Kind(
        "heading 100k chars",
        _write("longhead.md", "# " + "h" * 100_000 + "\n\n" + PROSE),
        "indexed",
    ),
    Kind("markdown nested 2000 quotes", _write("quotes.md", _NESTED_MD), "indexed"),
    Kind("html nested 5000 divs", _write("nested.html", _NESTED_HTML), "indexed"),
    Kind(
        "html without body",
        _write("nobody.html", "<html><head><title>T</title></head></html>"),
        "empty",
    ),
    Kind(
        "html script only",
        _write("script.html", "<script>" + "x=1;" * 10000 + "</script>"),
        "empty",
    ),
    Kind(
        "html broken tags",
        _write("broken.html", "<p><b><i>" + PROSE + "</p></b><<<>>>&&&#99999999;"),
        "indexed",
    ),
    Kind("front matter unclosed", _write("fm.md", "---\ntitle: [unclosed\n" + PROSE), "indexed"),
    Kind(
        "front matter binary",
        _write("fmbin.md", b"---\n\x00\xff\xfe\n---\n" + PROSE.encode()),
        "error",
    ),
    Kind(
        "CJK text",
        _write("cjk.md", "# 灯塔\n\n灯塔看守人每天黎明和黄昏记录天气。\n" * 20),
        "indexed",
    ),
    Kind(
        "RTL and combining marks",
        _write("rtl.md", "# \u05e9\u05dc\u05d5\u05dd\n\n" + "e\u0301" * 500 + "\n"),
        "indexed",
    ),
    Kind(
        "lone surrogates escaped",
        _write("surr.md", b"# S\n\n\xed\xa0\x80 " + PROSE.encode()),
        "indexed",
    ),
    Kind(
        "emoji and ZWJ",
        _write("emoji.md", "# E\n\n" + "\U0001f469\u200d\U0001f4bb " * 300 + "\n"),
        "indexed",
    ),
    Kind(
        "CR-only line ends", _write("cr.md", "# CR\r\r" + PROSE.replace("\n", "\r") * 5), "indexed"
    ),
    Kind("empty pdf page", _pdf("blank.pdf", [""]), "empty"),
    # The same line on every page: running-header-like, yet the only text: kept.
    Kind("pdf 300 same pages", _pdf("long.pdf", [PROSE] * 300), "indexed"),
    Kind("encrypted pdf", _pdf("locked.pdf", [PROSE], encrypt=True), "error"),
    Kind("truncated pdf", _truncated_pdf, "error"),
    Kind("text named .pdf", _write("fake.pdf", PROSE), "error"),
    Kind("zero-byte pdf", _write("zero.pdf", b""), "error"),
    Kind("FIFO named .md", _fifo, "skipped"),
    Kind("socket named .md", _socket, "skipped"),
    Kind("symlink to /etc/passwd", _symlink("/etc/passwd", "passwd.md"), "skipped"),
    Kind("symlink to /dev/zero", _symlink("/dev/zero", "zero.md"), "skipped"),
    Kind("dangling symlink", _symlink("/nonexistent/x.md", "dangling.md"), "skipped"),
    Kind("symlink loop", _symlink_loop, "skipped"),
    Kind("folder named .md", _dir_named_md, "skipped"),
    Kind("unreadable file", _unreadable, "indexed" if os.geteuid() == 0 else "error"),
    Kind("200 MB sparse file", _sparse_huge, "error"),
    Kind("40 folders deep", _deep, "indexed"),
    Kind("hidden folder", _hidden, "skipped"),
    Kind("unsupported suffix", _write("image.png", b"\x89PNG\r\n\x1a\n"), "skipped"),
    Kind(
        "name with invalid UTF-8",
        _raw_name(b"bad\xff\xfe.md", b"# Bad\n\n" + PROSE.encode()),
        "indexed",
    ),
    Kind(
        "name with a newline", _raw_name(b"two\nlines.md", b"# Two\n\n" + PROSE.encode()), "indexed"
    ),
    Kind(
        "name with control bytes",
        _raw_name(b"ctl\x01\x1b[31m.md", b"# Ctl\n\n" + PROSE.encode()),
        "indexed",
    ),
    Kind(
        "name of 250 bytes",
        _raw_name(b"n" * 247 + b".md", b"# Long\n\n" + PROSE.encode()),
        "indexed",
    ),
    Kind("name with quotes and %", _write("q'\"%20%ff#?.md", "# Q\n\n" + PROSE), "indexed"),
    Kind("name that is a URI escape", _write("a%2Fb.md", "# Esc\n\n" + PROSE), "indexed"),
]


def build(folder: Path) -> dict[str, tuple[Kind, str]]:
    """Every kind made in ``folder``: rel path (as the index names it) -> (kind, outcome)."""
    made: dict[str, tuple[Kind, str]] = {}
    for kind in KINDS:
        path = kind.make(folder)
        made[os.path.relpath(path, folder).replace(os.sep, "/")] = (kind, kind.outcome)
    return made


def verdicts(
    made: dict[str, tuple[Kind, str]],
    files: dict[str, tuple[int, str | None]],
) -> dict[str, str | None]:
    """Each kind's name -> None when the index shows its expected outcome, else what
    it shows.  ``files``: the index's path -> (chunk count, error)."""
    out: dict[str, str | None] = {}
    for rel, (kind, expected) in made.items():
        seen = files.get(rel)
        if seen is None:
            actual = "skipped"
        elif seen[1]:
            actual = "error"
            if "\n" in seen[1] or "Traceback" in seen[1]:
                actual = "error (not one line)"
        else:
            actual = "indexed" if seen[0] > 0 else "empty"
        out[kind.name] = None if actual == expected else f"expected {expected}, got {actual}"
    return out
