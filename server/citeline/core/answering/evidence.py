"""Which hits are evidence, how they are labelled, and the texts that list them.

A hit is evidence when it is strong on an absolute scale (``is_evidence``), or,
when none is, when the hits are moderately close in both meaning and words
(``evidence_hits``); ``select_evidence`` drops near-duplicates of the evidence
and packs it whole into a token budget in rank order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from citeline.core.answering.language import message
from citeline.core.answering.results import Evidence
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Hit
from citeline.core.scripts import CJK_RUN

_WORD = re.compile(r"\w+", re.UNICODE)


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if any(CJK_RUN.match(w) for w in words):  # CJK runs: character trigrams
        chars = [c for c in text if not c.isspace()]
        return {tuple(chars[i : i + 3]) for i in range(max(len(chars) - 2, 1))}
    return {tuple(words[i : i + 3]) for i in range(max(len(words) - 2, 1))}


def _overlaps(a: Hit, b: Hit, threshold: float) -> bool:
    if a.chunk.path != b.chunk.path:
        return a.chunk.text == b.chunk.text
    sa, sb = _shingles(a.chunk.text), _shingles(b.chunk.text)
    small = min(len(sa), len(sb))
    return small > 0 and len(sa & sb) / small >= threshold


def evidence_label(hit: Hit, language: str) -> str:
    c = hit.chunk
    parts = [c.path]
    if c.section:
        parts.append(f"§ {c.section}")
    if c.page is not None:
        parts.append(
            message(language, "page").format(n=c.page) if language == "zh" else f"page {c.page}"
        )
    elif c.start_line is not None:
        lines = message(language, "lines")
        parts.append(
            f"{c.start_line}-{c.end_line}{lines}"
            if language == "zh"
            else f"{lines} {c.start_line}-{c.end_line}"
        )
    return ", ".join(parts)


def evidence_block(n: int, hit: Hit, language: str) -> str:
    return f"[{n}] {evidence_label(hit, language)}\n{hit.chunk.text.strip()}"


def is_evidence(hit: Hit, settings: AnswerSettings, cjk: bool = False) -> bool:
    """Strong enough, on an absolute scale, to answer a question from.

    ``cjk``: the question is Chinese, Japanese or Korean (its keyword threshold
    differs, see ``AnswerSettings``).
    """
    dense = _dense(hit)
    if dense is not None and dense >= settings.min_score:
        return True
    threshold = settings.min_keyword_score_cjk if cjk else settings.min_keyword_score
    return hit.keyword is not None and hit.keyword >= threshold


def _dense(hit: Hit) -> float | None:
    return hit.dense if hit.dense is not None else (hit.score if hit.keyword is None else None)


def evidence_hits(hits: Sequence[Hit], settings: AnswerSettings, cjk: bool = False) -> list[Hit]:
    """The hits to answer from; none when the documents are off the question's topic.

    Hits strong on their own (``is_evidence``); and when the hits are moderately
    close both in meaning and in words (``min_joint_score`` and
    ``min_joint_keyword_score``, together ``min_joint_total``, not necessarily in
    one hit: a short everyday
    question shares few words and little meaning with any one passage), every
    hit that reaches either of those too, in rank order.  (A passage that quotes
    the question itself, an example command, is strong in words alone; the
    section that answers may be only moderately close.)  Once one hit is
    evidence, so is every hit retrieval ranks above it: the fused ranking put
    them first ("how do I install it": the Installing section ranks first and is
    only moderately close; an example further down quotes a question).
    """
    strong = [is_evidence(h, settings, cjk) for h in hits]
    dense = [d for h in hits if (d := _dense(h)) is not None]
    keyword = [h.keyword for h in hits if h.keyword is not None]
    joint = (
        bool(dense)
        and bool(keyword)
        and max(dense) >= settings.min_joint_score
        and max(keyword) >= settings.min_joint_keyword_score
        and max(dense) + max(keyword) >= settings.min_joint_total
    )
    kept = [
        alone
        or (
            joint
            and (
                (_dense(h) or 0.0) >= settings.min_joint_score
                or (h.keyword or 0.0) >= settings.min_joint_keyword_score
            )
        )
        for h, alone in zip(hits, strong, strict=True)
    ]
    if any(kept):  # on the topic: what retrieval ranks above the first evidence is evidence
        first = kept.index(True)
        kept = [k or i < first for i, k in enumerate(kept)]
    return [h for h, k in zip(hits, kept, strict=True) if k]


def distinct_evidence(hits: Sequence[Hit], settings: AnswerSettings) -> list[Evidence]:
    """``hits`` (already evidence) without near-duplicates, numbered in rank order."""
    chosen: list[Hit] = []
    for hit in hits:
        if not any(_overlaps(hit, other, settings.overlap) for other in chosen):
            chosen.append(hit)
    return [Evidence(n, hit) for n, hit in enumerate(chosen, start=1)]


def select_evidence(
    hits: Sequence[Hit],
    settings: AnswerSettings,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    language: str = "en",
) -> list[Evidence]:
    """The evidence (``evidence_hits``) without near-duplicates, packed into the budget."""
    chosen: list[Hit] = []
    used = 0
    for hit in hits:
        if len(chosen) >= settings.max_evidence:
            break
        if any(_overlaps(hit, other, settings.overlap) for other in chosen):
            continue
        cost = count_tokens(evidence_block(len(chosen) + 1, hit, language)) + 2
        if used + cost > budget_tokens:
            continue  # left out whole; a smaller later block may still fit
        chosen.append(hit)
        used += cost
    return [Evidence(n, hit) for n, hit in enumerate(chosen, start=1)]


def _strength(hit: Hit) -> float:
    return max(x for x in (hit.dense, hit.keyword, hit.score) if x is not None)


def refusal_text(hits: Sequence[Hit], language: str, nearest: int = 3) -> str:
    lines = [message(language, "refusal")]
    if hits:
        lines.append("")
        lines.append(message(language, "nearest"))
        for hit in hits[:nearest]:
            lines.append(f"- {evidence_label(hit, language)} ({_strength(hit):.2f})")
    return "\n".join(lines)
