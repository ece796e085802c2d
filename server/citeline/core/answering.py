"""From a question and its hits to a cited answer.

The steps, each a small function so it can be tested alone:

1. ``select_evidence``: hits above the score threshold, near-duplicates removed,
   packed whole into a token budget in rank order (a block that does not fit is
   left out, never cut).
2. ``build_messages``: numbered evidence blocks labelled with their source, and
   instructions to use only them, cite them as [n], say when they do not hold the
   answer, and answer in the question's language.
3. generation, streamed through ``CitationFilter``, which drops markers that
   point at no evidence as the text flows.
4. ``make_answer``: citations built by the program from the evidence the model's
   markers point at; the evidence list when it cited nothing; refusal when the
   model says it cannot answer.

When no hit clears the threshold the generator is never called: the answer is a
refusal, in the question's language, with the nearest passages and their scores.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from citeline.core import keywords
from citeline.core.documents import Hit
from citeline.core.generation import Generator

# -- settings ------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerSettings:
    candidates: int = 8  # hits retrieved before filtering
    # A hit counts as evidence when its cosine similarity reaches min_score or its
    # normalised BM25 score reaches min_keyword_score (see citeline.core.documents.Hit).
    # Calibrated on SciFact train and CMRC 2018 trial (docs/quality.md).  CJK
    # questions are cut into character bigrams, many of which (question words,
    # bigrams across word boundaries) never occur in the answer, so their
    # normalised keyword scores run lower.
    min_score: float = 0.4
    min_keyword_score: float = 0.7
    min_keyword_score_cjk: float = 0.3
    max_evidence: int = 4
    max_answer_tokens: int = 256
    temperature: float = 0.1
    timeout_seconds: float = 60.0
    overlap: float = 0.6  # share of a block's word trigrams found in a better one


# -- language ------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


def detect_language(text: str) -> str:
    """ "zh", "ja", "ko" or "en": enough to answer and refuse in the asker's language."""
    if _KANA.search(text):
        return "ja"
    if _HANGUL.search(text):
        return "ko"
    return "zh" if keywords.is_cjk(text) else "en"


CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})


LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean"}

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "refusal": "The documents do not contain the answer to this question.",
        "nearest": "Nearest passages (none was close enough to answer from):",
        "uncited": "The answer did not cite its evidence; these are the passages it was given:",
        "timeout": "No answer was generated in time; here is the evidence that was found:",
        "cancelled": "Cancelled; here is the evidence that was found:",
        "model_refused": "The model could not answer from the evidence.",
        "page": "page",
        "lines": "lines",
    },
    "zh": {
        "refusal": "文档中没有这个问题的答案。",
        "nearest": "最接近的段落（都不足以回答这个问题）：",
        "uncited": "回答没有标注出处；以下是提供给模型的段落：",
        "timeout": "未能及时生成回答；以下是找到的证据：",
        "cancelled": "已取消；以下是找到的证据：",
        "model_refused": "模型无法根据这些证据回答。",
        "page": "第{n}页",
        "lines": "行",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES.get(language, MESSAGES["en"])[key]


# -- results -------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    n: int
    hit: Hit


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: int
    path: str
    title: str
    section: str
    page: int | None
    start_line: int | None
    end_line: int | None
    score: float
    cited: bool  # False: listed because the answer cited nothing, or no answer was made

    def to_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "path": self.path,
            "title": self.title,
            "section": self.section,
            "page": self.page,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "cited": self.cited,
        }


@dataclass
class Answer:
    question: str
    language: str
    text: str
    refused: bool
    generator_called: bool
    citations: list[Citation]
    hits: list[Hit]
    evidence: list[Evidence]
    prompt: list[dict[str, str]] = field(default_factory=list)
    degraded: str | None = None  # "timeout", "cancelled", "uncited"
    timings: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "question": self.question,
            "language": self.language,
            "answer": self.text,
            "refused": self.refused,
            "generator_called": self.generator_called,
            "degraded": self.degraded,
            "citations": [c.to_json() for c in self.citations],
            "hits": [h.to_json() for h in self.hits],
            "timings": {k: (None if v is None else round(v, 4)) for k, v in self.timings.items()},
        }


# -- evidence ------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    if any(_CJK.match(w) for w in words):  # CJK runs: character trigrams
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
    dense = hit.dense if hit.dense is not None else (hit.score if hit.keyword is None else None)
    if dense is not None and dense >= settings.min_score:
        return True
    threshold = settings.min_keyword_score_cjk if cjk else settings.min_keyword_score
    return hit.keyword is not None and hit.keyword >= threshold


