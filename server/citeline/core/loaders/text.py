"""Plain text and reStructuredText, plus the byte-to-text decoding every text format shares.

Plain text is cut into paragraphs at blank lines; every block keeps its source
lines verbatim (trailing whitespace trimmed), one text line per source line.

reStructuredText is indexed the same way, except that section titles (a line with
an underline, optionally also an overline, of one repeated punctuation character at
least as long as the title) are recognised: they build ``heading_path`` (levels in
order of first appearance of each adornment style, as docutils does), are not
emitted as blocks, and the first one is the document title.  A transition (a lone
adornment line) is dropped.  Everything else, directives included, is kept as text.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from citeline.core.documents import Block, LoadError, SourceDocument

logger = logging.getLogger(__name__)

# C0 controls other than tab, line feed, vertical tab, form feed and carriage return,
# plus DEL: text files practically never contain them; binary files are full of them.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
# Above this share of control characters the bytes are treated as binary.
_MAX_CONTROL_RATIO = 0.05
# Up to this share of invalid UTF-8 sequences the text is decoded as UTF-8 with
# replacement characters; above it, as Windows-1252 (a legacy 8-bit file).
_MAX_REPLACEMENT_RATIO = 0.01


def decode_text(data: bytes, format_name: str, source: str = "") -> str:
    """Decode a text file's bytes; line endings normalised to ``\\n``, BOM removed.

    ``\\r\\n`` and a lone ``\\r`` both become ``\\n`` (the line breaks an editor
    counts), so splitting the result on ``\\n`` gives source lines.  No other
    character is treated as a line break.

    Raises LoadError("looks like a binary file, not <format_name>") for bytes that
    contain NUL or many control characters.  UTF-8/16/32 BOMs select the encoding;
    otherwise UTF-8, with stray invalid bytes replaced (logged), and Windows-1252 as
    the fallback for text that is not UTF-8 at all.  ``source`` names the file in logs.
    """
    text: str
    if data.startswith(codecs.BOM_UTF8):
        text = _decode_utf8(data[len(codecs.BOM_UTF8) :], format_name, source)
    elif data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        text = data.decode("utf-32", errors="replace")
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
    else:
        if b"\x00" in data:
            raise LoadError(f"looks like a binary file, not {format_name}")
        text = _decode_utf8(data, format_name, source)
    if text.startswith("\ufeff"):
        text = text[1:]
    if text and len(_CONTROL.findall(text)) > _MAX_CONTROL_RATIO * len(text):
        raise LoadError(f"looks like a binary file, not {format_name}")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode_utf8(data: bytes, format_name: str, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    valid = data.decode("utf-8", errors="ignore")
    bad = text.count("\ufffd") - valid.count("\ufffd")
    # Stray bad bytes in a UTF-8 file (it has some valid multi-byte characters, or
    # only a few bad bytes): keep UTF-8.  Otherwise it is a legacy 8-bit file.
    multibyte = sum(1 for char in valid if ord(char) > 0x7F)
    if bad <= max(3, _MAX_REPLACEMENT_RATIO * len(text)) or multibyte >= bad:
        logger.warning(
            "%s: %d invalid UTF-8 byte sequence(s) replaced in %s", source, bad, format_name
        )
        return text
    legacy = data.decode("cp1252", errors="replace")
    if len(_CONTROL.findall(legacy)) > _MAX_CONTROL_RATIO * max(len(legacy), 1):
        raise LoadError(f"looks like a binary file, not {format_name}")
    logger.warning("%s: not valid UTF-8; decoded %s as Windows-1252", source, format_name)
    return legacy


def _stem(file_name: str) -> str:
    return PurePosixPath(file_name).stem or file_name


def _paragraphs(lines: list[str], skip: set[int]) -> list[tuple[int, int]]:
    """0-based inclusive (first, last) line ranges of blank-line-separated paragraphs."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        blank = i in skip or not line.strip()
        if blank:
            if start is not None:
                ranges.append((start, i - 1))
                start = None
        elif start is None:
            start = i
    if start is not None:
        ranges.append((start, len(lines) - 1))
    return ranges


