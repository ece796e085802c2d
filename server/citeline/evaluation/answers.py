"""Scoring answers: ``citeline eval … --answers N``.

Each of the first N questions is asked through the normal flow once per answer
mode (the workspace's settings with ``answer.mode`` set), and each mode reports:

- ``answer_contains_reference``: answerable questions with reference answers
  whose answer contains one (case, punctuation, whitespace and the [n] markers
  ignored; for Chinese that is character level);
- ``supported_sentences``: the share of answer sentences supported by the
  evidence they cite, judged by the same sentence check generated answers go
  through (``answering.verification``, token-overlap support; label: "K-precision
  ≥ 0.7 against the cited block's units or adjacent pairs");
- ``citation_accuracy``: answerable questions whose answer cites an expected source
  (a refusal cites nothing, so a false refusal counts against it), and
  ``citation_accuracy_answered``: the same share among the answerable questions
  that were answered;
- grades (``core.answering.results``): for answerable questions
  ``answerable_refused`` (false refusals, the costliest mistake) and
  ``answerable_graded_answer``; for questions listed with no sources (the
  documents do not answer them) ``unanswerable_graded_answer`` (should be rare),
  ``unanswerable_graded_closest`` and ``unanswerable_refused``, and refusal
  ``precision`` and ``recall``;
- ``fallback``: generative asks that answered extractively, by reason;
- ``off_topic_refused``: general-knowledge questions the documents do not cover
  (``off_topic.py``), asked through the whole flow;
- answer time p50/p95, total and after retrieval, in seconds.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable, Sequence

from citeline.core.answering.flow import EXTRACTIVE, GENERATIVE
from citeline.core.answering.results import ANSWER, Answer
from citeline.core.answering.verification import VerifySettings, verify
from citeline.evaluation.datasets import EvalQuery, EvalSet
from citeline.evaluation.off_topic import OFF_TOPIC_QUESTIONS
from citeline.service.workspace import Workspace

MODES = (EXTRACTIVE, GENERATIVE)
Progress = Callable[[int, int, str], None]
_MARKER = re.compile(r"\[\d+\]")


def normalise(text: str) -> str:
    """Text compared for "contains the reference": letters and digits, lower case."""
    return "".join(ch.lower() for ch in _MARKER.sub("", text) if ch.isalnum())


def contains_reference(answer: str, references: Sequence[str]) -> bool:
    text = normalise(answer)
    return any(normalise(r) and normalise(r) in text for r in references)


def supported(answer: Answer) -> tuple[int, int]:
    """(supported sentences, sentences) of an answer, by the sentence check."""
    if answer.refused or not answer.text:
        return 0, 0
    cited = [e for e in answer.evidence if any(c.n == e.n for c in answer.citations)]
    checked = verify(answer.text, cited, VerifySettings())
    return len(checked.kept), len(checked.sentences)


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclasses.dataclass
class _Tally:
    questions: int = 0
    answerable: int = 0
    with_reference: int = 0
    contains: int = 0
    cited_right: int = 0
    refused_answerable: int = 0
    graded_answer: int = 0
    unanswerable: int = 0
    refused_unanswerable: int = 0
    answer_unanswerable: int = 0
    sentences: int = 0
    supported: int = 0
    fallback: dict[str, int] = dataclasses.field(default_factory=dict)
    totals: list[float] = dataclasses.field(default_factory=list)
    after_retrieval: list[float] = dataclasses.field(default_factory=list)

    def add(self, query: EvalQuery, answer: Answer, evalset: EvalSet) -> None:
        self.questions += 1
        total = float(answer.timings.get("total") or 0.0)
        self.totals.append(total)
        self.after_retrieval.append(total - float(answer.timings.get("retrieval") or 0.0))
        good, seen = supported(answer)
        self.supported += good
        self.sentences += seen
        if answer.fallback:
            self.fallback[answer.fallback] = self.fallback.get(answer.fallback, 0) + 1
        if not query.relevant:
            self.unanswerable += 1
            self.refused_unanswerable += answer.refused
            self.answer_unanswerable += answer.grade == ANSWER
            return
        self.answerable += 1
        self.refused_answerable += answer.refused
        self.graded_answer += answer.grade == ANSWER
        if any(evalset.doc_id(c.path) in query.relevant for c in answer.citations):
            self.cited_right += 1
        if query.answers:
            self.with_reference += 1
            self.contains += not answer.refused and contains_reference(answer.text, query.answers)

    def report(self) -> dict[str, object]:
        refused = self.refused_answerable + self.refused_unanswerable

        def share(part: int, whole: int) -> float | None:
            return round(part / whole, 4) if whole else None

        return {
            "questions": self.questions,
            "answer_contains_reference": share(self.contains, self.with_reference),
            "supported_sentences": share(self.supported, self.sentences),
            "citation_accuracy": share(self.cited_right, self.answerable),
            "citation_accuracy_answered": share(
                self.cited_right, self.answerable - self.refused_answerable
            ),
            "answerable": self.answerable,
            "answerable_refused": share(self.refused_answerable, self.answerable),
            "answerable_graded_answer": share(self.graded_answer, self.answerable),
            "unanswerable": self.unanswerable,
            "unanswerable_graded_answer": share(self.answer_unanswerable, self.unanswerable),
            "unanswerable_graded_closest": share(
                self.unanswerable - self.answer_unanswerable - self.refused_unanswerable,
                self.unanswerable,
            ),
            "unanswerable_refused": share(self.refused_unanswerable, self.unanswerable),
            "refusal_precision": share(self.refused_unanswerable, refused)
            if self.unanswerable
            else None,
            "fallback": {k: share(v, self.questions) for k, v in sorted(self.fallback.items())},
            "seconds": {
                "p50": round(statistics.median(self.totals), 3) if self.totals else 0.0,
                "p95": round(_percentile(self.totals, 0.95), 3),
                "after_retrieval_p50": round(statistics.median(self.after_retrieval), 3)
                if self.after_retrieval
                else 0.0,
                "after_retrieval_p95": round(_percentile(self.after_retrieval, 0.95), 3),
            },
        }


def run_answers(
    workspace: Workspace,
    evalset: EvalSet,
    limit: int,
    modes: Sequence[str] = MODES,
    progress: Progress | None = None,
) -> dict[str, dict[str, object]]:
    """Each mode's figures over the first ``limit`` questions."""
    queries = evalset.queries[:limit]
    original = workspace.settings
    out: dict[str, dict[str, object]] = {}
    steps, done = len(queries) * len(modes), 0
    try:
        for mode in modes:
            workspace.settings = dataclasses.replace(
                original,
                answer=dataclasses.replace(original.answer, mode=mode),
                records=dataclasses.replace(original.records, asks=False),
            )
            tally = _Tally()
            for query in queries:
                tally.add(query, workspace.ask(query.text), evalset)
                done += 1
                if progress:
                    progress(done, steps, f"{mode} {query.id}")
            off_topic = sum(workspace.ask(q).refused for q in OFF_TOPIC_QUESTIONS)
            out[mode] = {
                **tally.report(),
                "off_topic_refused": round(off_topic / len(OFF_TOPIC_QUESTIONS), 4),
            }
    finally:
        workspace.settings = original
    return out
