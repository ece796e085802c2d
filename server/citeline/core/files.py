"""Reading a file the one way Citeline reads files: a regular file, bounded, never waiting.

Every read of a document, by the indexer or for an editor request, goes through
:func:`read_regular_file`:

- only a regular file is read: a directory, a FIFO, a socket or a device is refused
  without being opened (``lstat`` first), and a file swapped for one after that check
  is refused after ``open`` (which is non-blocking, so a FIFO never waits for a
  writer) by ``fstat``;
- at most ``max_bytes`` are read: a larger file is refused from its size, before any
  byte is read, and one that grows while it is read is refused too;
- with a ``root``, only a file inside it: symlinks and ``..`` are resolved first
  (``lstat``/``readlink`` only), the real path must lie under the real root, and the
  file is then opened folder by folder from the root with ``O_NOFOLLOW``, so a link
  swapped in meanwhile is not followed out of the root.  Nothing outside the root is
  ever opened.

Refusals are :class:`FileRefused` with a one-line reason; other failures stay
``OSError`` (``FileNotFoundError``, ``PermissionError``) for the caller to word.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FileRefused(Exception):
    """A file Citeline will not read; the message is one line for a user."""


class OutsideRoot(FileRefused):
    """The path (once symlinks and ``..`` are resolved) is not inside the root."""


class NotRegularFile(FileRefused):
    """A directory, FIFO, socket or device."""


class TooLarge(FileRefused):
    """Larger than the limit; ``size`` is what was seen."""

    def __init__(self, size: int, limit: int) -> None:
        limit_text = human_size(limit, exact=True)
        super().__init__(f"file is {human_size(size)}, over the {limit_text} limit")
        self.size = size
        self.limit = limit


def human_size(n: int, *, exact: bool = False) -> str:
    """ "31.2 MB", "20 MB" (``exact`` drops a ".0"), "512 KB", "100 bytes"."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= scale:
            value = f"{n / scale:.1f}"
            if exact and value.endswith(".0"):
                value = value[:-2]
            return f"{value} {unit}"
    return f"{n} bytes"


def resolve_inside(path: Path, root: Path) -> Path:
    """``path`` with symlinks and ``..`` resolved, if that lies inside ``root``.

    Raises :class:`OutsideRoot` otherwise, ``FileNotFoundError`` if it does not
    exist.  Only ``lstat`` and ``readlink`` touch the file system.
    """
    real_root = Path(os.path.realpath(root))
    try:
        real = Path(path).resolve()  # what exists resolved: outside is said before missing
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise FileRefused(f"cannot resolve the path: {_reason(exc)}") from exc
    if real != real_root and real_root not in real.parents:
        raise OutsideRoot("outside the documents folders Citeline serves")
    if not os.path.lexists(real):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    return real


def read_regular_file(path: Path, max_bytes: int, *, root: Path | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``max_bytes``), see the module."""
    if root is None:
        st = os.stat(path)
        _check(st, max_bytes)
        fd = os.open(path, _READ_FLAGS & ~os.O_NOFOLLOW)
    else:
        fd = _open_inside(path, root, max_bytes)
    try:
        st = os.fstat(fd)
        _check(st, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew while we read
        raise TooLarge(total, max_bytes)
    return b"".join(chunks)


def _open_inside(path: Path, root: Path, max_bytes: int) -> int:
    real = resolve_inside(path, root)
    real_root = Path(os.path.realpath(root))
    parts = real.relative_to(real_root).parts
    if not parts:
        raise NotRegularFile("not a regular file")
    folder = os.open(real_root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=folder)
            except OSError as exc:  # ELOOP/ENOTDIR: swapped for a link or a file meanwhile
                if isinstance(exc, (FileNotFoundError, PermissionError)):
                    raise
                raise FileRefused(f"the path changed while it was opened: {_reason(exc)}") from exc
            os.close(folder)
            folder = inner
        _check(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False), max_bytes)
        try:
            return os.open(parts[-1], _READ_FLAGS, dir_fd=folder)
        except OSError as exc:
            if isinstance(exc, (FileNotFoundError, PermissionError)):
                raise
            raise FileRefused(f"the path changed while it was opened: {_reason(exc)}") from exc
    finally:
        os.close(folder)


def _check(st: os.stat_result, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile("not a regular file")
    if st.st_size > max_bytes:
        raise TooLarge(st.st_size, max_bytes)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__
