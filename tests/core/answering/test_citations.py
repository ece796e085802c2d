"""Citation markers in generated text."""

from citeline.core.answering.citations import (
    CitationFilter,
    cited_numbers,
    clean_answer_text,
    is_refusal,
)


def test_citation_filter_drops_unknown_markers_even_split_across_pieces() -> None:
    f = CitationFilter({1, 2, 3})
    pieces = ["The index is local [", "1] and fast [7", "]. See [2][", "9]. A [note] stays", " [3"]
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "The index is local [1] and fast . See [2]. A [note] stays [3"
    assert clean_answer_text("fast . See [2].") == "fast. See [2]."
    assert cited_numbers("a [2] b [1] c [2]") == [2, 1]


def test_refusal_detection() -> None:
    assert is_refusal("The documents do not contain the answer.")
    assert is_refusal("I cannot answer this from the evidence.")
    assert is_refusal("文档中没有这个问题的答案。")
    assert not is_refusal("The index lives in .citeline [1].")
