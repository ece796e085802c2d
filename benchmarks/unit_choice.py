"""Unit choice, replayed: how the selection rules change the answers of a question set.

Every question is asked once through the whole flow (extractive); the scored
units it reached (``scoring.Scored``: the units, best first, their probabilities,
the grade) are recorded.  The grade, refusals and the units' scores do not depend
on the selection, so each selection variant is then replayed on the recorded
units, and its answers measured as ``citeline eval questions`` measures them:
answerable questions whose answer contains a key fact, that cite an expected
source, and the mean answer length.  ``--causes`` classifies each answerable miss
of the shipped selection instead (``fact_cause``, ``cite_cause``; ``--show`` prints
each one).  Use tuning splits only.

    .venv/bin/python benchmarks/unit_choice.py eval/everyday/questions-tune.jsonl \\
        --docs eval/everyday/docs [--json] [--cache /tmp/rows.pkl] [--cjk]

A SQuAD-style file (``…/cmrc2018_dev.json``) is written into ``--docs`` first;
``--cjk`` measures the CJK questions alone, with the CJK selection variants.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeline.core.answering import extractive, flow, other_blocks
from citeline.core.answering.fitted import ENGLISH, Weights
from citeline.core.answering.scoring import Scored, ScoredUnit
from citeline.core.scripts import is_cjk_question
from citeline.evaluation import datasets
from citeline.evaluation.answers import contains_reference
from citeline.evaluation.runner import write_corpus
from common import extractive_workspace

Select = Callable[[Scored], extractive.Extract]


@dataclasses.dataclass
class Row:
    question: str
    relevant: set[str]
    answers: tuple[str, ...]
    scored: Scored | None  # None: refused before the units were scored
    doc_ids: dict[str, str]  # chunk path -> the question set's document id
    # The retrieved hits, best first: (chunk path, chunk text); and whether refused.
    hits: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    refused: bool = False


def record(questions: Path, docs: Path) -> list[Row]:
    """Each question asked once; a SQuAD-style JSON file (CMRC 2018) is written out
    into ``docs`` first, one file a paragraph, as ``citeline eval squad`` writes it."""
    if questions.suffix == ".json":
        evalset = datasets.load_squad(questions)
        write_corpus(evalset, docs)
    else:
        evalset = datasets.load_questions(questions)
    workspace = extractive_workspace(docs)
    seen: list[Scored] = []
    real = flow.select

    def spy(scored: Scored, *args: Any, **kwargs: Any) -> extractive.Extract:
        seen.append(scored)
        return real(scored, *args, **kwargs)

    flow.select = spy  # type: ignore[assignment]
    rows: list[Row] = []
    try:
        for query in evalset.queries:
            seen.clear()
            answer = workspace.ask(query.text)
            scored = seen[0] if seen else None
            paths = {s.evidence.hit.chunk.path for s in scored.units} if scored else set()
            hits = [(h.chunk.path, h.chunk.text) for h in answer.hits]
            paths |= {p for p, _ in hits}
            rows.append(
                Row(
                    query.text,
                    set(query.relevant),
                    tuple(query.answers),
                    scored,
                    {p: evalset.doc_id(p) for p in paths},
                    hits,
                    answer.refused,
                )
            )
    finally:
        flow.select = real  # type: ignore[assignment]
    return rows


def measure(rows: list[Row], select: Select) -> dict[str, float]:
    answerable = [r for r in rows if r.relevant]
    with_answers = [r for r in answerable if r.answers]
    contains = cited = 0
    chars: list[int] = []
    seconds: list[float] = []
    for r in answerable:
        if r.scored is None:
            continue
        start = time.perf_counter()
        chosen = select(r.scored)
        seconds.append(time.perf_counter() - start)
        extract, _ = extractive.renumber(chosen)
        text = extractive.compose(extract)
        chars.append(len(text))
        paths = {s.evidence.hit.chunk.path for s in extract.units}
        cited += any(r.doc_ids[p] in r.relevant for p in paths)
        contains += bool(r.answers) and contains_reference(text, r.answers)
    return {
        "contains": round(contains / max(len(with_answers), 1), 3),
        "cited": round(cited / max(len(answerable), 1), 3),
        "mean_chars": round(statistics.fmean(chars), 1) if chars else 0.0,
        "answerable": len(answerable),
        "select_ms_p50": round(1000 * statistics.median(seconds), 2) if seconds else 0.0,
        "select_ms_p95": round(1000 * _p95(seconds), 2) if seconds else 0.0,
    }


def fact_cause(r: Row, extract: extractive.Extract, text: str) -> str:
    """Why an answerable question's answer misses its key fact (``ok``: it holds it).

    ``retrieval``: no retrieved hit holds it; ``evidence``: a hit holds it, no
    evidence passage does; ``spread``: an evidence passage holds it, no one unit does;
    ``cut_short``: the unit holding it is next to a quoted one (the next sentence or
    list item); ``wrong_sentence``: it is in a passage the answer quotes, in another
    unit; ``wrong_section``: it is in an evidence passage the answer does not quote."""
    if r.scored is None:
        return "refused"
    if contains_reference(text, r.answers):
        return "ok"
    holding = [s for s in r.scored.units if contains_reference(s.unit.display, r.answers)]
    if not holding:
        texts = {s.evidence.hit.chunk.text for s in r.scored.units}
        if any(contains_reference(t, r.answers) for t in texts):
            return "spread"
        if any(contains_reference(t, r.answers) for _, t in r.hits):
            return "evidence"
        return "retrieval"
    quoted = {(s.evidence.hit.chunk.text, s.unit.position) for s in extract.units}
    passages = {s.evidence.hit.chunk.text for s in extract.units}
    for s in holding:
        key = s.evidence.hit.chunk.text
        if (key, s.unit.position - 1) in quoted or (key, s.unit.position + 1) in quoted:
            return "cut_short"
    if any(s.evidence.hit.chunk.text in passages for s in holding):
        return "wrong_sentence"
    return "wrong_section"


def cite_cause(r: Row, extract: extractive.Extract) -> str:
    """Why an answerable question's answer cites no expected source (``ok``: it does).

    ``not_retrieved``: no hit is an expected source; ``not_evidence``: a hit is, no
    evidence passage; ``not_cited``: an evidence passage is, and the answer does not
    cite it."""
    if r.scored is None:
        return "refused"
    if any(r.doc_ids[s.evidence.hit.chunk.path] in r.relevant for s in extract.units):
        return "ok"
    if not any(r.doc_ids[s.evidence.hit.chunk.path] in r.relevant for s in r.scored.units):
        hit = any(r.doc_ids.get(p) in r.relevant for p, _ in r.hits)
        return "not_evidence" if hit else "not_retrieved"
    return "not_cited"


def causes(rows: list[Row], select: Select, show: bool = False) -> dict[str, dict[str, int]]:
    """The miss causes of the answerable questions, counted (``show``: each printed
    with its answer and the best unit holding the fact, to stderr)."""
    facts: dict[str, int] = {}
    cites: dict[str, int] = {}
    for r in rows:
        if not r.relevant:
            continue
        extract: extractive.Extract | None = None
        text = ""
        if r.scored is not None:
            extract, _ = extractive.renumber(select(r.scored))
            text = extractive.compose(extract)
        fact = fact_cause(r, extract, text) if r.answers and extract else "refused"
        if not r.answers:
            fact = "no_reference"
        cite = cite_cause(r, extract) if extract else "refused"
        facts[fact] = facts.get(fact, 0) + 1
        cites[cite] = cites.get(cite, 0) + 1
        if show and (fact != "ok" or cite != "ok") and r.scored is not None:
            ranks = [
                (i, s)
                for i, s in enumerate(r.scored.units)
                if contains_reference(s.unit.display, r.answers)
            ]
            print(f"--- [{fact} / {cite}] {r.question}", file=sys.stderr)
            print(f"    want: {r.answers[:2]} from {sorted(r.relevant)}", file=sys.stderr)
            print("    got:  " + text.replace("\n", "\n          ")[:700], file=sys.stderr)
            for i, s in ranks[:1]:
                chunk = s.evidence.hit.chunk
                print(
                    f"    fact unit #{i} p={s.probability:.3f}"
                    f" (best {r.scored.units[0].probability:.3f})"
                    f" [{chunk.path} § {' > '.join(chunk.heading_path)}] {s.unit.text[:200]!r}",
                    file=sys.stderr,
                )
    return {"fact": facts, "cite": cites}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _with(other_blocks_add: bool, **kwargs: Any) -> Select:
    """``extractive.select`` with the other-block rule on or off for the questions
    whose models ship it (English: ``fitted.ENGLISH``), at these settings."""

    def select(scored: Scored) -> extractive.Extract:
        english = scored.models.lexical == ENGLISH.lexical
        models = dataclasses.replace(scored.models, other_blocks_add=other_blocks_add and english)
        return extractive.select(dataclasses.replace(scored, models=models), **kwargs)

    return select


def variants() -> dict[str, Select]:
    """The selection variants compared: without the other-block rule, then with it
    at several settings (the shipped ones marked)."""
    out: dict[str, Select] = {
        "no other-block rule": _with(
            False, line_lists=False, code_brings_lead=False, fragments_free=0
        )
    }
    for joins in (0.0, 0.2, 1.0):  # 1.0: a heading alone never lets a block in
        for near in (0.6, 0.8, 1.01):  # 1.01: nor does a score near the best
            for new in (0.1, 0.2):
                setting = (near, new, joins)
                shipped = setting == (
                    extractive.NEAR_BEST,
                    extractive.NEW_INFORMATION,
                    other_blocks.HEADING_JOINS,
                )
                name = f"heading {joins} near {near} new {new}"
                out[name + " (before)" * shipped] = _with(
                    True,
                    near_best=near,
                    new_information=new,
                    heading_joins=joins,
                    line_lists=False,
                    code_brings_lead=False,
                    fragments_free=0,
                )
    for lists in (False, True):
        for lead in (False, True):
            for free in (0, extractive.LINE_ITEM_MAX_CHARS):
                name = f"line lists {lists} code lead {lead} fragments free {free}"
                shipped = lists and lead and free == extractive.LINE_ITEM_MAX_CHARS
                out[name + " (shipped)" * shipped] = _with(
                    True, line_lists=lists, code_brings_lead=lead, fragments_free=free
                )
    for h in (0.3, 0.5, 0.7):
        out[f"the shipped rules, heading first {h}"] = _with(True, heading_first=h)
    for chars in (80, 10_000):
        out[f"the shipped rules, fragments up to {chars} chars free"] = _with(
            True, fragments_free=chars
        )
    return out


def _cjk(other_blocks_add: bool, lexical: Weights | None = None, **kwargs: Any) -> Select:
    """``extractive.select`` for the CJK questions with the other-block rule on or off
    (``heading_joins`` and the other settings passed on); ``lexical``: the units
    rescored with these weights first (their recorded features, over ``FEATURES``)."""

    def select(scored: Scored) -> extractive.Extract:
        if lexical is not None:
            units = [
                ScoredUnit(s.unit, s.evidence, s.features, lexical.logit(s.features))
                for s in scored.units
            ]
            units.sort(key=lambda s: -s.logit)
            scored = dataclasses.replace(scored, units=units)
        models = dataclasses.replace(scored.models, other_blocks_add=other_blocks_add)
        return extractive.select(dataclasses.replace(scored, models=models), **kwargs)

    return select


def cjk_variants(shipped: Scored | None) -> dict[str, Select]:
    """The selection variants compared for CJK questions (``--cjk``): the other-block
    rule off (as shipped before) and on at several heading settings, and with the
    lexical model's ``context`` weight moved onto ``lexical`` (the two features are
    equal on CMRC 2018, where the model was fitted: no heading there)."""
    out: dict[str, Select] = {"CJK shipped": extractive.select, "rule off": _cjk(False)}
    for joins in (0.0, 0.2, 0.3, 0.4, 0.5, 1.0):
        out[f"rule on, heading {joins}"] = _cjk(True, heading_joins=joins)
    for near in (0.6, 1.01):
        out[f"rule on, heading 0.3, near {near}"] = _cjk(True, heading_joins=0.3, near_best=near)
    if shipped is not None:
        w = shipped.models.lexical
        folded = list(w.weights)
        folded[0], folded[1] = w.weights[0] + w.weights[1], 0.0
        lexical = Weights(w.bias, tuple(folded))
        out["context folded, rule off"] = _cjk(False, lexical)
        for joins in (0.0, 0.3, 0.5, 1.0):
            out[f"context folded, rule on, heading {joins}"] = _cjk(
                True, lexical, heading_joins=joins
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions")
    parser.add_argument("--docs", required=True)
    parser.add_argument("--cache", help="pickle of the recorded rows (made when absent)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--causes", action="store_true", help="the shipped selection's misses")
    parser.add_argument("--show", action="store_true", help="with --causes: each miss")
    parser.add_argument(
        "--cjk", action="store_true", help="the CJK questions only, with the CJK variants"
    )
    args = parser.parse_args()
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        rows = pickle.loads(cache.read_bytes())
    else:
        rows = record(Path(args.questions), Path(args.docs))
        if cache is not None:
            cache.write_bytes(pickle.dumps(rows))
    chosen = variants()
    if args.cjk:
        rows = [r for r in rows if is_cjk_question(r.question)]
        first = next((r.scored for r in rows if r.scored is not None), None)
        chosen = cjk_variants(first)
    if args.causes:
        json.dump(causes(rows, extractive.select, args.show), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    results = {name: measure(rows, select) for name, select in chosen.items()}
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return
    for name, figures in results.items():
        print(
            f"{name:40} contains {figures['contains']:.3f}  cited {figures['cited']:.3f}"
            f"  chars {figures['mean_chars']:.0f}  (n={figures['answerable']})"
            f"  select p50/p95 {figures['select_ms_p50']:.2f}/{figures['select_ms_p95']:.2f} ms"
        )


if __name__ == "__main__":
    main()
