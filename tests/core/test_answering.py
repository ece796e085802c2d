"""Unit tests of the answer stage's pure parts.  The real-model tests are in
tests/core/test_answering_real.py."""

from citeline.core.answering.citations import (
    CitationFilter,
    cited_numbers,
    clean_answer_text,
    is_refusal,
)
from citeline.core.answering.evidence import evidence_block, refusal_text, select_evidence
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Chunk, Hit
from citeline.core.scripts import detect_language


def hit(n: int, text: str, score: float, path: str = "a.md", line: int = 1) -> Hit:
    chunk = Chunk(path, "Guide", ("Guide", "Install"), text, line, line + 2, None, n)
    return Hit(chunk_id=n, rank=n, score=score, chunk=chunk)


def words(text: str) -> int:
    return len(text.split())


def test_language_detection() -> None:
    assert detect_language("How do I rebuild the index?") == "en"
    assert detect_language("索引保存在哪里？") == "zh"
    assert detect_language("Citeline 的索引保存在哪里？") == "zh"
    assert detect_language("インデックスはどこ？") == "ja"
    assert detect_language("색인은 어디에 있나요?") == "ko"


def test_evidence_threshold_dedupe_and_whole_block_packing() -> None:
    long_text = " ".join(["filler"] * 80)
    hits = [
        hit(1, "The index lives in the .citeline folder inside the documents folder.", 0.8),
        hit(2, "The index lives in the .citeline folder inside the documents folder, always.", 0.7),
        hit(3, long_text, 0.6, path="b.md"),
        hit(4, "Renaming a file embeds nothing.", 0.5, path="c.md"),
        hit(5, "Below threshold.", 0.1, path="d.md"),
    ]
    settings = AnswerSettings(min_score=0.3, max_evidence=4)
    evidence = select_evidence(hits, settings, budget_tokens=60, count_tokens=words)
    # 2 overlaps 1; 3 does not fit the budget and is left out whole; 4 still fits; 5 is too weak
    assert [e.hit.chunk_id for e in evidence] == [1, 4]
    assert [e.n for e in evidence] == [1, 2]
    used = sum(words(evidence_block(e.n, e.hit, "en")) + 2 for e in evidence)
    assert used <= 60


def test_max_evidence_respected() -> None:
    hits = [
        hit(i, f"distinct passage number {i} about topic {i * 7}", 0.9, path=f"{i}.md")
        for i in range(1, 9)
    ]
    evidence = select_evidence(hits, AnswerSettings(max_evidence=3), 10_000, words)
    assert [e.n for e in evidence] == [1, 2, 3]


def test_prompt_numbers_and_labels_evidence_and_states_the_rules() -> None:
    hits = [hit(1, "Alpha text.", 0.9), hit(2, "Beta text.", 0.8, path="m.pdf")]
    pdf = Hit(2, 2, 0.8, Chunk("m.pdf", "Manual", ("Setup",), "Beta text.", None, None, 4, 0))
    evidence = select_evidence([hits[0], pdf], AnswerSettings(), 1000, words)
    system, user = build_messages("What is alpha?", evidence, "en")
    assert system["role"] == "system" and user["role"] == "user"
    assert "only the numbered evidence" in system["content"]
    assert "like [1]" in system["content"]
    assert "The documents do not contain the answer." in system["content"]
    assert "English" in system["content"]
    assert "[1] a.md, § Guide > Install, lines 1-3\nAlpha text." in user["content"]
    assert "[2] m.pdf, § Setup, page 4\nBeta text." in user["content"]
    assert user["content"].endswith("Question: What is alpha?")
    zh_system, zh_user = build_messages("索引在哪里？", evidence, "zh")
    assert "Chinese" in zh_system["content"]
    assert "第4页" in zh_user["content"]


def test_citation_filter_drops_unknown_markers_even_split_across_pieces() -> None:
    f = CitationFilter({1, 2, 3})
    pieces = ["The index is local [", "1] and fast [7", "]. See [2][", "9]. A [note] stays", " [3"]
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "The index is local [1] and fast . See [2]. A [note] stays [3"
    assert clean_answer_text("fast . See [2].") == "fast. See [2]."
    assert cited_numbers("a [2] b [1] c [2]") == [2, 1]


def test_refusal_detection_and_text() -> None:
    assert is_refusal("The documents do not contain the answer.")
    assert is_refusal("I cannot answer this from the evidence.")
    assert is_refusal("文档中没有这个问题的答案。")
    assert not is_refusal("The index lives in .citeline [1].")
    text = refusal_text([hit(1, "x", 0.21)], "zh")
    assert text.startswith("文档中没有这个问题的答案。")
    assert "a.md" in text and "0.21" in text
    assert refusal_text([], "en") == "The documents do not contain the answer to this question."
