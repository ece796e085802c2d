import itertools

from citeline.core.chunking import (
    ChunkSettings,
    chunk_document,
    embedding_key,
    embedding_text,
    text_cost,
)
from citeline.core.documents import Block, SourceDocument


def doc(*blocks: Block, title: str = "Guide", from_content: bool = True) -> SourceDocument:
    return SourceDocument(
        path="guide.md",
        kind="markdown",
        title=title,
        blocks=blocks,
        title_from_content=from_content,
    )


def test_sections_never_share_a_chunk() -> None:
    d = doc(
        Block("Install with pip.", ("Guide", "Install"), 3, 3),
        Block("Set the proxy variable.", ("Guide", "Install", "Proxies"), 7, 7),
    )
    chunks = chunk_document(d, ChunkSettings())
    assert [c.heading_path for c in chunks] == [
        ("Guide", "Install"),
        ("Guide", "Install", "Proxies"),
    ]
    assert [c.section for c in chunks] == ["Guide > Install", "Guide > Install > Proxies"]
    assert [(c.start_line, c.end_line) for c in chunks] == [(3, 3), (7, 7)]
    assert [c.ordinal for c in chunks] == [0, 1]


def test_short_blocks_of_a_section_are_packed_with_blank_lines() -> None:
    d = doc(
        Block("First paragraph.", ("A",), 2, 2),
        Block("Second line one.\nSecond line two.", ("A",), 4, 5),
    )
    (chunk,) = chunk_document(d, ChunkSettings())
    assert chunk.text == "First paragraph.\n\nSecond line one.\nSecond line two."
    assert (chunk.start_line, chunk.end_line) == (2, 5)


def test_long_section_windows_end_at_sentences_with_overlap_and_exact_lines() -> None:
    lines = [f"Sentence number {i} talks about topic {i} in some detail." for i in range(1, 61)]
    d = doc(Block("\n".join(lines), ("Long",), 10, 69))
    settings = ChunkSettings(max_cost=300, overlap_cost=60)
    chunks = chunk_document(d, settings)
    assert len(chunks) > 5
    for c in chunks:
        assert text_cost(c.text) <= 300
        assert c.text.endswith(".")  # never cut mid-sentence
        first, last = c.text.splitlines()[0], c.text.splitlines()[-1]
        assert first == lines[c.start_line - 10]
        assert last == lines[c.end_line - 10]
    # consecutive windows overlap by at least one sentence, and cover everything
    for a, b in itertools.pairwise(chunks):
        assert b.start_line <= a.end_line
    assert chunks[0].start_line == 10 and chunks[-1].end_line == 69


def test_windows_prefer_paragraph_boundaries() -> None:
    para = "This sentence is filler text. " * 5
    d = doc(*(Block(para.strip(), ("S",), 1 + 2 * i, 1 + 2 * i) for i in range(6)))
    chunks = chunk_document(d, ChunkSettings(max_cost=400, overlap_cost=0))
    for c in chunks:
        # each window holds whole paragraphs: it starts and ends on a paragraph
        assert c.text.startswith("This sentence") and c.text.endswith("filler text.")
        assert text_cost(c.text) <= 400


def test_chinese_sentences_split_at_full_stops() -> None:
    sentence = "这是一个关于索引的句子，它说明了增量更新如何工作。"
    d = doc(Block(sentence * 40, ("说明",), 1, 1))
    chunks = chunk_document(d, ChunkSettings(max_cost=400, overlap_cost=0))
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.endswith("。")
        assert text_cost(c.text) <= 400
    assert text_cost("中文") == 8 and text_cost("ab") == 2


def test_oversized_sentence_is_cut_at_spaces() -> None:
    words = " ".join(f"word{i}" for i in range(400))
    d = doc(Block(words, (), 1, 1))
    chunks = chunk_document(d, ChunkSettings(max_cost=200, overlap_cost=0))
    assert "".join(c.text.replace(" ", "") for c in chunks) == words.replace(" ", "")
    assert all(text_cost(c.text) <= 200 for c in chunks)
    assert all(not c.text.startswith(" ") for c in chunks)


def test_pdf_blocks_split_by_page() -> None:
    d = SourceDocument(
        path="m.pdf",
        kind="pdf",
        title="Manual",
        blocks=(
            Block("Page one text.", ("Intro",), page=1),
            Block("Page two text.", ("Intro",), page=2),
        ),
    )
    chunks = chunk_document(d, ChunkSettings())
    assert [(c.page, c.text, c.start_line) for c in chunks] == [
        (1, "Page one text.", None),
        (2, "Page two text.", None),
    ]


def test_embedding_text_has_context_but_stored_text_is_original() -> None:
    d = doc(Block("Use a proxy.", ("Install", "Proxies"), 5, 5))
    (chunk,) = chunk_document(d, ChunkSettings())
    assert chunk.text == "Use a proxy."
    assert embedding_text(chunk, ChunkSettings()) == "Guide > Install > Proxies\n\nUse a proxy."
    assert embedding_text(chunk, ChunkSettings(headings_in_embedding=False)) == "Use a proxy."


def test_file_name_titles_stay_out_of_the_embedding() -> None:
    a = chunk_document(
        doc(Block("Same text.", (), 1, 1), title="a", from_content=False), ChunkSettings()
    )
    b = chunk_document(
        doc(Block("Same text.", (), 1, 1), title="b", from_content=False), ChunkSettings()
    )
    settings = ChunkSettings()
    assert embedding_text(a[0], settings) == "Same text."
    assert embedding_key(embedding_text(a[0], settings)) == embedding_key(
        embedding_text(b[0], settings)
    )


def test_title_equal_to_first_heading_is_not_repeated() -> None:
    (chunk,) = chunk_document(doc(Block("Body.", ("Guide", "Setup"), 3, 3)), ChunkSettings())
    assert embedding_text(chunk, ChunkSettings()) == "Guide > Setup\n\nBody."
