"""PDF with a text layer, read with PyMuPDF.

Blocks: one per text block that MuPDF finds on a page (in reading order, sorted top
to bottom, then left to right), with its lines unwrapped into one line of text.
Every block carries its 1-based ``page``; ``start_line``/``end_line`` are None.
Pages without text (blank or image-only) are skipped.

Line unwrapping: a line ending in a soft hyphen, or in ``-`` after a letter with the
next line starting with a lowercase letter, is joined without the hyphen
("informa-" + "tion" -> "information"; this also merges a compound broken at its
hyphen, "well-" + "known" -> "wellknown", the price of simplicity).  A ``-`` after a
letter or digit followed by anything else keeps the hyphen and adds no space
("Jean-" + "Paul" -> "Jean-Paul").  Two CJK characters are joined without a space;
all other line breaks become one space.

Running headers and footers: a line counts as an edge line of its page if it is one
of the two topmost lines and lies in the top 15% of the page, or one of the two
bottommost lines and lies in the bottom 15%.  An edge line of at most 80 characters
is a candidate when its normalised form (case-folded, whitespace collapsed, every
run of digits replaced by ``#``) is an edge line on at least half of the pages with
text, or on at least two thirds of them when the document has 3 to 5 such pages.
It is removed only when it really repeats: either its digits are the same on those
pages ("Copyright 2024 ACME"), or one of its numbers follows the page number at a
constant offset ("Page 3 of 10" on page 3, "- 17 -" on page 5): lines that differ
only in digits that do not count pages ("Reading 1: 42 units", "Reading 2: 17
units") are text, and stay.  A page whose only text is such lines keeps them, so
the filter never empties a page.  What was removed is reported in the document's
``notes`` (and so logged and recorded with the file): never a silent loss.
Documents with fewer than 3 pages with text keep every line (two pages are too few
to tell a header from a coincidence).

Sections: with an outline (``doc.get_toc()``), each block's ``heading_path`` is the
path (nested outline levels) of the latest outline entry that starts at or before
it: an entry starts at the top of its page, or at the first block of that page that
begins with the entry's title, if there is one (a line equal to the title is then
dropped, as headings are not blocks).  Without an outline, ``heading_path`` is ().

Title: the metadata title unless empty or a file name, else the largest-font line(s)
on the first page with text when clearly larger (>= 1.25x) than the body text, else
the file name stem.

Errors: an encrypted PDF (one that needs a password to open), bytes that do not
parse, or a PDF with images or drawings but no text at all raise LoadError; a PDF
whose pages are all empty gives a document without blocks.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from citeline.core.documents import Block, LoadError, SourceDocument
from citeline.core.scripts import WIDE_CHAR
from citeline.core.sentences import first_sentence_end

logger = logging.getLogger(__name__)

# PyMuPDF prints MuPDF's messages to stdout by default, which would corrupt a
# protocol spoken over stdio; send them to logging unless the user chose a target.


@functools.cache
def _fitz() -> Any:
    """PyMuPDF, imported on first use (it takes seconds to import), typed as Any.

    PyMuPDF prints MuPDF's messages to stdout by default, which would corrupt a
    protocol spoken over stdio; they are sent to logging (at DEBUG) unless the user
    chose a target with PYMUPDF_MESSAGE.
    """
    import pymupdf

    module: Any = pymupdf
    if "PYMUPDF_MESSAGE" not in os.environ:
        module.set_messages(
            pylogging=True, pylogging_name=f"{__name__}.mupdf", pylogging_level=logging.DEBUG
        )
    if hasattr(module, "no_recommend_layout"):
        module.no_recommend_layout()  # it would print() a suggestion
    return module


_MAX_EDGE_CHARS = 80
_EDGE_LINES = 2
_EDGE_ZONE = 0.15  # share of the page height at the top and bottom where they may sit
_TITLE_SIZE_RATIO = 1.25
_DIGITS = re.compile(r"\d+")
_NOT_WORD = re.compile(r"\W+")
_FILE_NAME_TITLE = re.compile(
    r"\.(?:docx?|pdf|tex|dvi|ps|odt|rtf|pptx?|xlsx?|indd|pages|key|txt|md|html?)$",
    re.IGNORECASE,
)
_JUNK_TITLES = frozenset({"untitled", "title", "no title", "document", "microsoft word"})


@dataclass(frozen=True)
class _Line:
    text: str
    y0: float
    y1: float
    size: float


@dataclass
class _Page:
    number: int  # 1-based
    height: float
    blocks: list[list[_Line]]

    def lines(self) -> list[_Line]:
        return [line for block in self.blocks for line in block]


def load_pdf(data: bytes, rel_path: str, file_name: str) -> SourceDocument:
    """Load a PDF file with a text layer."""
    if not data.strip():
        raise LoadError("not a valid PDF: the file is empty")
    if b"%PDF-" not in data[:1024]:
        raise LoadError("not a valid PDF: no %PDF header")
    try:
        doc = _fitz().open(stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises FileDataError, RuntimeError, ValueError...
        raise LoadError(f"not a valid PDF: {_one_line(exc)}") from exc
    try:
        return _load(doc, rel_path, file_name)
    finally:
        doc.close()
        _fitz().TOOLS.reset_mupdf_warnings()  # MuPDF keeps every warning otherwise


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _load(doc: Any, rel_path: str, file_name: str) -> SourceDocument:
    if doc.needs_pass:
        raise LoadError("PDF is encrypted")
    page_count = int(doc.page_count)
    if page_count == 0:
        raise LoadError("not a valid PDF: it has no pages")

    pages: list[_Page] = []
    failed = 0
    for index in range(page_count):
        try:
            page = _read_page(doc.load_page(index), index + 1)
        except Exception as exc:  # a broken page must not lose the rest of the document
            failed += 1
            logger.warning("%s: page %d unreadable, skipped: %s", rel_path, index + 1, exc)
            continue
        if page.blocks:
            pages.append(page)
    if failed == page_count:
        raise LoadError("not a valid PDF: no page could be read")
    if not pages and _has_graphics(doc):
        raise LoadError("PDF has no text layer (scanned?)")

    notes = _remove_running_lines(pages)
    raw_meta: dict[str, Any] = doc.metadata or {}
    metadata = {
        key: " ".join(str(raw_meta[key]).split())
        for key in ("author", "subject", "keywords")
        if raw_meta.get(key) and str(raw_meta[key]).strip()
    }
    metadata["pages"] = str(page_count)
    title = _meta_title(str(raw_meta.get("title") or "")) or _first_page_title(pages)
    blocks = _blocks(pages, _outline(doc))
    return SourceDocument(
        path=rel_path,
        kind="pdf",
        title=title or PurePosixPath(file_name).stem or file_name,
        blocks=tuple(blocks),
        title_from_content=bool(title),
        metadata=metadata,
        notes=tuple(notes),
    )


def _read_page(page: Any, number: int) -> _Page:
    content = page.get_text("dict", sort=True, flags=_fitz().TEXTFLAGS_TEXT)
    blocks: list[list[_Line]] = []
    for raw_block in content.get("blocks", []):
        if raw_block.get("type", 0) != 0:
            continue
        lines: list[_Line] = []
        for raw_line in raw_block.get("lines", []):
            spans = raw_line.get("spans", [])
            text = "".join(str(span.get("text", "")) for span in spans)
            if not text.strip():
                continue
            sizes = [float(span.get("size", 0.0)) for span in spans if str(span.get("text", ""))]
            _, y0, _, y1 = raw_line["bbox"]
            lines.append(_Line(text.strip(), float(y0), float(y1), max(sizes, default=0.0)))
        if lines:
            blocks.append(lines)
    return _Page(number, float(page.rect.height), blocks)


def _has_graphics(doc: Any) -> bool:
    for page in doc:
        try:
            if page.get_images() or page.get_drawings():
                return True
        except Exception:  # an unreadable page counts as not-text
            return True
    return False


# --- running headers and footers --------------------------------------------------


def _edge_key(text: str) -> str:
    return " ".join(_DIGITS.sub("#", text.casefold()).split())


def _edge_lines(page: _Page) -> list[_Line]:
    """The page's (at most) two topmost and two bottommost lines inside its margins."""
    lines = page.lines()
    margin = _EDGE_ZONE * page.height
    top = sorted(lines, key=lambda line: line.y0)[:_EDGE_LINES]
    bottom = sorted(lines, key=lambda line: -line.y1)[:_EDGE_LINES]
    edges = [line for line in top if line.y0 <= margin]
    edges += [line for line in bottom if line.y1 >= page.height - margin]
    return list({id(line): line for line in edges}.values())


