"""Markdown and MDX, parsed with markdown-it-py (CommonMark plus tables and strikethrough).

Blocks keep the ORIGINAL source text, one text line per source line, so that
``start_line + text[:offset].count("\\n")`` is the source line of any offset.  Each
top-level paragraph, list, blockquote, table, code block (fence lines included) and
raw HTML block is one block; headings (ATX and setext) are not blocks, they build
``heading_path``.  Before parsing, these are blanked out, keeping their newlines so
every later line number stays exact:

* front matter: YAML between ``---`` lines (closed by ``---`` or ``...``) or TOML
  between ``+++`` lines, at the very top; its scalar values become ``metadata``;
* in ``.mdx`` files, ESM ``import``/``export`` statements (from such a line at the
  start of a paragraph to the next blank line);
* HTML comments ``<!-- -->`` and JSX comments ``{/* */}``, except inside code blocks
  and (heuristically: an odd number of backticks before it on its line) code spans.

Within a block, ``![alt](url)`` and ``![alt][ref]`` become ``alt``, and in raw HTML
blocks the tags are dropped (their text stays).  The title is the front matter
``title``, else the first level-1 heading, else the file name stem.
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Sequence
from datetime import date, datetime, time
from pathlib import PurePosixPath

from markdown_it import MarkdownIt
from markdown_it.token import Token

from citeline.core.documents import Block, SourceDocument
from citeline.core.loaders.text import decode_text

logger = logging.getLogger(__name__)

_BLOCK_TOKENS = frozenset(
    {
        "paragraph_open",
        "bullet_list_open",
        "ordered_list_open",
        "blockquote_open",
        "table_open",
        "fence",
        "code_block",
        "html_block",
    }
)
_CODE_TOKENS = frozenset({"fence", "code_block"})

# Character classes stop at the next opening bracket, so the scans stay linear.
_IMAGE = re.compile(r"!\[([^\[\]]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_ESM_START = re.compile(
    r"(?:import\s*(?:[\w$*{]|['\"])"
    r"|export\s*(?:[{*]|(?:default|const|let|var|function|async|class|type|interface)\b))"
)
_ESM_ANYWHERE = re.compile(r"^(?:import|export)\b", re.MULTILINE)
_YAML_KEY = re.compile(r"([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")


def _parser(*, inline: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    if not inline:
        # Only block structure is needed (and inline parsing is most of the cost,
        # quadratic on some inputs); heading text is parsed on its own.
        md.disable("inline")
    return md


_MD = _parser(inline=False)
_MD_INLINE = _parser(inline=True)


def load_markdown(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
    """Load a Markdown (``.md``, ``.markdown``) or MDX (``.mdx``) file."""
    lines = decode_text(data, "Markdown", rel_path).split("\n")
    metadata, front_end = _front_matter(lines)
    for i in range(front_end):
        lines[i] = ""

    source = "\n".join(lines)
    mdx = PurePosixPath(file_name).suffix.lower() == ".mdx"
    if "<!--" in source or "{/*" in source or (mdx and _ESM_ANYWHERE.search(source)):
        # A first parse tells which lines are code, where nothing is removed.
        code_lines = _code_lines(_MD.parse(source))
        if mdx:
            _blank_esm(lines, code_lines)
        lines = _remove_comments(lines, code_lines)
    tokens = _MD.parse("\n".join(lines))

    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    first_h1: str | None = None
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        if token.type == "heading_open":
            level = int(token.tag[1:])
            inline = tokens[index + 1] if index + 1 < len(tokens) else None
            text = _heading_text(inline.content) if inline is not None else ""
            if not text:
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            if level == 1 and first_h1 is None:
                first_h1 = text
        elif token.type in _BLOCK_TOKENS:
            block = _block(lines, token, tuple(text for _, text in stack))
            if block is not None:
                blocks.append(block)

    title_key = next((k for k in metadata if k.lower() == "title"), None)
    title = metadata[title_key].strip() if title_key is not None else ""
    if not title and first_h1 is not None:
        title = first_h1
    return SourceDocument(
        path=rel_path,
        kind="markdown",
        title=title or PurePosixPath(file_name).stem or file_name,
        blocks=tuple(blocks),
        title_from_content=bool(title),
        metadata=metadata,
    )


def _block(lines: list[str], token: Token, heading_path: tuple[str, ...]) -> Block | None:
    assert token.map is not None
    start, end = token.map
    end = min(end, len(lines))
    text_lines = list(lines[start:end])
    if token.type not in _CODE_TOKENS:
        joined = "\n".join(text_lines)
        if token.type == "html_block":
            joined = _HTML_TAG.sub(lambda m: "\n" * m.group().count("\n"), joined)
        joined = _IMAGE.sub(lambda m: m.group(1), joined)
        text_lines = joined.split("\n")
    while text_lines and not text_lines[-1].strip():
        text_lines.pop()
        end -= 1
    while text_lines and not text_lines[0].strip():
        text_lines.pop(0)
        start += 1
    if not text_lines:
        return None
    text = "\n".join(line.rstrip() for line in text_lines)
    return Block(text, heading_path, start_line=start + 1, end_line=end)


def _heading_text(source: str) -> str:
    """The visible text of a heading's inline markup, whitespace normalised."""
    parts: list[str] = []
    children = [child for token in _MD_INLINE.parseInline(source) for child in token.children or []]
    for child in children:
        if child.type in ("text", "code_inline", "image"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _code_lines(tokens: Sequence[Token]) -> set[int]:
    """0-based lines inside code blocks, at any nesting level."""
    lines: set[int] = set()
    for token in tokens:
        if token.type in _CODE_TOKENS and token.map is not None:
            lines.update(range(token.map[0], token.map[1]))
    return lines


def _blank_esm(lines: list[str], code_lines: set[int]) -> None:
    """Blank MDX ``import``/``export`` statements in place."""
    i = 0
    while i < len(lines):
        starts_paragraph = i == 0 or not lines[i - 1].strip()
        if i not in code_lines and starts_paragraph and _ESM_START.match(lines[i]):
            while i < len(lines) and lines[i].strip():
                lines[i] = ""
                i += 1
        i += 1


def _remove_comments(lines: list[str], code_lines: set[int]) -> list[str]:
    """The lines with HTML/JSX comments removed outside code (newlines kept).

    A linear scan rather than a lazy regex, so a file full of unclosed ``<!--``
    cannot make it quadratic.
    """
    source = "\n".join(lines)
    if "<!--" not in source and "{/*" not in source:
        return lines
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    out: list[str] = []
    pos = 0
    search = 0
    pairs = [("<!--", "-->"), ("{/*", "*/}")]
    while pairs:
        hits = [(source.find(opener, search), opener, closer) for opener, closer in pairs]
        found = [hit for hit in hits if hit[0] >= 0]
        if not found:
            break
        start, opener, closer = min(found)
        close = source.find(closer, start + len(opener))
        if close < 0:  # never closed: no later comment of this kind can close either
            pairs.remove((opener, closer))
            continue
        end = close + len(closer)
        row = _line_of(line_starts, start)
        if row in code_lines or source[line_starts[row] : start].count("`") % 2 == 1:
            search = start + len(opener)  # code: keep it, look further
            continue
        out.append(source[pos:start])
        out.append("\n" * source.count("\n", start, end))
        pos = search = end
    if pos == 0:
        return lines
    out.append(source[pos:])
    return "".join(out).split("\n")


def _line_of(line_starts: list[int], offset: int) -> int:
    lo, hi = 0, len(line_starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


# --- front matter -----------------------------------------------------------------


def _front_matter(lines: list[str]) -> tuple[dict[str, str], int]:
    """Front matter metadata and the number of lines it spans (0 if there is none)."""
    if not lines:
        return {}, 0
    opener = lines[0].rstrip()
    if opener not in ("---", "+++"):
        return {}, 0
    closers = ("---", "...") if opener == "---" else ("+++",)
    for end in range(1, len(lines)):
        if lines[end].rstrip() in closers:
            body = lines[1:end]
            if opener == "---":
                # "---", text, "---" with no "key:" line is a rule and a setext
                # heading, not front matter.
                if any(line.strip() for line in body) and not any(
                    _YAML_KEY.match(line) for line in body
                ):
                    return {}, 0
                return _yaml_scalars(body), end + 1
            return _toml_scalars(body), end + 1
    return {}, 0


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if " #" in value:  # a trailing comment on a plain scalar
        value = value.split(" #", 1)[0].rstrip()
    return value


def _yaml_scalars(body: list[str]) -> dict[str, str]:
    """Top-level ``key: value`` pairs; flow and block lists joined with ", "."""
    result: dict[str, str] = {}
    pending: str | None = None  # a key whose value follows on indented lines
    items: list[str] = []
    folded = False

    def finish() -> None:
        if pending is not None and items:
            result[pending] = (" " if folded else ", ").join(items)

    for line in body:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if pending is None:
                continue
            item = line.strip()
            if folded:
                items.append(item)
            elif item.startswith("- "):
                items.append(_unquote(item[2:]))
            continue
        finish()
        pending, items, folded = None, [], False
        match = _YAML_KEY.match(line)
        if match is None:
            continue
        key, value = match.group(1), (match.group(2) or "").strip()
        if not value or value.startswith("#"):
            pending = key
        elif value[0] in "|>":
            pending, folded = key, True
        elif value.startswith("[") and value.endswith("]"):
            parts = [_unquote(part) for part in value[1:-1].split(",")]
            result[key] = ", ".join(part for part in parts if part)
        elif not value.startswith(("{", "&", "*", "!")):
            result[key] = _unquote(value)
    finish()
    return result


def _toml_scalars(body: list[str]) -> dict[str, str]:
    try:
        data = tomllib.loads("\n".join(body))
    except tomllib.TOMLDecodeError as exc:
        logger.info("ignoring TOML front matter that does not parse: %s", exc)
        return {}
    result: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, list):
            scalars = [_toml_scalar(item) for item in value]
            if all(s is not None for s in scalars):
                result[key] = ", ".join(s for s in scalars if s is not None)
        else:
            scalar = _toml_scalar(value)
            if scalar is not None:
                result[key] = scalar
    return result


def _toml_scalar(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, str | int | float):
        return str(value)
    return None