def select_evidence(
    hits: Sequence[Hit],
    settings: AnswerSettings,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    language: str = "en",
) -> list[Evidence]:
    """Hits that clear the threshold, without near-duplicates, packed into the budget."""
    chosen: list[Hit] = []
    used = 0
    for hit in hits:
        cjk = language in CJK_LANGUAGES
        if not is_evidence(hit, settings, cjk) or len(chosen) >= settings.max_evidence:
            continue
        if any(_overlaps(hit, other, settings.overlap) for other in chosen):
            continue
        cost = count_tokens(evidence_block(len(chosen) + 1, hit, language)) + 2
        if used + cost > budget_tokens:
            continue  # left out whole; a smaller later block may still fit
        chosen.append(hit)
        used += cost
    return [Evidence(n, hit) for n, hit in enumerate(chosen, start=1)]


# -- prompt --------------------------------------------------------------------

REFUSAL_SENTENCE = "The documents do not contain the answer."

_SYSTEM = (
    "You answer questions using only the numbered evidence the user gives you. "
    "After each sentence, write the number of the evidence it comes from in square "
    "brackets, like [1]. Do not use anything you know that is not in the evidence. "
    "If the evidence does not contain the answer, reply only: {refusal} "
    "Answer in {language}, briefly."
)


def build_messages(
    question: str, evidence: Sequence[Evidence], language: str
) -> list[dict[str, str]]:
    blocks = "\n\n".join(evidence_block(e.n, e.hit, language) for e in evidence)
    system = _SYSTEM.format(
        refusal=REFUSAL_SENTENCE, language=LANGUAGE_NAMES.get(language, "English")
    )
    user = f"Evidence:\n\n{blocks}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# -- citations -----------------------------------------------------------------

_MARKER = re.compile(r"\[(\d{1,3})\]")
_REFUSAL_PATTERNS = re.compile(
    r"(do(es)? not contain the answer|cannot answer|can't answer|unable to answer|"
    r"no information|not (mentioned|provided|specified) in the evidence|"
    r"没有.{0,6}答案|无法回答|不能回答|没有提到|未提及|没有相关)",
    re.IGNORECASE,
)


class CitationFilter:
    """Passes streamed text through, dropping [n] markers that point at no evidence.

    A "[" followed by digits is held back until it is known to be a marker.
    """

    def __init__(self, valid: set[int]) -> None:
        self.valid = valid
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        out: list[str] = []
        i = 0
        while i < len(text):
            start = text.find("[", i)
            if start == -1:
                out.append(text[i:])
                break
            out.append(text[i:start])
            match = re.match(r"\[(\d{0,3})(\]?)", text[start:])
            assert match is not None
            digits, closed = match.group(1), match.group(2)
            end = start + match.end()
            if end == len(text) and not closed:  # might be a marker still arriving
                self._held = text[start:]
                break
            if closed and digits:
                if int(digits) in self.valid:
                    out.append(text[start:end])
                # else: dropped
                i = end
            else:
                out.append(text[start:end])
                i = end
        return "".join(out)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def clean_answer_text(text: str) -> str:
    """Tidy spaces left where markers were dropped."""
    text = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def cited_numbers(text: str) -> list[int]:
    seen: list[int] = []
    for match in _MARKER.finditer(text):
        n = int(match.group(1))
        if n not in seen:
            seen.append(n)
    return seen


def is_refusal(text: str) -> bool:
    """The model said the evidence does not hold the answer (and said little else)."""
    head = text.strip()[:200]
    return bool(_REFUSAL_PATTERNS.search(head)) and not _MARKER.search(head)


def citation_for(e: Evidence, cited: bool) -> Citation:
    c = e.hit.chunk
    return Citation(
        n=e.n,
        chunk_id=e.hit.chunk_id,
        path=c.path,
        title=c.title,
        section=c.section,
        page=c.page,
        start_line=c.start_line,
        end_line=c.end_line,
        score=e.hit.score,
        cited=cited,
    )