def _repeat_threshold(pages_with_text: int) -> int | None:
    if pages_with_text < 3:
        return None
    if pages_with_text <= 5:
        return math.ceil(2 * pages_with_text / 3)
    return math.ceil(pages_with_text / 2)


def _remove_running_lines(pages: list[_Page]) -> list[str]:
    """Drop running headers and footers (see the module); the notes saying what went."""
    threshold = _repeat_threshold(len(pages))
    if threshold is None:
        return []
    edges = {
        page.number: [line for line in _edge_lines(page) if len(line.text) <= _MAX_EDGE_CHARS]
        for page in pages
    }
    seen: dict[str, dict[int, _Line]] = {}  # key -> {page: its first line with that key}
    for number, lines in edges.items():
        for line in lines:
            seen.setdefault(_edge_key(line.text), {}).setdefault(number, line)
    running: dict[str, Callable[[int, _Line], bool]] = {}
    for key, by_page in seen.items():
        if len(by_page) >= threshold:
            repeats = _repeats(by_page, threshold)
            if repeats is not None:
                running[key] = repeats
    if not running:
        return []
    removed_lines = 0
    removed_pages = 0
    kept_pages = 0
    examples: list[str] = []
    for page in pages:
        doomed = {
            id(line)
            for line in edges[page.number]
            if (test := running.get(_edge_key(line.text))) is not None and test(page.number, line)
        }
        if not doomed:
            continue
        blocks = [[line for line in block if id(line) not in doomed] for block in page.blocks]
        blocks = [block for block in blocks if block]
        if not blocks:  # all the page has: text, not furniture
            kept_pages += 1
            continue
        for line in page.lines():
            if id(line) in doomed and len(examples) < 3 and line.text not in examples:
                examples.append(line.text)
        removed_lines += len(doomed)
        removed_pages += 1
        page.blocks = blocks
    if not removed_lines:
        return []
    quoted = ", ".join(f'"{text}"' for text in examples)
    note = (
        f"left out {removed_lines} running header/footer line(s) repeated on"
        f" {removed_pages} of {len(pages)} pages (e.g. {quoted})"
    )
    if kept_pages:
        note += f"; kept them on {kept_pages} page(s) where they are the only text"
    return [note]


