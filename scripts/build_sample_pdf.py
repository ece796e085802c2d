"""Build ``samples/citeline-guide.pdf`` from two of the Markdown sample documents.

The PDF is a test fixture and a demo document at once, so it has what real PDFs
have: a text layer, several pages, a running header and a page-number footer on
every page, an outline (bookmarks) for the H1/H2 sections pointing at the pages
they start on, and a document title in the metadata.  The output is
deterministic: fixed dates, fixed document id, so a rebuild gives the same bytes.

Usage: .venv/bin/python scripts/build_sample_pdf.py [OUTPUT]
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

import pymupdf
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SOURCES = ("how-indexing-works.md", "troubleshooting.md")
OUTPUT = SAMPLES / "citeline-guide.pdf"

TITLE = "Citeline Guide"
HEADER = "Citeline Guide"
FIXED_DATE = "D:20250101000000Z"

PAGE = pymupdf.paper_rect("a4")
MARGIN_X = 64
MARGIN_TOP = 72  # room for the running header
MARGIN_BOTTOM = 64  # room for the footer
BODY = pymupdf.Rect(MARGIN_X, MARGIN_TOP, PAGE.width - MARGIN_X, PAGE.height - MARGIN_BOTTOM)

CSS = """
body { font-family: sans-serif; font-size: 10.5pt; line-height: 1.35; }
h1 { font-size: 19pt; margin: 0 0 10pt 0; }
h2 { font-size: 14pt; margin: 14pt 0 5pt 0; }
h3 { font-size: 11.5pt; margin: 10pt 0 4pt 0; }
p { margin: 0 0 6pt 0; }
ul, ol { margin: 0 0 6pt 0; }
li { margin: 0 0 2pt 0; }
pre { font-family: monospace; font-size: 9pt; background-color: #f2f2f2;
      margin: 4pt 0 8pt 0; padding: 4pt; }
code { font-family: monospace; font-size: 9.5pt; }
table { margin: 4pt 0 8pt 0; }
th { text-align: left; font-weight: bold; padding: 2pt 6pt 2pt 0; }
td { padding: 2pt 6pt 2pt 0; }
"""

_HEADING = re.compile(r"<h([1-6])>")
_TAG = re.compile(r"(<[^>]*>)")
_LIGATURE_TAIL = re.compile(r"(?<=f)([fil])")


def _break_ligatures(html: str) -> str:
    """Keep "fi", "fl", "ff", "ffi" as separate letters in the text layer.

    MuPDF's layout shapes text with the font's ligatures, which would put U+FB01
    and friends into the PDF's text, so "file" could not be found by a search
    for "file".  A letter in its own span starts a new shaping run, which is
    enough to stop the ligature without adding any character to the text.
    """
    parts = _TAG.split(html)
    for i in range(0, len(parts), 2):  # even indices are text between tags
        parts[i] = _LIGATURE_TAIL.sub(r"<span>\1</span>", parts[i])
    return "".join(parts)


def markdown_to_html(text: str) -> str:
    """CommonMark + tables to HTML, with ids on headings so their positions can be found."""
    html = MarkdownIt("commonmark").enable("table").render(text)
    counter = iter(range(1, 10_000))
    html = _HEADING.sub(lambda m: f'<h{m.group(1)} id="h{next(counter)}">', html)
    return _break_ligatures(html)


def layout(sources: list[Path]) -> tuple[bytes, list[list[object]]]:
    """Lay the documents out, each starting on a new page.

    Returns the PDF bytes and the outline entries ``[level, title, page]`` for
    every H1 and H2, with the page each heading is placed on.
    """
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    toc: list[list[object]] = []
    page_number = 0
    for source in sources:
        story = pymupdf.Story(markdown_to_html(source.read_text("utf-8")), user_css=CSS)
        more = True
        while more:
            page_number += 1
            device = writer.begin_page(PAGE)
            more, _ = story.place(BODY)

            def record(position: Any) -> None:
                # open_close bit 1: the element starts here; text is None for some elements.
                if position.heading in (1, 2) and position.open_close & 1:
                    title = " ".join((position.text or "").split())
                    toc.append([position.heading, title, position.page])

            story.element_positions(record, {"page": page_number})
            story.draw(device)
            writer.end_page()
    writer.close()
    return buffer.getvalue(), toc


def decorate(doc: pymupdf.Document) -> None:
    """Running header and page-number footer, as real text, on every page."""
    for page in doc:
        width, height = page.rect.width, page.rect.height
        # The header goes first in the content stream (overlay=False), so text
        # extraction reads it before the body, as a reader would; the footer last.
        page.insert_text(
            (MARGIN_X, 40), HEADER, fontname="helv", fontsize=9, color=(0.35,) * 3, overlay=False
        )
        page.draw_line(
            (MARGIN_X, 46), (width - MARGIN_X, 46), color=(0.7,) * 3, width=0.5, overlay=False
        )
        footer = f"Page {page.number + 1}"
        text_width = pymupdf.get_text_length(footer, fontname="helv", fontsize=9)
        page.insert_text(
            ((width - text_width) / 2, height - 32),
            footer,
            fontname="helv",
            fontsize=9,
            color=(0.35,) * 3,
        )


def check(doc: pymupdf.Document, toc: list[list[object]]) -> None:
    """Plain text layer, and every outline entry findable on the page it points at."""
    for page in doc:
        text = page.get_text()
        if re.search("[\ufb00-\ufb06]", text):
            raise SystemExit(f"page {page.number + 1}: ligature characters in the text layer")
    for level, title, page in toc:
        assert isinstance(page, int) and isinstance(title, str)
        if not doc[page - 1].search_for(title):
            raise SystemExit(f"outline entry {title!r} (H{level}) not found on page {page}")


def build(output: Path = OUTPUT) -> Path:
    pdf, toc = layout([SAMPLES / name for name in SOURCES])
    doc = pymupdf.open("pdf", pdf)
    decorate(doc)
    check(doc, toc)
    doc.set_toc(toc)
    doc.set_metadata(
        {
            "title": TITLE,
            "author": "Citeline",
            "subject": "How indexing works, and troubleshooting",
            "keywords": "Citeline, indexing, troubleshooting",
            "creator": "scripts/build_sample_pdf.py",
            "producer": "PyMuPDF",
            "creationDate": FIXED_DATE,
            "modDate": FIXED_DATE,
        }
    )
    doc.subset_fonts()  # the layout embeds whole fonts; keep only the glyphs used
    output.parent.mkdir(parents=True, exist_ok=True)
    data = doc.tobytes(garbage=4, deflate=True, no_new_id=True, reproducible=True)
    doc.close()
    output.write_bytes(data)
    return output


def main(argv: list[str]) -> int:
    output = Path(argv[1]) if len(argv) > 1 else OUTPUT
    path = build(output)
    doc = pymupdf.open(path)
    print(f"{path}: {doc.page_count} pages, {path.stat().st_size} bytes")
    for level, title, page in doc.get_toc():
        print(f"  {'  ' * (level - 1)}{title} .... {page}")
    doc.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
