"""Which hits are evidence, how they are packed and listed."""

from citeline.core.answering.evidence import (
    distinct_evidence,
    evidence_block,
    evidence_hits,
    is_evidence,
    refusal_text,
    select_evidence,
)
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Chunk, Hit


def hit(n: int, text: str, score: float, path: str = "a.md", line: int = 1) -> Hit:
    chunk = Chunk(path, "Guide", ("Guide", "Install"), text, line, line + 2, None, n)
    return Hit(chunk_id=n, rank=n, score=score, chunk=chunk)


def words(text: str) -> int:
    return len(text.split())


def test_evidence_threshold_dedupe_and_whole_block_packing() -> None:
    long_text = " ".join(["filler"] * 80)
    hits = [
        hit(1, "The index lives in the .citeline folder inside the documents folder.", 0.8),
        hit(2, "The index lives in the .citeline folder inside the documents folder, always.", 0.7),
        hit(3, long_text, 0.6, path="b.md"),
        hit(4, "Renaming a file embeds nothing.", 0.5, path="c.md"),
    ]
    settings = AnswerSettings(min_score=0.3, max_evidence=4)
    evidence = select_evidence(hits, settings, budget_tokens=60, count_tokens=words)
    # 2 overlaps 1; 3 does not fit the budget and is left out whole; 4 still fits
    assert [e.hit.chunk_id for e in evidence] == [1, 4]
    assert [e.n for e in evidence] == [1, 2]
    used = sum(words(evidence_block(e.n, e.hit, "en")) + 2 for e in evidence)
    assert used <= 60


def test_hits_are_evidence_when_close_in_meaning_in_words_or_moderately_in_both() -> None:
    chunk = hit(1, "Neovim starts the server with vim.lsp.start.", 0.0).chunk
    settings = AnswerSettings()

    def scored(dense: float | None, keyword: float | None, n: int = 1) -> Hit:
        return Hit(n, n, 0.0, chunk, dense=dense, keyword=keyword)

    assert is_evidence(scored(0.45, 0.0), settings) and is_evidence(scored(0.1, 0.75), settings)
    assert not is_evidence(scored(None, 0.6), settings)
    assert is_evidence(scored(None, 0.2), settings, cjk=True)  # keyword only, CJK threshold
    strong, weak = scored(0.45, 0.1, 1), scored(0.31, 0.2, 2)
    assert evidence_hits([strong, weak], settings) == [strong]  # moderate in meaning only
    # what retrieval ranks above the first evidence is evidence too (on the topic)
    above = scored(0.2, 0.3, 1)
    assert evidence_hits([above, strong, weak], settings) == [above, strong]
    # "how do I install it": the Installing section is moderately close in both; a
    # passage quoting a question in an example command is strong in words alone
    installing, example = scored(0.32, 0.54, 1), scored(0.05, 0.71, 2)
    assert evidence_hits([installing, example], settings) == [installing, example]
    # "What file types are supported?": no hit strong, but close in meaning (0.33) and
    # in words (0.58), each in another hit; both are evidence, a weak third is not
    meaning, words, neither = scored(0.33, 0.2, 1), scored(0.25, 0.58, 2), scored(0.2, 0.3, 3)
    assert evidence_hits([meaning, words, neither], settings) == [meaning, words]
    # off the topic: moderate in one only, or barely in both ("How many strings does
    # a standard violin have?" over the manuals: 0.31 and 0.50)
    assert evidence_hits([scored(0.38, 0.3), scored(0.2, 0.43, 2)], settings) == []
    assert evidence_hits([scored(0.31, 0.2), scored(0.2, 0.5, 2)], settings) == []
    assert evidence_hits([scored(0.2, 0.6)], settings) == []
    assert evidence_hits([scored(None, None)], settings) == []


def test_max_evidence_respected() -> None:
    hits = [
        hit(i, f"distinct passage number {i} about topic {i * 7}", 0.9, path=f"{i}.md")
        for i in range(1, 9)
    ]
    evidence = select_evidence(hits, AnswerSettings(max_evidence=3), 10_000, words)
    assert [e.n for e in evidence] == [1, 2, 3]


def test_distinct_evidence_drops_near_duplicates_and_numbers_in_rank_order() -> None:
    hits = [
        hit(1, "The index lives in the .citeline folder inside the documents folder.", 0.8),
        hit(2, "The index lives in the .citeline folder inside the documents folder, always.", 0.7),
        hit(3, "Renaming a file embeds nothing.", 0.5, path="c.md"),
    ]
    evidence = distinct_evidence(hits, AnswerSettings())
    assert [(e.n, e.hit.chunk_id) for e in evidence] == [(1, 1), (2, 3)]


def test_refusal_text_names_the_nearest_passages() -> None:
    text = refusal_text([hit(1, "x", 0.21)], "zh")
    assert text.startswith("文档中没有这个问题的答案。")
    assert "a.md" in text and "0.21" in text
    assert refusal_text([], "en") == "The documents do not contain the answer to this question."
