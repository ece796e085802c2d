"""What an ask produces, as JSON for the editors and the ask record."""

from citeline.core.answering.results import Answer, Evidence, citation_for
from citeline.core.documents import Chunk, Hit


def test_an_answer_says_how_it_was_made_and_keeps_dropped_sentences_to_the_record() -> None:
    chunk = Chunk("a.md", "Guide", ("Guide", "Index"), "text", 3, 5, None, 0)
    evidence = Evidence(1, Hit(7, 1, 0.123456789, chunk))
    citation = citation_for(evidence, cited=True)
    assert (citation.n, citation.chunk_id, citation.section) == (1, 7, "Guide > Index")
    answer = Answer(
        "Q?",
        "en",
        "text [1]",
        False,
        True,
        [citation],
        [evidence.hit],
        [evidence],
        mode="generative",
        model="m.gguf",
        fallback=None,
        dropped=[{"sentence": "x", "reason": "cites nothing", "support": 0.0}],
        confidence=0.876543,
    )
    data = answer.to_json()
    assert data["mode"] == "generative" and data["model"] == "m.gguf"
    assert data["confidence"] == 0.8765 and data["fallback"] is None
    assert data["citations"] == [citation.to_json()]
    assert "dropped" not in data and "prompt" not in data  # the ask record's, not the answer's
