"""Document loaders: turn a file on disk into a :class:`SourceDocument`.

The loader is picked by file suffix (case-insensitive), and its module is imported
when the first file of its format is read: a search imports no parser.  Every expected problem
(missing or unreadable file, too large, binary content, bad or encrypted PDF)
raises :class:`LoadError` with a one-line message that does not name the file (the
caller knows which file it asked for); nothing else escapes for bad input.
"""

from __future__ import annotations

import errno
import importlib
import logging
from collections.abc import Callable
from pathlib import Path

from citeline.core.documents import DocumentKind, LoadError, SourceDocument, display_text
from citeline.core.files import FileRefused, read_regular_file

__all__ = [
    "LOADER_VERSIONS",
    "SUPPORTED_SUFFIXES",
    "is_supported",
    "is_supported_name",
    "load_document",
    "parse_document",
    "preload",
    "read_document",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 20 * 1024 * 1024

# (bytes, rel_path, file name) -> document
_Loader = Callable[[bytes, str, str], SourceDocument]

# suffix -> (module in this package, its loader function, the format's name); the
# module is named by its documents' ``DocumentKind``, so the two cannot drift
_LOADERS: dict[str, tuple[DocumentKind, str, str]] = {
    ".md": ("markdown", "load_markdown", "Markdown"),
    ".markdown": ("markdown", "load_markdown", "Markdown"),
    ".mdx": ("markdown", "load_markdown", "MDX"),
    ".html": ("html", "load_html", "HTML"),
    ".htm": ("html", "load_html", "HTML"),
    ".pdf": ("pdf", "load_pdf", "PDF"),
    ".txt": ("text", "load_text", "text"),
    ".text": ("text", "load_text", "text"),
    ".rst": ("text", "load_rst", "reStructuredText"),
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_LOADERS)

#: Each format's loader version: raised when what a format's loader makes of a file
#: changes (its text, blocks, pages or headings), so that an index re-reads and
#: re-chunks the files of that format only (chunk texts that did not change keep their
#: vectors).  The index records the versions that built it (``core.ingest``).
LOADER_VERSIONS: dict[DocumentKind, int] = {"markdown": 1, "html": 1, "pdf": 1, "text": 1}

#: The formats whose parsers a long-running process imports once it is idle; PDF's
#: (PyMuPDF: 1.7 s and its own memory) waits for the first PDF.
PRELOADED = (".md", ".html", ".txt")


def preload(suffixes: tuple[str, ...] = PRELOADED) -> None:
    """Import the parsers of ``suffixes`` now, so that the first save of such a file
    does not pay for the import (markdown-it: 0.1-0.4 s)."""
    for suffix in suffixes:
        entry = _LOADERS.get(suffix)
        if entry is not None:
            importlib.import_module(f"{__name__}.{entry[0]}")


def is_supported(path: Path) -> bool:
    """Whether a file's suffix (any case) has a loader."""
    return is_supported_name(path.name)


def is_supported_name(name: str) -> bool:
    """:func:`is_supported` of a file name (its suffix as ``PurePath.suffix`` reads
    it), without building a path: the walk asks it of every file."""
    dot = name.rfind(".")
    return 0 < dot < len(name) - 1 and name[dot:].lower() in SUPPORTED_SUFFIXES


def load_document(
    path: Path, rel_path: str, *, max_bytes: int = DEFAULT_MAX_BYTES, root: Path | None = None
) -> SourceDocument:
    """Load ``path``; the document's ``path`` is ``rel_path``.

    Raises LoadError (one line, fit for a user) for an unsupported suffix, a missing,
    unreadable, too large or not regular file (or, with ``root``, one outside it), and
    content its loader cannot use.
    """
    _loader(path)
    return parse_document(read_document(path, max_bytes, root=root), path, rel_path)


def read_document(path: Path, max_bytes: int, *, root: Path | None = None) -> bytes:
    """The file's bytes, read as :func:`citeline.core.files.read_regular_file` reads
    (a regular file, bounded, never waiting; inside ``root`` when given); LoadError."""
    try:
        return read_regular_file(path, max_bytes, root=root)
    except FileRefused as exc:
        raise LoadError(str(exc)) from exc
    except FileNotFoundError as exc:
        raise LoadError("file not found (deleted?)") from exc
    except PermissionError as exc:
        raise LoadError("permission denied") from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise LoadError("file name too long") from exc
        if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.ELOOP):
            raise LoadError("not a regular file") from exc
        raise LoadError(f"cannot read file: {exc.strerror or exc}") from exc


def parse_document(data: bytes, path: Path, rel_path: str) -> SourceDocument:
    """The document in ``data`` (the bytes of ``path``), by ``path``'s suffix."""
    loader, format_name = _loader(path)
    try:
        # The file name only gives a fallback title: shown, never used to find the file,
        # so a name that is not valid UTF-8 is shown with replacement characters.
        return loader(data, rel_path, display_text(path.name))
    except LoadError:
        raise
    except RecursionError as exc:
        raise LoadError(f"{format_name} is nested too deeply to read") from exc
    except Exception as exc:  # a loader bug or a parser choking: still one clean line
        logger.exception(
            "%s: unexpected error while loading %s", display_text(rel_path), format_name
        )
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise LoadError(f"could not read {format_name}: {detail}") from exc


def _loader(path: Path) -> tuple[_Loader, str]:
    entry = _LOADERS.get(path.suffix.lower())
    if entry is None:
        raise LoadError(f"unsupported file type {path.suffix or '(no suffix)'!r}")
    module, function, format_name = entry
    loader: _Loader = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    return loader, format_name
