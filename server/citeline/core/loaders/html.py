"""HTML, read with the standard library's ``html.parser``.

What is indexed: the visible text of the page's content.  Dropped entirely (with
everything inside): ``head`` (except ``<title>``), script, style, nav, aside,
footer, noscript, template, svg, math, canvas, form, iframe, object, select,
button, dialog; ``header`` outside ``main``/``article`` (inside them it is the
article's own header and is kept); any element with a ``hidden`` attribute,
``aria-hidden="true"``, an inline ``display:none``/``visibility:hidden`` style, or
an ARIA landmark role that stands for chrome (navigation, banner, contentinfo,
complementary, search).  If the page has a ``<main>`` or ``<article>``, only text
(and headings) inside them is kept.

Blocks: the text between two block-level tags (p, li, pre, blockquote, dd, dt, div,
table rows, section, ...) is one block; table cells of a row share a block.  Headings
h1-h6 are not blocks; they build ``heading_path``.  Lines: ``start_line`` and
``end_line`` are the source lines of the block's first and last visible character;
the text has exactly one line per source line in between (whitespace inside a line
collapsed to single spaces, lines without visible text left empty, ``<pre>`` lines
kept as written), so ``start_line + text[:offset].count("\\n")`` is exact.  Entities
are decoded.  Title: ``<title>``, else the first h1 (else first heading), else the
file name stem.
"""

from __future__ import annotations

import html
import logging
import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import PurePosixPath

from citeline.core.documents import Block, LoadError, SourceDocument
from citeline.core.loaders.text import decode_text

logger = logging.getLogger(__name__)

_SKIP_TAGS = frozenset(
    {
        "head",
        "script",
        "style",
        "nav",
        "aside",
        "footer",
        "noscript",
        "template",
        "svg",
        "math",
        "canvas",
        "form",
        "iframe",
        "object",
        "select",
        "button",
        "dialog",
    }
)
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_CONTENT_TAGS = frozenset({"main", "article"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID_TAGS = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "tfoot",
        "thead",
        "tr",
        "ul",
    }
)
# Elements whose start tag implicitly closes an open element of the same kind.
_SELF_CLOSING_SIBLINGS = frozenset({"p", "li", "dt", "dd", "tr", "td", "th", "option"})
_CELL_TAGS = frozenset({"td", "th"})
_MARKED_SECTION = re.compile(r"<!\[(?!CDATA\[)")
_META_NAMES = frozenset({"description", "author", "keywords"})


@dataclass
class _Heading:
    level: int
    text: str
    in_content: bool


@dataclass
class _TextBlock:
    block: Block
    in_content: bool


