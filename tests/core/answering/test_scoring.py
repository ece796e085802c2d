"""Scoring units: the order, the dense reordering, the answerability judgement."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citeline.core.answering.fitted import ENGLISH, FEATURES, QUESTION_FEATURES
from citeline.core.answering.results import Evidence
from citeline.core.answering.scoring import DENSE_CANDIDATES, UnitScorer
from citeline.core.documents import Chunk, Hit

GUIDE = (
    "Citeline reads Markdown, HTML and PDF files. "
    "The index is stored in a folder named .citeline inside the documents folder. "
    "Searches combine dense and keyword results."
)


def evidence(text: str = GUIDE, n: int = 1) -> Evidence:
    chunk = Chunk(f"{n}.md", "Guide", ("Guide",), text, 1, 3, None, 0)
    return Evidence(n, Hit(n, n, 0.9, chunk, dense=0.6, keyword=0.9))


def idf(terms: Sequence[str]) -> dict[str, float]:
    return dict.fromkeys(terms, 2.0)


def test_the_unit_that_answers_comes_first() -> None:
    scored = UnitScorer(idf).score(
        "Where is the index stored?", [evidence()], cjk=False, use_dense=False
    )
    assert scored.units[0].unit.text.startswith("The index is stored")
    assert [s.logit for s in scored.units] == sorted((s.logit for s in scored.units), reverse=True)
    assert 0.0 <= scored.answerable <= 1.0


def test_the_best_units_are_embedded_in_one_batch_and_reordered() -> None:
    batches: list[int] = []
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(30))

    def embed(texts: Sequence[str]) -> np.ndarray:
        batches.append(len(texts))
        # the last sentence looks like the question to the "embedder"
        return np.array([[1.0, 0.0] if "29" in t else [0.0, 1.0] for t in texts], np.float32)

    scorer = UnitScorer(idf, embed_texts=embed, embed_query=lambda q: np.array([1.0, 0.0]))
    scored = scorer.score("What about topic 29?", [evidence(text)], cjk=False, use_dense=True)
    assert batches[0] == DENSE_CANDIDATES  # then the best sections' headings
    assert "29" in scored.units[0].unit.text
    assert len(scored.units[0].features) == len(scored.units[-1].features) + 1  # the cosine
    lexical_only = UnitScorer(idf, embed_texts=embed).score(  # no query embedder
        "What about topic 29?", [evidence(text)], cjk=False, use_dense=True
    )
    assert len(batches) == 2  # nothing embedded the second time
    assert {len(s.features) for s in lexical_only.units} == {len(FEATURES)}


def test_an_identifier_the_index_never_contains_lowers_answerability() -> None:
    question = "Where is core.indexPath stored?"
    known = UnitScorer(idf, unknown_terms=lambda terms: set())
    unknown = UnitScorer(idf, unknown_terms=lambda terms: set(terms))
    a = known.score(question, [evidence()], cjk=False, use_dense=False)
    b = unknown.score(question, [evidence()], cjk=False, use_dense=False)
    assert b.answerable < a.answerable


def test_no_units_no_answer() -> None:
    scored = UnitScorer(idf).score("Anything?", [evidence("")], cjk=False, use_dense=False)
    assert scored.units == [] and not scored.answered


def test_missing_terms_are_the_identifiers_and_names_no_document_contains() -> None:
    index = {"index", "store", "deborphan", "coresshcommand", "neovim"}

    def unknown(terms: Sequence[str]) -> set[str]:
        return {t for t in terms if t not in index}

    everyday = {"where", "is", "the", "index", "stored", "run", "how", "do", "i", "use", "it"}

    def tokens(word: str) -> int:  # everyday words are one token, jargon several
        return 1 if word in everyday else 3

    scorer = UnitScorer(idf, unknown_terms=unknown, count_tokens=tokens)
    assert scorer.missing_terms("Where is the index stored?", cjk=False) == []
    assert scorer.missing_terms("How do I use it from Neovim?", cjk=False) == []
    assert scorer.missing_terms("How do I use it from Flathub?", cjk=False) == ["Flathub"]
    # a lower-case word the tokenizer splits may be an inflection: the scorer weighs it
    assert scorer.missing_terms("How do I run checkbashisms?", cjk=False) == []
    assert scorer.missing_terms("Checkbashisms: how do I run it?", cjk=False) == []
    assert scorer.missing_terms("Where is core.sshCommand stored?", cjk=False) == []
    assert scorer.missing_terms("Where is core.indexPath stored?", cjk=False) == ["coreindexpath"]
    # two capitals are a unit or short form the documents may spell out
    assert scorer.missing_terms("Skip files bigger than a GB", cjk=False) == []
    # in a Chinese question only identifiers count (its words are not the tokenizer's)
    assert scorer.missing_terms("Flathub 怎么用？", cjk=True) == []
    assert scorer.missing_terms("SHA-999 是什么？", cjk=True) == ["sha999"]
    assert scorer.missing_terms("1998年世界杯的冠军是哪支球队？", cjk=True) == []
    assert UnitScorer(idf).missing_terms("Where is core.indexPath stored?", cjk=False) == []


def test_a_keyword_only_cjk_question_misses_the_terms_no_document_holds() -> None:
    index = {"规则", "什么", "备份", "文件", "件夹", "restic", "s3"}

    def unknown(terms: Sequence[str]) -> set[str]:
        return {t for t in terms if t not in index}

    scorer = UnitScorer(idf, unknown_terms=unknown)
    # read by keywords alone: "板球" (one of its two content terms) occurs nowhere
    assert scorer.missing_terms("板球的规则是什么？", cjk=True, keyword_only=True) == ["板球"]
    # a term is missing only when none of its bigrams occurs ("文件夹" has "文件")
    assert scorer.missing_terms("怎么备份文件夹？", cjk=True, keyword_only=True) == []
    # fewer than half missing: the scorer weighs it ("Glacier" of four terms)
    question = "restic 能备份到 S3 Glacier 吗"
    assert scorer.missing_terms(question, cjk=True, keyword_only=True) == []
    # an embedder that reads Chinese matches by meaning: only identifiers count then
    assert scorer.missing_terms("板球的规则是什么？", cjk=True) == []


def section_evidence(text: str, n: int, heading: str) -> Evidence:
    chunk = Chunk("guide.md", "Guide", ("Guide", heading), text, n, n + 1, None, n)
    return Evidence(n, Hit(n, n, 0.9, chunk, dense=0.6, keyword=0.9))


def test_the_question_is_compared_with_the_headings_of_the_best_sections() -> None:
    blocks = [
        section_evidence("Run pip install citeline.", 1, "Installing"),
        section_evidence("The index is kept in a folder.", 2, "Where the index lives"),
    ]
    batches: list[list[str]] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        batches.append(list(texts))
        return np.array([[1.0, 0.0] if "nstall" in t else [0.0, 1.0] for t in texts], np.float32)

    scorer = UnitScorer(idf, embed_texts=embed, embed_query=lambda q: np.array([1.0, 0.0]))
    scored = scorer.score("how do I install it", blocks, cjk=False, use_dense=True)
    q = dict(zip(QUESTION_FEATURES, scored.question_features, strict=True))
    assert batches[-1] == ["Installing", "Where the index lives"]  # one batch, each once
    assert q["heading_cosine"] == 1.0 and q["best_cosine"] == 1.0
    assert q["best_rank"] == 1.0  # the best unit is in retrieval's first passage
    lexical = UnitScorer(idf).score("how do I install it", blocks, cjk=False, use_dense=False)
    q = dict(zip(QUESTION_FEATURES, lexical.question_features, strict=True))
    assert (q["heading_cosine"], q["best_cosine"]) == (0.0, 0.0)  # nothing embedded


def test_the_best_units_block_rank_weighs_for_answering() -> None:
    # the answering passage third in retrieval's order rather than first
    chunk = section_evidence("Run pip install citeline.", 1, "Installing").hit.chunk
    first = [Evidence(1, Hit(1, 1, 0.9, chunk, dense=0.6, keyword=0.9))]
    third = [Evidence(1, Hit(3, 3, 0.9, chunk, dense=0.6, keyword=0.9))]
    a = UnitScorer(idf).score("how do I install citeline", first, cjk=False, use_dense=False)
    b = UnitScorer(idf).score("how do I install citeline", third, cjk=False, use_dense=False)
    rank = QUESTION_FEATURES.index("best_rank")
    assert (a.question_features[rank], b.question_features[rank]) == (1.0, 1 / 3)
    assert ENGLISH.answerable.weights[rank] > 0 and a.answerable > b.answerable


def test_an_identifier_no_unit_of_the_evidence_holds_is_unseen() -> None:
    # the index holds ``core.compression`` somewhere, but not in the passages found
    question = "What level does core.compression set?"
    scored = UnitScorer(idf, unknown_terms=lambda terms: set()).score(
        question, [evidence()], cjk=False, use_dense=False
    )
    q = dict(zip(QUESTION_FEATURES, scored.question_features, strict=True))
    assert q["unseen_identifier"] == 1.0 and q["absent"] == 0.0
    held = UnitScorer(idf).score(
        "Where is core.compression set?",
        [evidence("Set core.compression to a level from 0 to 9.")],
        cjk=False,
        use_dense=False,
    )
    q = dict(zip(QUESTION_FEATURES, held.question_features, strict=True))
    assert q["unseen_identifier"] == 0.0
    plain = UnitScorer(idf).score("Where is the index?", [evidence()], cjk=False, use_dense=False)
    assert (
        dict(zip(QUESTION_FEATURES, plain.question_features, strict=True))["unseen_identifier"]
        == 0.0
    )  # it names no identifier


def test_the_share_of_the_question_no_chunk_of_the_index_holds() -> None:
    index = {"where", "index", "store"}

    def unknown(terms: Sequence[str]) -> set[str]:
        return {t for t in terms if t not in index}

    def weights(terms: Sequence[str]) -> dict[str, float]:
        return {t: 1.0 if t in index else 3.0 for t in terms}  # absent terms are rarest

    scorer = UnitScorer(weights, unknown_terms=unknown)
    known = scorer.score("Where is the index stored?", [evidence()], cjk=False, use_dense=False)
    swap = scorer.score("Where is the swappiness stored?", [evidence()], cjk=False, use_dense=False)
    absent = QUESTION_FEATURES.index("absent")
    assert known.question_features[absent] == 0.0
    assert swap.question_features[absent] == 3.0 / (1.0 + 3.0 + 1.0)  # "where", "store": 1
    # without the index's terms (a scorer built without ``unknown_terms``) nothing is absent
    assert (
        UnitScorer(weights)
        .score("Where is the swappiness stored?", [evidence()], cjk=False, use_dense=False)
        .question_features[absent]
        == 0.0
    )
