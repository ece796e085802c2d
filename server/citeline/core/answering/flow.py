"""The ask flow: from a question to a cited answer.

1. retrieve, and keep the hits that are evidence (``evidence.is_evidence``); with
   none, refuse without calling the generator, naming the nearest passages;
2. ``evidence.select_evidence``: whole blocks, no near-duplicates, in a budget;
3. ``prompt.build_messages`` and generation, streamed through
   ``citations.CitationFilter`` (markers to unknown evidence dropped as they flow);
4. citations built by the program from the evidence the markers point at; the
   evidence list when the model cited nothing; a refusal when it said it cannot
   answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from citeline.core.answering.citations import (
    CitationFilter,
    cited_numbers,
    clean_answer_text,
    is_refusal,
)
from citeline.core.answering.evidence import (
    evidence_list_text,
    is_evidence,
    refusal_text,
    select_evidence,
)
from citeline.core.answering.language import message
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.results import Answer, citation_for
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Hit
from citeline.core.generation import Generator
from citeline.core.scripts import CJK_LANGUAGES, detect_language


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
