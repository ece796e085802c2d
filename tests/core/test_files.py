"""Reading a file: regular only, bounded, never waiting, confined to a root."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from citeline.core import files
from citeline.core.files import (
    FileRefused,
    NotRegularFile,
    OutsideRoot,
    TooLarge,
    read_regular_file,
    resolve_inside,
)

_opened: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture()
def opened() -> Iterator[list[str]]:
    """Every path opened (``open``/``os.open`` audit events) while the test runs."""
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.md").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    return root, outside


def test_reads_a_regular_file_whole(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert read_regular_file(root / "sub" / "a.md", 100) == b"inside\n"
    assert read_regular_file(root / "sub" / "a.md", 100, root=root) == b"inside\n"
    assert read_regular_file(root / "sub" / "a.md", 7, root=root) == b"inside\n"


def test_too_large_is_refused_from_its_size(tmp_path: Path, opened: list[str]) -> None:
    big = tmp_path / "big.md"
    with big.open("wb") as handle:
        handle.truncate(3 * 1024 * 1024)  # sparse
    opened.clear()
    with pytest.raises(TooLarge, match=r"^file is 3.0 MB, over the 1 MB limit$"):
        read_regular_file(big, 1024 * 1024, root=tmp_path)
    assert str(big) not in opened  # refused from lstat, never opened


def test_special_files_are_refused_without_waiting(tmp_path: Path, opened: list[str]) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    (tmp_path / "folder.md").mkdir()
    sock_path = tmp_path / "sock.md"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    done = threading.Event()

    def read_all() -> None:
        for path in (fifo, tmp_path / "folder.md", sock_path):
            with pytest.raises(NotRegularFile):
                read_regular_file(path, 100, root=tmp_path)
            with pytest.raises(NotRegularFile):
                read_regular_file(path, 100)
        done.set()

    thread = threading.Thread(target=read_all, daemon=True)
    thread.start()
    thread.join(10)
    server.close()
    assert done.is_set(), "reading a FIFO, a folder or a socket blocked"
    assert not {str(fifo), str(sock_path)} & set(opened)


def test_devices_are_refused(opened: list[str]) -> None:
    with pytest.raises(NotRegularFile):
        read_regular_file(Path("/dev/zero"), 100)
    with pytest.raises(OutsideRoot):
        read_regular_file(Path("/dev/zero"), 100, root=Path("/tmp"))
    assert "/dev/zero" not in opened


def test_paths_outside_the_root_are_never_opened(
    tree: tuple[Path, Path], opened: list[str]
) -> None:
    root, outside = tree
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked").symlink_to(outside)
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "inner.md").symlink_to(root / "sub" / "a.md")
    hostile = [
        outside / "secret.md",
        root / ".." / "outside" / "secret.md",
        root / "sub" / ".." / ".." / "outside" / "secret.md",
        root / "link.md",
        root / "linked" / "secret.md",
        Path("/etc/passwd"),
        Path("/dev/zero"),
    ]
    opened.clear()
    for path in hostile:
        with pytest.raises(OutsideRoot, match="outside the documents folders"):
            read_regular_file(path, 1000, root=root)
    with pytest.raises(FileRefused, match="cannot resolve"):
        read_regular_file(root / "loop.md", 1000, root=root)
    assert read_regular_file(root / "inner.md", 1000, root=root) == b"inside\n"
    assert read_regular_file(root / "sub" / ".." / "sub" / "a.md", 100, root=root) == b"inside\n"
    # Absolute opens are the root itself; the rest are names opened relative to a
    # folder already open inside it (openat with O_NOFOLLOW).
    real_root = os.path.realpath(root)
    strays = [p for p in opened if os.path.isabs(p) and not p.startswith(real_root)]
    assert strays == []
    assert all(os.path.isabs(p) or "/" not in p for p in opened)


def test_a_folder_swapped_for_a_link_is_not_followed(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, opened: list[str]
) -> None:
    root, outside = tree
    # The path resolved inside, then sub/ became a link to the outside before the open.
    real = (root / "sub" / "a.md").resolve()
    monkeypatch.setattr(files, "resolve_inside", lambda path, r: real)
    os.rename(root / "sub", root / "sub.old")
    (root / "sub").symlink_to(outside)
    (outside / "a.md").write_text("outside\n")
    opened.clear()
    with pytest.raises(FileRefused, match="changed while it was opened"):
        read_regular_file(root / "sub" / "a.md", 100, root=root)
    assert str(outside / "a.md") not in opened
    assert opened == [os.path.realpath(root), "sub"]  # "sub" with O_NOFOLLOW: ELOOP


def test_missing_file_stays_file_not_found(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    with pytest.raises(FileNotFoundError):
        read_regular_file(root / "nope.md", 10, root=root)
    with pytest.raises(FileNotFoundError):
        resolve_inside(root / "nope.md", root)
