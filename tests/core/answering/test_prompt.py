"""The generator's prompt."""

from citeline.core.answering.evidence import select_evidence
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Chunk, Hit


def hit(n: int, text: str, score: float, path: str = "a.md", line: int = 1) -> Hit:
    chunk = Chunk(path, "Guide", ("Guide", "Install"), text, line, line + 2, None, n)
    return Hit(chunk_id=n, rank=n, score=score, chunk=chunk)


def words(text: str) -> int:
    return len(text.split())


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
