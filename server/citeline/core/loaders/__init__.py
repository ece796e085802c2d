"""Document loaders: turn a file on disk into a :class:`SourceDocument`.

The loader is picked by file suffix (case-insensitive).  Every expected problem
(missing or unreadable file, too large, binary content, bad or encrypted PDF)
raises :class:`LoadError` with a one-line message that does not name the file (the
caller knows which file it asked for); nothing else escapes for bad input.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from pathlib import Path

from citeline.core.documents import LoadError, SourceDocument
from citeline.core.loaders.html import load_html
from citeline.core.loaders.markdown import load_markdown
from citeline.core.loaders.pdf import load_pdf
from citeline.core.loaders.text import load_rst, load_text

__all__ = ["SUPPORTED_SUFFIXES", "is_supported", "load_document"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 20 * 1024 * 1024

# (bytes, rel_path, file name) -> document
_Loader = Callable[[bytes, str, str], SourceDocument]

_LOADERS: dict[str, tuple[_Loader, str]] = {
    ".md": (load_markdown, "Markdown"),
    ".markdown": (load_markdown, "Markdown"),
    ".mdx": (load_markdown, "MDX"),
    ".html": (load_html, "HTML"),
    ".htm": (load_html, "HTML"),
    ".pdf": (load_pdf, "PDF"),
    ".txt": (load_text, "text"),
    ".text": (load_text, "text"),
    ".rst": (load_rst, "reStructuredText"),
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_LOADERS)


def is_supported(path: Path) -> bool:
    """Whether a file's suffix (any case) has a loader."""
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def load_document(
    path: Path, rel_path: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> SourceDocument:
    """Load ``path``; the document's ``path`` is ``rel_path``.

    Raises LoadError (one line, fit for a user) for an unsupported suffix, a missing,
    unreadable or too large file, and content its loader cannot use.
    """
    entry = _LOADERS.get(path.suffix.lower())
    if entry is None:
        raise LoadError(f"unsupported file type {path.suffix or '(no suffix)'!r}")
    loader, format_name = entry
    data = _read(path, max_bytes)
    try:
        return loader(data, rel_path, path.name)
    except LoadError:
        raise
    except RecursionError as exc:
        raise LoadError(f"{format_name} is nested too deeply to read") from exc
    except Exception as exc:  # a loader bug or a parser choking: still one clean line
        logger.exception("%s: unexpected error while loading %s", rel_path, format_name)
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise LoadError(f"could not read {format_name}: {detail}") from exc


def _read(path: Path, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise LoadError("not a regular file")
        if size > max_bytes:
            raise LoadError(_too_large(size, max_bytes))
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise LoadError("file not found (deleted?)") from exc
    except PermissionError as exc:
        raise LoadError("permission denied") from exc
    except IsADirectoryError as exc:
        raise LoadError("not a regular file") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise LoadError("file name too long") from exc
        raise LoadError(f"cannot read file: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:  # it grew while we looked
        raise LoadError(_too_large(len(data), max_bytes))
    return data


def _too_large(size: int, limit: int) -> str:
    return f"file is {_size(size)}, over the {_size(limit, exact=True)} limit"


def _size(n: int, *, exact: bool = False) -> str:
    """Human size: "31.2 MB", "20 MB" (``exact`` drops a ".0"), "512 KB", "100 bytes"."""
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= scale:
            value = f"{n / scale:.1f}"
            if exact and value.endswith(".0"):
                value = value[:-2]
            return f"{value} {unit}"
    return f"{n} bytes"