def _repeats(by_page: dict[int, _Line], threshold: int) -> Callable[[int, _Line], bool] | None:
    """How to tell the repeating lines of one key, or None when they do not repeat:
    the same digits on enough pages, or a number that follows the page number."""
    runs = {number: tuple(_DIGITS.findall(line.text)) for number, line in by_page.items()}
    if not any(runs.values()):
        return lambda number, line: True  # no digits: the same text on every page
    same, count = Counter(runs.values()).most_common(1)[0]
    if count >= threshold:
        return lambda number, line: tuple(_DIGITS.findall(line.text)) == same
    offsets: Counter[tuple[int, int]] = Counter()
    for number, found in runs.items():
        offsets.update({(i, int(run) - number) for i, run in enumerate(found) if len(run) <= 6})
    if not offsets:
        return None
    (position, offset), count = offsets.most_common(1)[0]
    if count < threshold:
        return None

    def follows_page(number: int, line: _Line) -> bool:
        found = _DIGITS.findall(line.text)
        return (
            position < len(found)
            and len(found[position]) <= 6
            and (int(found[position]) - number == offset)
        )

    return follows_page


# --- text -------------------------------------------------------------------------


def _unwrap(lines: list[str]) -> str:
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith("\u00ad"):
            out = out[:-1] + line
        elif out.endswith("-") and len(out) >= 2 and out[-2].isalnum():
            if out[-2].isalpha() and line[0].islower():
                out = out[:-1] + line
            else:
                out += line
        elif WIDE_CHAR.match(out[-1]) and WIDE_CHAR.match(line[0]):
            out += line
        else:
            out += " " + line
    return out


def _norm(text: str) -> str:
    return _NOT_WORD.sub("", text.casefold())


# --- outline ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    page: int
    title: str
    path: tuple[str, ...]


MAX_OUTLINE_DEPTH = 16  # deeper outline levels are kept as their ancestor at this depth
_START_WINDOW = 200  # blocks searched for where an outline entry starts on its page


