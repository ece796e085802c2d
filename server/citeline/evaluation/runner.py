"""Running an evaluation set through the normal pipeline and scoring it.

Documents are written out as files and indexed by the ordinary incremental
ingest (so a second run over the same corpus embeds nothing), queries go through
the ordinary retriever in each mode (plus ``reranked``, hybrid then the reranker,
when one is configured), and chunk hits are collapsed to documents
(the best-ranked chunk stands for its document) before scoring.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from citeline.core.answering.evidence import evidence_hits
from citeline.core.answering.settings import AnswerSettings
from citeline.core.documents import Hit
from citeline.core.ingest import ProgressCallback
from citeline.core.scripts import is_cjk_question
from citeline.evaluation.datasets import EvalQuery, EvalSet
from citeline.evaluation.metrics import METRICS, average
from citeline.service.workspace import Workspace

METHODS = ("dense", "keyword", "hybrid")
RERANKED = "reranked"


def corpus_folder(cache_root: Path, evalset: EvalSet) -> Path:
    """A stable folder per corpus, so re-running reuses its index."""
    assert evalset.documents is not None
    digest = hashlib.sha256()
    for doc_id in sorted(evalset.documents):
        title, text = evalset.documents[doc_id]
        digest.update(f"{doc_id}\0{title}\0{text}\0".encode())
    name = evalset.name.split(":", 1)[0]
    return cache_root / f"{name}-{digest.hexdigest()[:12]}" / "docs"


def write_corpus(evalset: EvalSet, folder: Path) -> int:
    """Write each document as a file (Markdown with its title as heading, or text)."""
    assert evalset.documents is not None
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for doc_id, (title, text) in evalset.documents.items():
        path = folder / evalset.file_name(doc_id)
        if evalset.suffix == ".md" and title:
            content = f"# {_one_line(title)}\n\n{text}\n"
        else:
            content = f"{text}\n"
        if not path.exists() or path.read_text("utf-8") != content:
            path.write_text(content, "utf-8")
            written += 1
    return written


def _one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class QueryResult:
    ranked: list[str]  # document ids, best first
    hits: list[Hit]
    seconds: float


@dataclass
class MethodResult:
    per_query: dict[str, QueryResult] = field(default_factory=dict)

    def metrics(self, queries: Sequence[EvalQuery]) -> dict[str, float]:
        """Averages over the questions that have relevant documents (the others are
        there to be refused)."""
        rows = [
            {name: fn(self.per_query[q.id].ranked, q.relevant) for name, fn in METRICS.items()}
            for q in queries
            if q.relevant
        ]
        return average(rows)

    def per_query_ms(self) -> dict[str, float]:
        """Each query's search time in milliseconds, by query id."""
        return {qid: round(1000 * r.seconds, 2) for qid, r in self.per_query.items()}

    def latency(self) -> dict[str, float]:
        times = sorted(r.seconds for r in self.per_query.values())
        if not times:
            return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0}
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        return {
            "p50_ms": round(1000 * statistics.median(times), 2),
            "p95_ms": round(1000 * p95, 2),
            "mean_ms": round(1000 * statistics.fmean(times), 2),
        }


def collapse(evalset: EvalSet, hits: Sequence[Hit]) -> list[str]:
    ranked: list[str] = []
    for hit in hits:
        doc = evalset.doc_id(hit.chunk.path)
        if doc not in ranked:
            ranked.append(doc)
    return ranked


def methods(workspace: Workspace) -> tuple[str, ...]:
    """The methods to compare: the three modes, and ``reranked`` with a reranker."""
    return (*METHODS, RERANKED) if workspace.reranker is not None else METHODS


def run_retrieval(
    workspace: Workspace,
    evalset: EvalSet,
    methods: Sequence[str] = METHODS,
    depth: int = 100,
    progress: ProgressCallback | None = None,
) -> dict[str, MethodResult]:
    results = {m: MethodResult() for m in methods}
    for done, query in enumerate(evalset.queries, start=1):
        for method in methods:
            started = time.perf_counter()
            reranked = method == RERANKED
            hits = workspace.search(
                query.text, depth, mode="hybrid" if reranked else method, rerank=reranked
            )
            seconds = time.perf_counter() - started
            results[method].per_query[query.id] = QueryResult(
                collapse(evalset, hits), hits, seconds
            )
        if progress:
            progress(done, len(evalset.queries), query.id)
    return results


# -- refusal -----------------------------------------------------------------------


def refusal_rates(
    evalset: EvalSet, result: MethodResult, settings: AnswerSettings
) -> dict[str, float]:
    """How often the retrieval gate alone (no hit among the ask's ``candidates`` is
    evidence) would refuse; the whole flow also refuses a question naming a term
    no document contains (``evaluation.answers``).

    ``answerable``: the question over the whole corpus.  ``relevant_removed``: the
    same question with its relevant documents taken out of the results, i.e. the
    documents no longer hold the answer (a hard, on-topic kind of off-topic).
    """
    answerable = removed = 0
    queries = [q for q in evalset.queries if q.relevant]
    for query in queries:
        hits = result.per_query[query.id].hits
        cjk = is_cjk_question(query.text)
        top = hits[: settings.candidates]
        if not evidence_hits(top, settings, cjk):
            answerable += 1
        others = [h for h in hits if evalset.doc_id(h.chunk.path) not in query.relevant]
        if not evidence_hits(others[: settings.candidates], settings, cjk):
            removed += 1
    n = max(1, len(queries))
    return {
        "answerable_refused": round(answerable / n, 4),
        "relevant_removed_refused": round(removed / n, 4),
    }


def off_topic_refused(
    workspace: Workspace, questions: Sequence[str], settings: AnswerSettings
) -> float:
    refused = 0
    for question in questions:
        hits = workspace.search(question, settings.candidates)
        if not evidence_hits(hits, settings, is_cjk_question(question)):
            refused += 1
    return round(refused / max(1, len(questions)), 4)
