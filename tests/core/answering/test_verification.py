"""Checking generated sentences against the evidence they cite."""

from __future__ import annotations

from citeline.core.answering.results import Evidence
from citeline.core.answering.verification import (
    VerifySettings,
    block_spans,
    generated_sentences,
    support,
    verify,
)
from citeline.core.documents import Chunk, Hit


def evidence(n: int, text: str) -> Evidence:
    chunk = Chunk(f"{n}.md", "Guide", ("Guide",), text, 1, 3, None, 0)
    return Evidence(n, Hit(chunk_id=n, rank=n, score=0.9, chunk=chunk))


BLOCKS = [
    evidence(1, "The index is stored in the .citeline folder. It holds index.sqlite3."),
    evidence(2, "Passwords must be at least 14 characters long. They rotate every 90 days."),
]


def test_generated_text_splits_into_sentences_with_their_markers() -> None:
    text = "The index is in .citeline [1]. Passwords rotate [2][1].\n[2]\n\nNo marker here."
    assert generated_sentences(text) == [
        ("The index is in .citeline.", (1,)),
        ("Passwords rotate.", (2, 1, 2)),
        ("No marker here.", ()),
    ]


def test_support_is_the_share_of_terms_and_of_their_order_in_one_span() -> None:
    [span] = block_spans(evidence(9, "The index is stored in a folder."))
    assert support(["index", "store", "folder"], [span]) == (1.0, 1.0)
    assert support(["folder", "store", "index"], [span]) == (1.0, 0.0)  # recombined
    assert support(["index", "store", "bucket"], [span]) == (2 / 3, 0.5)
    assert support([], [span]) == (0.0, 0.0)


def test_a_recombination_of_evidence_words_is_not_supported() -> None:
    checked = verify(
        "The index folder is stored in the citeline [1].", BLOCKS, VerifySettings(order=0.6)
    )
    assert not checked.kept


def test_a_sentence_without_a_claim_goes() -> None:
    checked = verify("1. [1] Note. [2]", BLOCKS, VerifySettings())
    assert [s.reason for s in checked.sentences] == ["no claim", "no claim"]


def test_a_supported_sentence_is_kept_with_its_citation() -> None:
    checked = verify("The index is stored in the .citeline folder [1].", BLOCKS, VerifySettings())
    assert [(s.text, s.cited, s.kept) for s in checked.sentences] == [
        ("The index is stored in the .citeline folder.", (1,), True)
    ]
    assert checked.text() == "The index is stored in the .citeline folder. [1]"


def test_an_unsupported_sentence_is_dropped_even_with_a_marker() -> None:
    text = (
        "The index is stored in the .citeline folder [1]. "
        "You can't change the embedding model because it is not available anymore [1]."
    )
    checked = verify(text, BLOCKS, VerifySettings())
    assert [s.kept for s in checked.sentences] == [True, False]
    assert checked.dropped[0].reason == "cites evidence that does not support it"
    assert "embedding model" not in checked.text()
    assert checked.cited == [1]


def test_a_wrong_marker_moves_to_the_block_that_supports_the_sentence() -> None:
    checked = verify("Passwords must be at least 14 characters long [1].", BLOCKS, VerifySettings())
    assert checked.kept[0].cited == (2,)


def test_an_unmarked_sentence_gets_its_best_support_or_is_dropped() -> None:
    checked = verify(
        "Passwords rotate every 90 days. Bananas are yellow fruit.", BLOCKS, VerifySettings()
    )
    assert [(s.cited, s.kept) for s in checked.sentences] == [((2,), True), ((), False)]
    assert checked.dropped[0].reason == "cites nothing"


def test_a_claim_joining_two_sentences_of_a_block_is_supported() -> None:
    checked = verify(
        "The .citeline folder holds index.sqlite3 [1].", BLOCKS, VerifySettings(support=0.9)
    )
    assert checked.kept and checked.kept[0].cited == (1,)


def test_nothing_supported_leaves_nothing() -> None:
    checked = verify("I like trains a lot [1].", BLOCKS, VerifySettings())
    assert checked.kept == [] and checked.text() == ""


def test_a_quoted_fragment_of_the_cited_block_is_supported() -> None:
    checked = verify("index.sqlite3. [1]", BLOCKS, VerifySettings())
    assert [(s.kept, s.cited) for s in checked.sentences] == [(True, (1,))]
