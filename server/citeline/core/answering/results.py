"""What an ask produces: the evidence it used, its citations, the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from citeline.core.answering.language import message
from citeline.core.documents import SECONDS_DIGITS, Hit, PlaceJson, rounded

# The answer's vocabulary, as it goes on the wire (``citeline.wire``, docs/lsp-extensions.md).
# Each is a ``str``: its JSON is the value.


class Grade(StrEnum):
    """An answer's grade, which every client shows (``grade_label``)."""

    ANSWER = "answer"  # the answer scorer judges that the quoted units answer the question
    CLOSEST = "closest"  # on the topic, quoted and cited, but perhaps not answering it
    REFUSED = "refused"  # the documents are off the topic, or lack what the question names


class AnswerMode(StrEnum):
    """Who wrote an answer: the evidence's own sentences, or the generator (checked)."""

    EXTRACTIVE = "extractive"
    GENERATIVE = "generative"


class Fallback(StrEnum):
    """Why a generative ask answered extractively."""

    UNSUPPORTED = "unsupported"  # no generated sentence was supported by its evidence
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    CONTEXT = "context"  # the evidence did not fit in the model's context


class Refusal(StrEnum):
    """Why a refusal refused."""

    OFF_TOPIC = "off_topic"  # no passage is close to the question
    UNKNOWN_TERM = "unknown_term"  # the question names a term no document contains


ANSWER, CLOSEST, REFUSED = Grade.ANSWER, Grade.CLOSEST, Grade.REFUSED
GRADES = tuple(Grade)


@dataclass(frozen=True)
class Evidence:
    n: int
    hit: Hit


class CitationJson(PlaceJson):
    """A citation as JSON (:meth:`Citation.to_json`): what the command line and MCP
    print, and what the wire's ``Citation`` (``citeline.wire``) locates."""

    n: int
    score: float
    cited: bool


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

    def to_json(self) -> CitationJson:
        return {
            "n": self.n,
            "path": self.path,
            "title": self.title,
            "section": self.section,
            "page": self.page,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": rounded(self.score),
            "cited": self.cited,
        }


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
    # Generation stopped early: "timeout" or "cancelled" (the answer is then extractive).
    degraded: str | None = None
    timings: dict[str, float | None] = field(default_factory=dict)
    # Who wrote the answer: "extractive" (the evidence's own sentences) or "generative"
    # (the generator, every sentence checked); None for a refusal.
    mode: AnswerMode | None = None
    # Why a generative ask answered extractively.
    fallback: Fallback | None = None
    # Generated sentences the check removed, with the reason (for the ask record).
    dropped: list[dict[str, object]] = field(default_factory=list)
    # The scorer's probability that the evidence answers the question.
    confidence: float | None = None
    # The generator's file name, when it wrote the answer.
    model: str | None = None
    # ANSWER, CLOSEST or REFUSED; None: REFUSED for a refusal, else ANSWER.
    grade: Grade | None = None
    # Why a refusal refused.
    refusal: Refusal | None = None

    def __post_init__(self) -> None:
        if self.grade is None:
            self.grade = REFUSED if self.refused else ANSWER
        if self.grade not in GRADES or (self.grade == REFUSED) != self.refused:
            raise ValueError(f"grade {self.grade!r} with refused={self.refused}")

    @property
    def grade_label(self) -> str:
        """The grade in words, in the question's language: what clients show."""
        return message(self.language, f"grade_{self.grade}")

    def to_json(self) -> dict[str, object]:
        return {
            "question": self.question,
            "language": self.language,
            "answer": self.text,
            "mode": self.mode,
            "model": self.model,
            "fallback": self.fallback,
            "refused": self.refused,
            "grade": self.grade,
            "grade_label": self.grade_label,
            "refusal": self.refusal,
            "generator_called": self.generator_called,
            "degraded": self.degraded,
            "confidence": rounded(self.confidence, SECONDS_DIGITS),
            "citations": [c.to_json() for c in self.citations],
            "hits": [h.to_json() for h in self.hits],
            "timings": {k: rounded(v, SECONDS_DIGITS) for k, v in self.timings.items()},
        }