@dataclass
class _Buffer:
    lines: dict[int, list[str]] = field(default_factory=dict)
    in_content: bool = False
    pre: bool = False


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.events: list[_Heading | _TextBlock] = []
        self.title: str | None = None
        self.metadata: dict[str, str] = {}
        self._stack: list[str] = []
        self._content_depth = 0  # how many main/article elements are open
        self._skip_depth: int | None = None  # stack length of the skipped element
        self._title_parts: list[str] | None = None
        self._heading: tuple[int, list[str], bool] | None = None
        self._buffer = _Buffer()

    # -- state ----------------------------------------------------------------------

    def _in_content(self) -> bool:
        return self._content_depth > 0

    def _push(self, tag: str) -> None:
        self._stack.append(tag)
        if tag in _CONTENT_TAGS:
            self._content_depth += 1

    def _pop(self) -> str:
        tag = self._stack.pop()
        if tag in _CONTENT_TAGS:
            self._content_depth -= 1
        return tag

    def _skipped(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        if tag in _SKIP_TAGS or (tag == "header" and not self._in_content()):
            return True
        values = {name.lower(): (value or "") for name, value in attrs}
        return (
            "hidden" in values
            or values.get("aria-hidden", "").strip().lower() == "true"
            or values.get("role", "").strip().lower() in _CHROME_ROLES
            or bool(_HIDDEN_STYLE.search(values.get("style", "")))
        )

    def _pop_to(self, tag: str) -> None:
        while self._stack:
            if self._pop() == tag:
                break
        if self._skip_depth is not None and len(self._stack) < self._skip_depth:
            self._skip_depth = None

    # -- text -----------------------------------------------------------------------

    def _add_text(self, text: str, *, multiline: bool) -> None:
        if self._title_parts is not None:
            self._title_parts.append(text)
            return
        if self._skip_depth is not None:
            return
        if self._heading is not None:
            self._heading[1].append(text)
            return
        line = self.getpos()[0]
        parts = text.split("\n") if multiline else [text.replace("\n", " ")]
        buffer = self._buffer
        if not buffer.lines:
            buffer.in_content = self._in_content()
            buffer.pre = "pre" in self._stack
        for k, part in enumerate(parts):
            buffer.lines.setdefault(line + k, []).append(part)

    def _flush(self) -> None:
        self._finish_heading()
        buffer, self._buffer = self._buffer, _Buffer()
        texts = {line: "".join(parts) for line, parts in buffer.lines.items()}
        filled = [line for line, text in texts.items() if text.strip()]
        if not filled:
            return
        first, last = min(filled), max(filled)
        rows: list[str] = []
        for line in range(first, last + 1):
            raw = texts.get(line, "")
            rows.append(raw.rstrip() if buffer.pre else " ".join(raw.split()))
        if buffer.pre:  # drop the indentation common to all lines
            indent = min(len(r) - len(r.lstrip()) for r in rows if r.strip())
            rows = [r[indent:] for r in rows]
        block = Block("\n".join(rows), (), start_line=first, end_line=last)
        self.events.append(_TextBlock(block, buffer.in_content))

    def _finish_heading(self) -> None:
        if self._heading is None:
            return
        level, parts, in_content = self._heading
        self._heading = None
        text = " ".join("".join(parts).split())
        if text:
            self.events.append(_Heading(level, text, in_content))

    # -- parser callbacks -----------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._title_parts is not None:  # an unclosed <title> ends at the next tag
            self._end_title()
        if tag == "title" and self.title is None and "svg" not in self._stack:
            self._title_parts = []
        elif tag == "meta":
            values = {name.lower(): (value or "") for name, value in attrs}
            name = values.get("name", "").lower()
            if name in _META_NAMES and values.get("content", "").strip():
                self.metadata[name] = " ".join(values["content"].split())
        elif tag == "html":
            lang = dict(attrs).get("lang")
            if lang:
                self.metadata["lang"] = lang
        if self._skip_depth is not None:
            if tag not in _VOID_TAGS:
                self._push(tag)
            return
        if self._stack and (
            (tag in _SELF_CLOSING_SIBLINGS and self._stack[-1] == tag)
            or (tag in _BLOCK_TAGS and self._stack[-1] == "p")
        ):
            self._pop()
        if self._skipped(tag, attrs):
            self._flush()
            if tag not in _VOID_TAGS:
                self._push(tag)
                self._skip_depth = len(self._stack)
            return
        if tag in _BLOCK_TAGS or tag in _HEADINGS:
            self._flush()
        if tag not in _VOID_TAGS:
            self._push(tag)
        if tag in _HEADINGS:
            self._heading = (_HEADINGS[tag], [], self._in_content())
        elif tag in _CELL_TAGS or tag == "br":
            self._add_text(" ", multiline=False)
        elif tag == "img":
            alt = dict(attrs).get("alt")
            if alt and alt.strip():
                self._add_text(f" {alt} ", multiline=False)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title_parts is not None:
            self._end_title()
        if tag not in self._stack:
            return
        if self._skip_depth is None and (tag in _BLOCK_TAGS or tag in _HEADINGS):
            self._flush()
        self._pop_to(tag)

    def _end_title(self) -> None:
        if self._title_parts is not None:
            self.title = " ".join("".join(self._title_parts).split()) or None
            self._title_parts = None

    def handle_data(self, data: str) -> None:
        self._add_text(data, multiline=True)

    def handle_entityref(self, name: str) -> None:
        self._add_text(html.unescape(f"&{name};"), multiline=False)

    def handle_charref(self, name: str) -> None:
        self._add_text(html.unescape(f"&#{name};"), multiline=False)

    def close(self) -> None:
        super().close()
        self._flush()


def _parse(source: str) -> _Extractor:
    parser = _Extractor()
    parser.feed(source)
    parser.close()
    return parser


def load_html(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
    """Load an HTML file (``.html``, ``.htm``)."""
    source = decode_text(data, "HTML", rel_path)
    try:
        parser = _parse(source)
    except AssertionError:
        # Python's parser asserts on marked sections it does not know (``<![foo``);
        # a browser reads them as bogus comments, and so does "<!foo".
        try:
            parser = _parse(_MARKED_SECTION.sub("<!", source))
        except AssertionError as exc:
            raise LoadError(f"not valid HTML: {' '.join(str(exc).split())}") from exc

    content_only = any(e.in_content for e in parser.events if isinstance(e, _TextBlock))
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []
    headings: list[_Heading] = []
    for event in parser.events:
        if content_only and not event.in_content:
            continue
        if isinstance(event, _Heading):
            headings.append(event)
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            stack.append((event.level, event.text))
        else:
            path = tuple(text for _, text in stack)
            blocks.append(replace(event.block, heading_path=path))

    title = parser.title
    if not title and headings:
        title = next((h.text for h in headings if h.level == 1), headings[0].text)
    return SourceDocument(
        path=rel_path,
        kind="html",
        title=title or PurePosixPath(file_name).stem or file_name,
        blocks=tuple(blocks),
        title_from_content=bool(title),
        metadata=parser.metadata,
    )