def evidence_list_text(evidence: Sequence[Evidence], language: str, header_key: str) -> str:
    lines = [message(language, header_key)]
    for e in evidence:
        snippet = " ".join(e.hit.chunk.text.split())
        snippet = snippet[:200] + ("…" if len(snippet) > 200 else "")
        lines.append(
            f"[{e.n}] {evidence_label(e.hit, language)} ({_strength(e.hit):.2f}): {snippet}"
        )
    return "\n".join(lines)


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


# -- the whole ask -------------------------------------------------------------


@dataclass
class AskContext:
    """What one ask needs besides the question: retrieval, generator, settings, hooks."""

    retrieve: Callable[[str, int], list[Hit]]
    generator: Callable[[], Generator]  # loaded lazily: a refusal never loads the model
    settings: AnswerSettings
    on_token: Callable[[str], None] | None = None
    cancelled: Callable[[], bool] | None = None
    clock: Callable[[], float] = time.perf_counter


def ask(question: str, ctx: AskContext) -> Answer:
    settings = ctx.settings
    language = detect_language(question)
    t0 = ctx.clock()
    hits = ctx.retrieve(question, settings.candidates)
    t_retrieved = ctx.clock()
    timings: dict[str, float | None] = {"retrieval": t_retrieved - t0, "first_token": None}
    above = [h for h in hits if is_evidence(h, settings, language in CJK_LANGUAGES)]
    if not above:
        timings["total"] = ctx.clock() - t0
        text = refusal_text(hits, language)
        if ctx.on_token:
            ctx.on_token(text)
        return Answer(question, language, text, True, False, [], hits, [], timings=timings)

    generator = ctx.generator()
    messages_probe = build_messages(question, [], language)
    overhead = generator.count_tokens("\n".join(m["content"] for m in messages_probe)) + 64
    budget = generator.context_size - overhead - settings.max_answer_tokens
    evidence = select_evidence(above, settings, budget, generator.count_tokens, language)
    if not evidence:  # nothing fits the context: say so rather than guess
        timings["total"] = ctx.clock() - t0
        text = refusal_text(hits, language)
        return Answer(question, language, text, True, False, [], hits, [], timings=timings)
    messages = build_messages(question, evidence, language)
    valid = {e.n for e in evidence}
    citation_filter = CitationFilter(valid)
    deadline = t_retrieved + settings.timeout_seconds
    stopped: list[str] = []

    def should_stop() -> bool:
        if ctx.cancelled is not None and ctx.cancelled():
            stopped.append("cancelled")
            return True
        if ctx.clock() > deadline:
            stopped.append("timeout")
            return True
        return False

    pieces: list[str] = []
    for piece in generator.stream_chat(
        messages,
        max_tokens=settings.max_answer_tokens,
        temperature=settings.temperature,
        should_stop=should_stop,
    ):
        if timings["first_token"] is None:
            timings["first_token"] = ctx.clock() - t0
        out = citation_filter.feed(piece)
        if out:
            pieces.append(out)
            if ctx.on_token:
                ctx.on_token(out)
    tail = citation_filter.flush()
    if tail:
        pieces.append(tail)
        if ctx.on_token:
            ctx.on_token(tail)
    raw = "".join(pieces)
    text = clean_answer_text(raw)
    timings["total"] = ctx.clock() - t0

    def evidence_answer(body: str, reason: str) -> Answer:
        """The evidence list as (part of) the answer, every block an uncited citation."""
        listing = evidence_list_text(evidence, language, reason)
        if ctx.on_token:
            ctx.on_token("\n\n" + listing)
        return Answer(
            question,
            language,
            f"{body}\n\n{listing}" if body else listing,
            False,
            True,
            [citation_for(e, cited=False) for e in evidence],
            hits,
            evidence,
            prompt=messages,
            degraded=reason,
            timings=timings,
        )

    if stopped:  # timeout or cancelled: what was written, then the evidence
        return evidence_answer(text, stopped[0])
    if is_refusal(text) or not text:
        refusal = message(language, "model_refused") if text else message(language, "refusal")
        return Answer(
            question,
            language,
            text or refusal,
            True,
            True,
            [],
            hits,
            evidence,
            prompt=messages,
            timings=timings,
        )
    numbers = [n for n in cited_numbers(text) if n in valid]
    by_n = {e.n: e for e in evidence}
    if numbers:
        citations = [citation_for(by_n[n], cited=True) for n in numbers]
        return Answer(
            question,
            language,
            text,
            False,
            True,
            citations,
            hits,
            evidence,
            prompt=messages,
            timings=timings,
        )
    return evidence_answer(text, "uncited")
