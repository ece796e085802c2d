"""PDFs written byte by byte, for what PyMuPDF cannot be asked to make: an outline
nested tens of thousands of levels deep (60,000 make MuPDF segfault while opening
it), or one with an entry per page over tens of thousands of pages.
Used by the torture suite (tests/torture/pdf_crashes.py) and benchmarks/torture.py."""

from __future__ import annotations

from pathlib import Path


def outline_pdf(entries: int, *, deep: bool, pages: int = 1, line: bytes | None = None) -> bytes:
    """A PDF of ``pages`` pages of text (``line`` on each, else its page number) with an
    outline of ``entries`` entries, each the child of the one before (``deep``) or all
    siblings, spread over the pages (none: no outline)."""
    objects: dict[int, bytes] = {}
    page_ids = [(4 + 2 * p, 5 + 2 * p) for p in range(pages)]
    first_item = 4 + 2 * pages
    kids = b" ".join(b"%d 0 R" % page for page, _ in page_ids)
    outline = b" /Outlines 3 0 R" if entries else b""
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R%s >>" % outline
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages)
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    for n, (page, content) in enumerate(page_ids, start=1):
        said = line if line is not None else b"Page %d of the lighthouse weather log" % n
        text = b"BT /F1 12 Tf 72 400 Td (%s) Tj ET" % said
        objects[page] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
            b" /Resources %s >>" % (content, font)
        )
        objects[content] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text)
    items = list(range(first_item, first_item + entries))
    objects[3] = b"<< /Type /Outlines /Count 0 >>"
    if items:
        last = items[0] if deep else items[-1]
        objects[3] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (
            items[0],
            last,
            entries,
        )
    for k, item in enumerate(items):
        target = page_ids[0 if deep else k % pages][0]
        dest = b" /Dest [%d 0 R /XYZ 0 792 0]" % target
        if deep:
            parent = 3 if k == 0 else items[k - 1]
            child = b""
            if k + 1 < entries:
                child = b" /First %d 0 R /Last %d 0 R /Count %d" % (
                    items[k + 1],
                    items[k + 1],
                    entries - k - 1,
                )
            objects[item] = b"<< /Title (Level %d) /Parent %d 0 R%s%s >>" % (k, parent, child, dest)
        else:
            prev = b" /Prev %d 0 R" % items[k - 1] if k else b""
            following = b" /Next %d 0 R" % items[k + 1] if k + 1 < entries else b""
            objects[item] = b"<< /Title (Chapter %d) /Parent 3 0 R%s%s%s >>" % (
                k + 1,
                prev,
                following,
                dest,
            )
    out = bytearray(b"%PDF-1.7\n")
    offsets: dict[int, int] = {}
    total = max(objects)
    for number in range(1, total + 1):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (total + 1)
    for number in range(1, total + 1):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (total + 1, xref)
    return bytes(out)


def write(path: Path, entries: int, *, deep: bool, pages: int = 1) -> Path:
    path.write_bytes(outline_pdf(entries, deep=deep, pages=pages))
    return path
