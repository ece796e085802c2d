"""PDF loading with PyMuPDF: pages, running headers, hyphens, outline, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf as _pymupdf
import pytest

from citeline.core.documents import LoadError, SourceDocument
from citeline.core.loaders import load_document, pdf

pymupdf: Any = _pymupdf  # PyMuPDF's API is untyped


def _load(path: Path) -> SourceDocument:
    return load_document(path, f"papers/{path.name}")


def _spans(doc: SourceDocument) -> list[tuple[int | None, tuple[str, ...], str]]:
    return [(b.page, b.heading_path, b.text) for b in doc.blocks]


def _image_page(doc: Any) -> None:
    page = doc.new_page()
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pixmap.clear_with(128)
    page.insert_image(pymupdf.Rect(72, 72, 300, 300), pixmap=pixmap)


def test_text_per_page_blank_page_skipped_and_title_from_metadata(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Relational databases store rows.")
    doc.new_page()  # blank
    page = doc.new_page()
    page.insert_text((72, 100), "Indexes speed up lookups.")
    page.insert_text((72, 200), "A second paragraph on page three.")
    doc.set_metadata({"title": "Databases 101", "author": "E. F. Codd"})
    doc.save(tmp_path / "db.pdf")

    loaded = _load(tmp_path / "db.pdf")
    assert loaded.path == "papers/db.pdf"
    assert loaded.kind == "pdf"
    assert loaded.title == "Databases 101"
    assert loaded.title_from_content is True
    assert dict(loaded.metadata) == {"author": "E. F. Codd", "pages": "3"}
    assert _spans(loaded) == [
        (1, (), "Relational databases store rows."),
        (3, (), "Indexes speed up lookups."),
        (3, (), "A second paragraph on page three."),
    ]
    assert all(b.start_line is None and b.end_line is None for b in loaded.blocks)


def test_running_header_and_footer_removed_but_rare_line_kept(tmp_path: Path) -> None:
    doc = pymupdf.open()
    bodies = [
        "Chapter one starts the story.",
        "The hero leaves home.",
        "A storm hits the ship.",
        "They reach the island.",
        "The treasure is found.",
        "Everyone sails back.",
    ]
    for number, body in enumerate(bodies, start=1):
        page = doc.new_page()  # 595 x 842
        page.insert_text((72, 40), "The Voyage - Draft")
        if number in (2, 5):
            page.insert_text((72, 60), "Confidential")  # on 2 of 6 pages only
        page.insert_text((72, 300), body)
        page.insert_text((72, 810), f"Page {number} of 6")
    doc.save(tmp_path / "voyage.pdf")

    loaded = _load(tmp_path / "voyage.pdf")
    assert _spans(loaded) == [
        (1, (), "Chapter one starts the story."),
        (2, (), "Confidential"),
        (2, (), "The hero leaves home."),
        (3, (), "A storm hits the ship."),
        (4, (), "They reach the island."),
        (5, (), "Confidential"),
        (5, (), "The treasure is found."),
        (6, (), "Everyone sails back."),
    ]


def test_two_page_document_keeps_repeated_lines(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for body in ("First page body.", "Second page body."):
        page = doc.new_page()
        page.insert_text((72, 40), "Short Memo")
        page.insert_text((72, 300), body)
    doc.save(tmp_path / "memo.pdf")
    assert _spans(_load(tmp_path / "memo.pdf")) == [
        (1, (), "Short Memo"),
        (1, (), "First page body."),
        (2, (), "Short Memo"),
        (2, (), "Second page body."),
    ]


def test_hyphenation_rejoined_and_lines_unwrapped(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text(
        (72, 100),
        "The system stores informa-\ntion about every user\nof the Jean-\nPaul Sartre library.",
    )
    doc.save(tmp_path / "h.pdf")
    assert _spans(_load(tmp_path / "h.pdf")) == [
        (1, (), "The system stores information about every user of the Jean-Paul Sartre library."),
    ]


def test_a_sentence_cut_by_a_page_break_stays_whole_on_its_first_page(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for text in (
        "Citeline loads five file types: Markdown, HTML, PDF, text and",
        "reStructuredText. Each becomes blocks.\n\nA new paragraph.",
        "Content-addressed vectors",  # a heading alone at the foot of a page
        "Vectors are stored by hash.",
    ):
        doc.new_page().insert_text((72, 100), text)
    doc.save(tmp_path / "cut.pdf")
    texts = [(b.page, b.text) for b in _load(tmp_path / "cut.pdf").blocks]
    assert texts[0] == (
        1,
        "Citeline loads five file types: Markdown, HTML, PDF, text and reStructuredText.",
    )
    assert texts[1][0] == 2 and texts[1][1].startswith("Each becomes blocks.")
    assert (3, "Content-addressed vectors") in texts
    assert (4, "Vectors are stored by hash.") in texts


def test_outline_gives_sections(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Introduction")
    page.insert_text((72, 130), "Why caching matters.")
    page.insert_text((72, 300), "Cache Policies")
    page.insert_text((72, 330), "LRU evicts the least recently used entry.")
    doc.new_page().insert_text((72, 100), "LFU counts uses instead.")
    doc.new_page().insert_text((72, 100), "Benchmarks show a 2x win.")
    doc.set_toc(
        [
            [1, "Introduction", 1],
            [2, "Cache Policies", 1],
            [1, "Results", 3],
        ]
    )
    doc.save(tmp_path / "cache.pdf")

    loaded = _load(tmp_path / "cache.pdf")
    assert _spans(loaded) == [
        (1, ("Introduction",), "Why caching matters."),
        (1, ("Introduction", "Cache Policies"), "LRU evicts the least recently used entry."),
        (2, ("Introduction", "Cache Policies"), "LFU counts uses instead."),
        (3, ("Results",), "Benchmarks show a 2x win."),
    ]


def test_title_from_largest_font_else_stem(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Quarterly Report", fontsize=24)
    page.insert_text((72, 140), "Revenue grew in every region this quarter.", fontsize=11)
    page.insert_text((72, 160), "Costs stayed flat.", fontsize=11)
    doc.save(tmp_path / "q3.pdf")
    titled = _load(tmp_path / "q3.pdf")
    assert titled.title == "Quarterly Report"
    assert titled.title_from_content is True

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 80), "Same size everywhere.")
    doc.set_metadata({"title": "report-final.docx"})
    doc.save(tmp_path / "plain.pdf")
    untitled = _load(tmp_path / "plain.pdf")
    assert untitled.title == "plain"
    assert untitled.title_from_content is False


def test_image_only_page_is_skipped(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Text before the figure.")
    _image_page(doc)
    doc.new_page().insert_text((72, 100), "Text after the figure.")
    doc.save(tmp_path / "fig.pdf")
    assert _spans(_load(tmp_path / "fig.pdf")) == [
        (1, (), "Text before the figure."),
        (3, (), "Text after the figure."),
    ]


def test_only_image_pages_has_no_text_layer(tmp_path: Path) -> None:
    doc = pymupdf.open()
    _image_page(doc)
    _image_page(doc)
    doc.save(tmp_path / "scan.pdf")
    with pytest.raises(LoadError) as info:
        _load(tmp_path / "scan.pdf")
    assert str(info.value) == "PDF has no text layer (scanned?)"


def test_drawings_only_has_no_text_layer(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().draw_rect(pymupdf.Rect(50, 50, 200, 200), color=(0, 0, 0))
    doc.save(tmp_path / "shapes.pdf")
    with pytest.raises(LoadError, match=r"^PDF has no text layer \(scanned\?\)$"):
        _load(tmp_path / "shapes.pdf")


def test_all_blank_pages_is_an_empty_document(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page()
    doc.save(tmp_path / "blank.pdf")
    loaded = _load(tmp_path / "blank.pdf")
    assert loaded.blocks == ()
    assert loaded.title == "blank"


def test_encrypted_pdf(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Secret plans.")
    doc.save(
        tmp_path / "locked.pdf",
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        owner_pw="o",
        user_pw="u",
    )
    with pytest.raises(LoadError) as info:
        _load(tmp_path / "locked.pdf")
    assert str(info.value) == "PDF is encrypted"


def test_owner_password_only_pdf_still_loads(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Readable but not editable.")
    doc.save(
        tmp_path / "owner.pdf",
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        owner_pw="o",
        permissions=pymupdf.PDF_PERM_PRINT,
    )
    assert _spans(_load(tmp_path / "owner.pdf")) == [(1, (), "Readable but not editable.")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not a pdf at all, just words\n" * 20, "not a valid PDF: no %PDF header"),
        (b"%PDF-1.7\n" + bytes(range(1, 256)) * 8, "not a valid PDF: "),
        (b"", "not a valid PDF: the file is empty"),
    ],
)
def test_corrupt_pdf(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(content)
    with pytest.raises(LoadError) as info:
        _load(path)
    text = str(info.value)
    assert text.startswith(message)
    assert "\n" not in text


def test_broken_xref_is_repaired_and_nothing_is_printed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 100), "Repaired text.")
    data: bytes = doc.tobytes()
    start = data.rindex(b"startxref")
    path = tmp_path / "repair.pdf"
    path.write_bytes(data[:start] + b"startxref\n999999\n%%EOF\n")
    assert _spans(_load(path)) == [(1, (), "Repaired text.")]
    assert capfd.readouterr().out == ""


def test_lines_that_differ_only_in_digits_are_text_not_furniture(tmp_path: Path) -> None:
    # Three pages, each with one line differing only in its numbers: all of it is text.
    doc = pymupdf.open()
    readings = [
        "Reading 1: 42 units at 09:15",
        "Reading 2: 17 units at 11:40",
        "Reading 3: 99 units at 16:05",
    ]
    for text in readings:
        doc.new_page().insert_text((72, 60), text)
    doc.save(tmp_path / "readings.pdf")
    loaded = _load(tmp_path / "readings.pdf")
    assert [b.text for b in loaded.blocks] == readings and loaded.notes == ()


def test_numbered_lines_that_do_not_count_pages_stay(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for number in range(1, 7):
        page = doc.new_page()
        page.insert_text((72, 40), f"Sample {number * 7 + 3} of batch {number * 13}")  # not pages
        page.insert_text((72, 300), f"Body of page {number}.")
    doc.save(tmp_path / "batches.pdf")
    loaded = _load(tmp_path / "batches.pdf")
    assert [b.text for b in loaded.blocks][:2] == ["Sample 10 of batch 13", "Body of page 1."]
    assert len(loaded.blocks) == 12 and loaded.notes == ()


def test_page_numbers_at_an_offset_are_furniture_and_reported(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for number in range(1, 8):
        page = doc.new_page()
        page.insert_text((72, 40), "Proceedings of the Moss Society, 2024")
        page.insert_text((72, 300), f"Article text {number}.")
        page.insert_text((72, 810), f"- {number + 240} -")  # printed page numbers start at 241
    doc.save(tmp_path / "proceedings.pdf")
    loaded = _load(tmp_path / "proceedings.pdf")
    assert [b.text for b in loaded.blocks] == [f"Article text {n}." for n in range(1, 8)]
    (note,) = loaded.notes
    assert note.startswith("left out 14 running header/footer line(s) repeated on 7 of 7 pages")
    assert '"Proceedings of the Moss Society, 2024"' in note and '"- 241 -"' in note


def test_a_page_whose_only_text_is_a_running_line_keeps_it(tmp_path: Path) -> None:
    doc = pymupdf.open()
    for number in range(1, 6):
        page = doc.new_page()
        page.insert_text((72, 40), "Lab Notebook")
        if number != 3:
            page.insert_text((72, 300), f"Entry {number}: the culture grew.")
    doc.save(tmp_path / "notebook.pdf")
    loaded = _load(tmp_path / "notebook.pdf")
    assert [(b.page, b.text) for b in loaded.blocks if b.page == 3] == [(3, "Lab Notebook")]
    assert sum(b.text == "Lab Notebook" for b in loaded.blocks) == 1
    (note,) = loaded.notes
    assert "on 4 of 5 pages" in note and "kept them on 1 page(s)" in note


def test_a_long_generated_pdf_loses_no_text(tmp_path: Path) -> None:
    # 300 pages of one numbered line each (the case that used to index 0 chunks), and
    # 300 pages with a real running footer around numbered body lines.
    doc = pymupdf.open()
    for number in range(1, 301):
        doc.new_page().insert_text((72, 72), f"Record {number}: value {number * 37 % 1000}")
    doc.save(tmp_path / "records.pdf")
    loaded = _load(tmp_path / "records.pdf")
    assert len(loaded.blocks) == 300 and loaded.notes == ()
    assert loaded.blocks[99].text == "Record 100: value 700"

    doc = pymupdf.open()
    for number in range(1, 301):
        page = doc.new_page()
        page.insert_text((72, 300), f"Record {number}: value {number * 37 % 1000}")
        page.insert_text((72, 810), f"Page {number}")
    doc.save(tmp_path / "footed.pdf")
    loaded = _load(tmp_path / "footed.pdf")
    assert [b.text for b in loaded.blocks] == [
        f"Record {n}: value {n * 37 % 1000}" for n in range(1, 301)
    ]
    assert loaded.notes[0].startswith("left out 300 running header/footer line(s)")


def test_an_outline_nested_deeper_than_the_limit_keeps_its_first_levels() -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The keeper logs the weather.")
    doc.set_toc([[level, f"L{level}", 1] for level in range(1, 41)])
    loaded = pdf.load_pdf(doc.tobytes(), "deep.pdf", "deep.pdf")
    (block,) = loaded.blocks
    assert block.heading_path == tuple(f"L{n}" for n in range(1, pdf.MAX_OUTLINE_DEPTH + 1))