def _block(lines: list[str], first: int, last: int, heading_path: tuple[str, ...]) -> Block:
    text = "\n".join(line.rstrip() for line in lines[first : last + 1])
    return Block(text, heading_path, start_line=first + 1, end_line=last + 1)


def load_text(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
    """A plain text file: one block per blank-line-separated paragraph, no sections."""
    lines = decode_text(data, "text", rel_path).split("\n")
    blocks = tuple(_block(lines, a, b, ()) for a, b in _paragraphs(lines, set()))
    return SourceDocument(
        path=rel_path,
        kind="text",
        title=_stem(file_name),
        blocks=blocks,
        title_from_content=False,
    )


# --- reStructuredText -------------------------------------------------------------

_ADORNMENT_CHARS = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _adornment(line: str) -> str | None:
    """The repeated character if ``line`` is an adornment line (2+ chars), else None."""
    s = line.rstrip()
    if len(s) >= 2 and s[0] in _ADORNMENT_CHARS and s == s[0] * len(s):
        return s[0]
    return None


@dataclass(frozen=True)
class _Title:
    first: int  # 0-based first line (the overline if any)
    last: int  # 0-based last line (the underline)
    text: str
    style: tuple[str, bool]  # (adornment character, has overline)


def _title_at(lines: list[str], i: int) -> _Title | None:
    """A section title starting at line ``i`` (after a blank line or the start)."""
    if i > 0 and lines[i - 1].strip():
        return None
    n = len(lines)
    over = _adornment(lines[i])
    if over is not None and i + 2 < n:
        text = lines[i + 1].strip()
        under = lines[i + 2].rstrip()
        if (
            text
            and _adornment(text) is None
            and under == lines[i].rstrip()
            and len(under) >= len(text)
        ):
            return _Title(i, i + 2, text, (over, True))
    line = lines[i]
    if not line.strip() or line[0].isspace() or over is not None or i + 1 >= n:
        return None
    char = _adornment(lines[i + 1])
    if char is None or len(lines[i + 1].rstrip()) < len(line.rstrip()):
        return None
    return _Title(i, i + 1, line.strip(), (char, False))


def load_rst(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
    """A reStructuredText file: paragraphs as blocks, section titles as heading_path."""
    lines = decode_text(data, "reStructuredText", rel_path).split("\n")
    styles: list[tuple[str, bool]] = []
    stack: list[tuple[int, str]] = []
    # Which heading path applies from a given line on, and the lines that are titles.
    path_from: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    title_lines: set[int] = set()
    title: str | None = None
    i = 0
    while i < len(lines):
        found = _title_at(lines, i)
        if found is None:
            i += 1
            continue
        if found.style not in styles:
            styles.append(found.style)
        level = styles.index(found.style)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, found.text))
        if title is None:
            title = found.text
        title_lines.update(range(found.first, found.last + 1))
        path_from.append((found.last + 1, tuple(text for _, text in stack)))
        i = found.last + 1
    # A transition: an adornment line of 4+ characters standing alone.
    for j, line in enumerate(lines):
        if (
            j not in title_lines
            and _adornment(line) is not None
            and len(line.rstrip()) >= 4
            and (j == 0 or not lines[j - 1].strip())
            and (j + 1 == len(lines) or not lines[j + 1].strip())
        ):
            title_lines.add(j)
    blocks: list[Block] = []
    section = 0
    for first, last in _paragraphs(lines, title_lines):
        while section + 1 < len(path_from) and path_from[section + 1][0] <= first:
            section += 1
        blocks.append(_block(lines, first, last, path_from[section][1]))
    return SourceDocument(
        path=rel_path,
        kind="text",
        title=title if title is not None else _stem(file_name),
        blocks=tuple(blocks),
        title_from_content=title is not None,
    )