def _outline(doc: Any) -> list[_Entry]:
    """The outline's entries by page (outline order within a page), each with its path
    of at most :data:`MAX_OUTLINE_DEPTH` titles: linear in the outline's size."""
    try:
        toc = doc.get_toc(simple=True)
    except Exception as exc:
        logger.info("ignoring an unreadable PDF outline: %s", exc)
        return []
    entries: list[_Entry] = []
    stack: list[tuple[int, tuple[str, ...]]] = []  # (level, path) of the open entries
    for item in toc:
        level, title, page = int(item[0]), " ".join(str(item[1]).split()), int(item[2])
        if not title:
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        parent = stack[-1][1] if stack else ()
        path = (*parent, title) if len(parent) < MAX_OUTLINE_DEPTH else parent
        stack.append((level, path))
        if page >= 1:
            entries.append(_Entry(page, title, path))
    entries.sort(key=lambda entry: entry.page)  # stable: outline order within a page
    return entries


def _blocks(pages: list[_Page], entries: list[_Entry]) -> list[Block]:
    """The pages' blocks with their outline paths; one pass over pages and entries
    together (both sorted by page)."""
    blocks: list[Block] = []
    path: tuple[str, ...] = ()
    at = 0  # entries[:at] start on pages already passed
    for page in pages:
        while at < len(entries) and entries[at].page < page.number:
            path = entries[at].path
            at += 1
        starting = []
        while at < len(entries) and entries[at].page == page.number:
            starting.append(entries[at])
            at += 1
        texts = [[line.text for line in block] for block in page.blocks]
        norms = [_norm(" ".join(lines)) for lines in texts] if starting else []
        # Where on the page does each starting entry begin?  (block index; they only
        # move down the page, at most _START_WINDOW blocks past the previous one)
        starts: list[tuple[int, _Entry]] = []
        search_from = 0
        for entry in starting:
            key = _norm(entry.title)
            window = range(search_from, min(len(texts), search_from + _START_WINDOW))
            found = next((i for i in window if key and norms[i].startswith(key)), None)
            if found is None:
                starts.append((search_from, entry))
                continue
            starts.append((found, entry))
            search_from = found
            if texts[found] and _norm(texts[found][0]) == key:
                texts[found] = texts[found][1:]
                norms[found] = _norm(" ".join(texts[found]))
        k = 0
        for i, lines in enumerate(texts):
            while k < len(starts) and starts[k][0] <= i:
                path = starts[k][1].path
                k += 1
            text = _unwrap(lines)
            if text:
                blocks.append(Block(text, path, page=page.number))
    return _join_page_breaks(blocks)


# A page's last block that ends like this stops mid-sentence ("…plain text and").
_MID_SENTENCE_END = re.compile(r"[a-z\u00df-\u00ff,\u00ad-]$")
_MIN_CUT_WORDS = 6  # fewer: a heading alone at the foot of a page, not a sentence


def _join_page_breaks(blocks: list[Block]) -> list[Block]:
    """A sentence that a page break cuts is kept whole on the page where it starts:
    the words up to its end on the next page move to the previous page's last block
    (same section only), so that quoting it never stops mid-sentence."""
    out: list[Block] = []
    for block in blocks:
        last = out[-1] if out else None
        if (
            last is None
            or last.page is None
            or block.page != last.page + 1
            or block.heading_path != last.heading_path
            or not _MID_SENTENCE_END.search(last.text)
            or len(last.text.split()) < _MIN_CUT_WORDS
        ):
            out.append(block)
            continue
        end = first_sentence_end(block.text)  # the rule quotes follow (core/sentences.py)
        cut = end if end is not None else len(block.text)
        out[-1] = replace(last, text=_unwrap([last.text, block.text[:cut]]))
        rest = block.text[cut:].strip()
        if rest:
            out.append(replace(block, text=rest))
    return out


# --- title ------------------------------------------------------------------------


def _meta_title(title: str) -> str:
    title = " ".join(title.split())
    if title.lower().startswith("microsoft word - "):
        title = title[len("microsoft word - ") :]
    if not title or title.lower() in _JUNK_TITLES or _FILE_NAME_TITLE.search(title):
        return ""
    return title


def _first_page_title(pages: list[_Page]) -> str:
    if not pages:
        return ""
    lines = pages[0].lines()
    weights = [(line.size, len(line.text)) for line in lines if line.size > 0]
    if not weights:
        return ""
    body = statistics.median_high([size for size, count in weights for _ in range(min(count, 200))])
    biggest = max(size for size, _ in weights)
    if biggest < _TITLE_SIZE_RATIO * body:
        return ""
    for block in pages[0].blocks:
        parts = [line.text for line in block if line.size >= biggest - 0.5]
        if parts:
            title = _unwrap(parts)
            return title if 2 <= len(title) <= 200 else ""
    return ""
