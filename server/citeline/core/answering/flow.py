"""The ask flow: from a question to a cited, graded answer.

1. Retrieve, and keep the hits that are evidence (``evidence.evidence_hits``).  With
   none, the documents are off the topic: refuse at once, naming the nearest
   passages.
2. When the question hinges on a term that no document contains (an identifier
   such as ``core.sshCommand``, jargon the embedder does not know whole, or, for
   a CJK question read by keywords alone, half its content terms), refuse too: no
   passage can answer it (``scoring.UnitScorer.missing_terms``).  Evidence whose
   answerability is below the model's floor (``fitted.Models.floor``, CJK only;
   not for evidence found across languages, ``across_languages``) is
   off the topic: refused.
3. Otherwise the evidence is on the topic and the answer is made from it.  Every
   unit of the evidence is scored against the question (``scoring``), and the
   answerability model grades the answer: ``answer`` when the evidence likely
   answers the question, else ``closest`` (the nearest units, quoted and cited,
   labelled as possibly not answering).  Never a refusal: a refusal hides what
   retrieval found, and is the costliest mistake (docs/quality.md).
4. Extractive mode, and every ``closest`` answer: the chosen units, verbatim,
   each with the [n] of its block.
5. Generative mode, graded ``answer``: the generator writes from numbered
   evidence (``prompt.build_messages``), streamed through
   ``citations.CitationFilter``; then every sentence is checked against the
   evidence it cites (``verification``) and only supported sentences stay.  When
   none survives, or generation times out or is cancelled, the answer is the
   extractive one.  The generator is never called for a refusal or a ``closest``.

Citations are always built by the program from the evidence an answer's markers
point at.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from citeline.core.answering.citations import CitationFilter, clean_answer_text
from citeline.core.answering.evidence import (
    distinct_evidence,
    evidence_hits,
    refusal_text,
    select_evidence,
)
from citeline.core.answering.extractive import Extract, compose, renumber, select
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.results import (
    ANSWER,
    CLOSEST,
    REFUSED,
    Answer,
    Evidence,
    Fallback,
    Refusal,
    citation_for,
)
from citeline.core.answering.scoring import UnitScorer
from citeline.core.answering.settings import EXTRACTIVE, GENERATIVE, AnswerSettings
from citeline.core.answering.verification import Verified, VerifySettings, verify
from citeline.core.documents import Hit
from citeline.core.generation import Generator
from citeline.core.scripts import detect_language, is_cjk, is_cjk_question

__all__ = ["EXTRACTIVE", "GENERATIVE", "AskContext", "ask"]


@dataclass
class AskContext:
    """What one ask needs besides the question: retrieval, scoring, generator, hooks.

    ``mode`` is the resolved answer mode (``extractive`` or ``generative``);
    ``dense_for_cjk``: the embedder understands Chinese, Japanese and Korean.
    """

    retrieve: Callable[[str, int], list[Hit]]
    scorer: UnitScorer
    generator: Callable[[], Generator]  # loaded lazily: extractive asks never load it
    settings: AnswerSettings
    mode: str = EXTRACTIVE
    dense_for_cjk: bool = True
    verification: VerifySettings = field(default_factory=VerifySettings)
    on_token: Callable[[str], None] | None = None
    cancelled: Callable[[], bool] | None = None
    clock: Callable[[], float] = time.perf_counter


@dataclass
class _Ask:
    """One ask in progress: what every step reads and the timings they stamp."""

    question: str
    ctx: AskContext
    language: str
    t0: float
    hits: list[Hit] = field(default_factory=list)
    timings: dict[str, float | None] = field(default_factory=dict)

    def elapsed(self) -> float:
        return self.ctx.clock() - self.t0

    def emit(self, text: str) -> None:
        if self.timings.get("first_text") is None:
            self.timings["first_text"] = self.elapsed()
        if self.ctx.on_token:
            self.ctx.on_token(text)

    def finish(self, answer: Answer) -> Answer:
        self.timings["total"] = self.elapsed()
        answer.timings = self.timings
        return answer

    def refusal(self, reason: Refusal, evidence: Sequence[Evidence] = ()) -> Answer:
        """A refusal (``reason``: ``off_topic`` or ``unknown_term``) naming the
        nearest passages."""
        text = refusal_text(self.hits, self.language)
        self.emit(text)
        answer = Answer(
            self.question,
            self.language,
            text,
            True,
            False,
            [],
            self.hits,
            list(evidence),
            grade=REFUSED,
            refusal=reason,
        )
        return self.finish(answer)

    def extractive(self, extract: Extract, **extra: object) -> Answer:
        """The chosen units as the answer, cited; ``extra`` sets Answer fields."""
        extract, evidence = renumber(extract)
        text = compose(extract)
        if not extra.get("generator_called"):
            self.emit(text)
        cited = set(extract.cited)
        answer = Answer(
            self.question,
            self.language,
            text,
            False,
            bool(extra.pop("generator_called", False)),
            [citation_for(e, cited=True) for e in evidence if e.n in cited],
            self.hits,
            evidence,
            mode=EXTRACTIVE,
            confidence=extract.answerable,
            grade=ANSWER if extract.answered else CLOSEST,
        )
        for key, value in extra.items():
            setattr(answer, key, value)
        return self.finish(answer)


def ask(question: str, ctx: AskContext) -> Answer:
    settings = ctx.settings
    language = detect_language(question)
    cjk = is_cjk_question(question)
    state = _Ask(question, ctx, language, ctx.clock())
    state.hits = ctx.retrieve(question, settings.candidates)
    state.timings = {"retrieval": state.elapsed(), "first_text": None}
    above = evidence_hits(state.hits, settings, cjk)
    if not above:
        return state.refusal(Refusal.OFF_TOPIC)
    candidates = distinct_evidence(above, settings)
    use_dense = ctx.dense_for_cjk or not cjk
    if ctx.scorer.missing_terms(question, cjk=cjk, keyword_only=not use_dense):
        return state.refusal(Refusal.UNKNOWN_TERM, candidates)

    scored = ctx.scorer.score(question, candidates, cjk=cjk, use_dense=use_dense)
    if scored.off_topic and not across_languages(cjk, candidates, ctx.dense_for_cjk):
        # The CJK gate is low (bigrams match partially): passages this unlikely to
        # answer are off the topic, the model's floor (``fitted.Models.floor``).
        return state.refusal(Refusal.OFF_TOPIC, candidates)
    extract = select(scored)
    state.timings["selection"] = state.elapsed()
    if ctx.mode != GENERATIVE or not extract.answered:
        return state.extractive(extract)
    return _generate(state, above, extract)


def across_languages(cjk: bool, evidence: Sequence[Evidence], dense_for_cjk: bool) -> bool:
    """A CJK question whose evidence holds no CJK passage, read by an embedder that
    understands both (multilingual-e5-small): the evidence gate admitted it by meaning
    across languages, where the CJK floor's features (the question's characters and
    bigrams in the passage) cannot reach it, so the floor does not refuse it."""
    return cjk and dense_for_cjk and not any(is_cjk(e.hit.chunk.text) for e in evidence)


def _generate(state: _Ask, above: list[Hit], extract: Extract) -> Answer:
    ctx, settings, language = state.ctx, state.ctx.settings, state.language
    generator = ctx.generator()
    probe = build_messages(state.question, [], language)
    overhead = generator.count_tokens("\n".join(m["content"] for m in probe)) + 64
    budget = generator.context_size - overhead - settings.max_answer_tokens
    evidence = select_evidence(above, settings, budget, generator.count_tokens, language)
    if not evidence:  # nothing fits the generator's context: the evidence speaks for itself
        return state.extractive(extract, fallback=Fallback.CONTEXT)
    messages = build_messages(state.question, evidence, language)
    citation_filter = CitationFilter({e.n for e in evidence})
    deadline = state.t0 + (state.timings["retrieval"] or 0.0) + settings.timeout_seconds
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
        out = citation_filter.feed(piece)
        if out:
            pieces.append(out)
            state.emit(out)
    tail = citation_filter.flush()
    if tail:
        pieces.append(tail)
        state.emit(tail)
    if stopped:
        reason = stopped[0]
        return state.extractive(
            extract,
            generator_called=True,
            prompt=messages,
            degraded=reason,
            fallback=Fallback(reason),
        )
    checked = verify(clean_answer_text("".join(pieces)), evidence, ctx.verification)
    dropped = _dropped(checked)
    if not checked.kept:
        return state.extractive(
            extract,
            generator_called=True,
            prompt=messages,
            fallback=Fallback.UNSUPPORTED,
            dropped=dropped,
        )
    by_n = {e.n: e for e in evidence}
    answer = Answer(
        state.question,
        language,
        checked.text(),
        False,
        True,
        [citation_for(by_n[n], cited=True) for n in checked.cited],
        state.hits,
        evidence,
        prompt=messages,
        mode=GENERATIVE,
        model=generator.name,
        dropped=dropped,
        confidence=extract.answerable,
        grade=ANSWER,
    )
    return state.finish(answer)


def _dropped(checked: Verified) -> list[dict[str, object]]:
    return [
        {"sentence": s.text, "reason": s.reason, "support": round(s.support, 3)}
        for s in checked.dropped
    ]
