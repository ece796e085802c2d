"""The loader registry: suffix dispatch and the errors every loader shares."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from citeline.core import files
from citeline.core.documents import DocumentKind, LoadError, SourceDocument
from citeline.core.loaders import (
    _LOADERS,
    SUPPORTED_SUFFIXES,
    is_supported,
    load_document,
    markdown,
)


def test_supported_suffixes() -> None:
    assert sorted(SUPPORTED_SUFFIXES) == [
        ".htm",
        ".html",
        ".markdown",
        ".md",
        ".mdx",
        ".pdf",
        ".rst",
        ".text",
        ".txt",
    ]
    assert is_supported(Path("docs/Guide.MD"))
    assert is_supported(Path("a/b.Html"))
    assert not is_supported(Path("image.png"))
    assert not is_supported(Path("Makefile"))


def test_dispatch_by_suffix_any_case(tmp_path: Path) -> None:
    cases = {
        "A.MD": ("markdown", "# Hi\n\nthere\n"),
        "b.Markdown": ("markdown", "# Hi\n\nthere\n"),
        "c.HTM": ("html", "<h1>Hi</h1><p>there</p>"),
        "d.TXT": ("text", "there\n"),
        "e.Rst": ("text", "Hi\n==\n\nthere\n"),
    }
    for name, (kind, content) in cases.items():
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        doc = load_document(path, f"sub/{name}")
        assert isinstance(doc, SourceDocument)
        assert (doc.path, doc.kind, doc.blocks[-1].text) == (f"sub/{name}", kind, "there")


def test_each_format_module_is_named_by_its_documents_kind(tmp_path: Path) -> None:
    # the registry's module names are the DocumentKind values (mypy holds each entry
    # to the Literal): one home for the formats
    assert {module for module, _, _ in _LOADERS.values()} == set(get_args(DocumentKind))
    for suffix, (module, _, _) in _LOADERS.items():
        if suffix != ".pdf":  # the PDF loader's kind: tests/core/loaders/test_pdf.py
            (tmp_path / f"a{suffix}").write_text("Hi there.\n", encoding="utf-8")
            assert load_document(tmp_path / f"a{suffix}", f"a{suffix}").kind == module


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as info:
        load_document(tmp_path / "gone.md", "gone.md")
    assert str(info.value) == "file not found (deleted?)"


def test_deleted_between_stat_and_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "racy.md"
    path.write_text("text\n", encoding="utf-8")

    def vanish(*args: object, **kwargs: object) -> int:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(files.os, "open", vanish)
    with pytest.raises(LoadError, match=r"^file not found \(deleted\?\)$"):
        load_document(path, "racy.md")


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "private.txt"
    path.write_text("text\n", encoding="utf-8")

    def deny(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.os, "open", deny)
    with pytest.raises(LoadError) as info:
        load_document(path, "private.txt")
    assert str(info.value) == "permission denied"


def test_directory_and_unsupported_suffix(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    with pytest.raises(LoadError, match=r"^not a regular file$"):
        load_document(tmp_path / "folder.md", "folder.md")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    with pytest.raises(LoadError, match=r"^unsupported file type '\.png'$"):
        load_document(tmp_path / "photo.png", "photo.png")


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as handle:  # sparse: no disk space used
        handle.truncate(int(31.2 * 1024 * 1024))
    with pytest.raises(LoadError) as info:
        load_document(huge, "huge.md")
    assert str(info.value) == "file is 31.2 MB, over the 20 MB limit"

    small = tmp_path / "small.txt"
    small.write_bytes(b"x" * 2048)
    with pytest.raises(LoadError) as info:
        load_document(small, "small.txt", max_bytes=1024)
    assert str(info.value) == "file is 2.0 KB, over the 1 KB limit"
    assert load_document(small, "small.txt", max_bytes=2048).blocks[0].text == "x" * 2048


def test_binary_content_with_markdown_name(tmp_path: Path) -> None:
    path = tmp_path / "archive.md"
    path.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(LoadError) as info:
        load_document(path, "archive.md")
    assert str(info.value) == "looks like a binary file, not Markdown"


def test_empty_files_have_no_blocks(tmp_path: Path) -> None:
    for name in ("e.md", "e.mdx", "e.html", "e.txt", "e.rst"):
        (tmp_path / name).write_bytes(b"")
        doc = load_document(tmp_path / name, name)
        assert (doc.blocks, doc.title, doc.title_from_content) == ((), "e", False)


def test_unexpected_loader_failure_becomes_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
        raise ValueError("parser exploded\nwith details")

    monkeypatch.setattr(markdown, "load_markdown", broken)
    path = tmp_path / "x.md"
    path.write_text("hello\n", encoding="utf-8")
    with pytest.raises(LoadError) as info:
        load_document(path, "x.md")
    assert str(info.value) == "could not read Markdown: parser exploded with details"


def test_a_format_s_parser_is_imported_when_its_first_file_is_read() -> None:
    code = (
        "import sys; from citeline.core import loaders;"
        "assert not [m for m in sys.modules if m.startswith('citeline.core.loaders.')];"
        "assert loaders.is_supported(__import__('pathlib').Path('a.PDF'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "name", ["a.md", "A.PDF", "x.tar.txt", "a.", ".md", "..md", "md", "a.mdx", "a.doc", "a.b.c"]
)
def test_a_name_is_supported_as_its_path_would_be(name: str) -> None:
    from citeline.core.loaders import is_supported_name

    assert is_supported_name(name) == is_supported(Path(name))


def test_preload_imports_the_light_parsers_and_leaves_pdf_to_its_first_file() -> None:
    code = (
        "import sys; from citeline.core import loaders; loaders.preload();"
        "assert 'citeline.core.loaders.markdown' in sys.modules;"
        "assert 'citeline.core.loaders.html' in sys.modules;"
        "assert 'citeline.core.loaders.pdf' not in sys.modules and 'pymupdf' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
