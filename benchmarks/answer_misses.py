"""Why answers miss: each answerable question of a question set, classified.

Every question is asked through the whole flow (extractive), and each answerable
one whose answer does not contain a reference answer is put in one class:

- ``retrieval``: no unit of the 8 hits holds a reference;
- ``evidence``: a hit holds it, but that hit is not evidence;
- ``too_short``: an evidence unit next to a quoted one holds it;
- ``unit``: another evidence unit holds it (the wrong sentence was quoted);
- ``refused``: the question was refused.

Also counted: answerable questions graded ``closest``, those that do not cite an
expected source, and unanswerable ones graded ``answer``.  Use tuning splits only.

    .venv/bin/python benchmarks/answer_misses.py eval/everyday/questions-tune.jsonl \\
        --docs eval/everyday/docs [--json] [--show unit]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from citeline.core.answering.results import ANSWER, CLOSEST, Answer
from citeline.core.answering.units import split_units
from citeline.evaluation import datasets
from citeline.evaluation.answers import contains_reference
from common import extractive_workspace


def classify(answer: Answer, answers: tuple[str, ...]) -> str:
    """The class of an answerable question's answer (``ok`` when it holds a reference)."""
    if answer.refused:
        return "refused"
    if contains_reference(answer.text, answers):
        return "ok"
    for e in answer.evidence:
        units = split_units(e.hit.chunk.text)
        quoted = [i for i, u in enumerate(units) if u.text in answer.text]
        for i, u in enumerate(units):
            if contains_reference(u.display, answers):
                return "too_short" if any(abs(i - q) == 1 for q in quoted) else "unit"
    evidence_ids = {id(e.hit.chunk) for e in answer.evidence}
    for hit in answer.hits:
        if contains_reference(hit.chunk.text, answers):
            in_evidence = any(hit.chunk.text == e.hit.chunk.text for e in answer.evidence)
            return "unit" if in_evidence or id(hit.chunk) in evidence_ids else "evidence"
    return "retrieval"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions")
    parser.add_argument("--docs", required=True)
    parser.add_argument("--json", action="store_true", help="one JSON line per question")
    parser.add_argument("--show", action="append", default=[], help="print this class's misses")
    args = parser.parse_args()

    evalset = datasets.load_questions(Path(args.questions))
    docs = Path(args.docs)
    workspace = extractive_workspace(docs)
    classes: Counter[str] = Counter()
    closest = uncited = unanswerable = unanswerable_answer = 0
    for query in evalset.queries:
        answer = workspace.ask(query.text)
        cited = any(evalset.doc_id(c.path) in query.relevant for c in answer.citations)
        if not query.relevant:
            unanswerable += 1
            unanswerable_answer += answer.grade == ANSWER
            kind = "unanswerable_" + answer.grade
        else:
            kind = classify(answer, query.answers) if query.answers else "no_reference"
            classes[kind] += 1
            closest += answer.grade == CLOSEST
            uncited += not cited
        row = {
            "id": query.id,
            "question": query.text,
            "class": kind,
            "grade": answer.grade,
            "confidence": round(answer.confidence or 0.0, 3),
            "cited": cited,
            "sources": sorted(query.relevant),
            "citations": [c.path for c in answer.citations],
            "answers": list(query.answers),
            "text": answer.text,
        }
        if args.json:
            print(json.dumps(row, ensure_ascii=False), flush=True)
        elif kind in args.show:
            print(f"--- {query.id} [{kind}, {answer.grade}, cited {cited}] {query.text}")
            print(f"    want: {query.answers[:2]}  from {sorted(query.relevant)}")
            print("    got:  " + answer.text.replace("\n", "\n          ")[:600])
    answerable = sum(classes.values())
    summary = {
        "answerable": answerable,
        "classes": dict(classes.most_common()),
        "graded_closest": closest,
        "not_cited": uncited,
        "unanswerable": unanswerable,
        "unanswerable_graded_answer": unanswerable_answer,
    }
    print(json.dumps(summary, ensure_ascii=False), file=sys.stderr)
    workspace.close()


if __name__ == "__main__":
    main()
