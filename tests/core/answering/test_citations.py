"""Citation markers in generated text."""

from citeline.core.answering.citations import CitationFilter, clean_answer_text


def test_citation_filter_drops_unknown_markers_even_split_across_pieces() -> None:
    f = CitationFilter({1, 2, 3})
    pieces = ["The index is local [", "1] and fast [7", "]. See [2][", "9]. A [note] stays", " [3"]
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "The index is local [1] and fast . See [2]. A [note] stays [3"
    assert clean_answer_text("fast . See [2].") == "fast. See [2]."
