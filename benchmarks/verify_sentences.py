"""Calibrate the check of generated sentences against human judgments.

``generate``: asks each question of a question file in generative mode and writes
every generated sentence with the evidence it cites and the checker's support
score (``answering.verification``) as JSON lines, for a person to judge.

``score``: reads those lines back with a ``"supported"`` true/false field added
by hand (the AIS question: is this sentence attributable to the text it cites?)
and prints, for each pair of thresholds (share of the sentence's terms, and of
their consecutive pairs, found in one unit of a cited block), the checker's
precision (kept sentences that are supported) and recall (supported sentences kept).

    .venv/bin/python benchmarks/verify_sentences.py generate eval/manuals-en/questions-tune.jsonl \\
        --docs eval/manuals-en/docs --out /tmp/sentences.jsonl
    .venv/bin/python benchmarks/verify_sentences.py score eval/manuals-en/verification-labels.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core import keywords
from citeline.core.answering.citations import CitationFilter, clean_answer_text
from citeline.core.answering.evidence import evidence_hits, select_evidence
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.results import Evidence
from citeline.core.answering.verification import VerifySettings, block_spans, support, verify
from citeline.core.documents import Chunk, Hit
from citeline.core.scripts import detect_language, is_cjk
from citeline.evaluation import datasets
from citeline.settings import load_settings


def generate(args: argparse.Namespace) -> None:
    evalset = datasets.load_questions(Path(args.questions))
    docs = Path(args.docs)
    settings, _ = load_settings(docs)
    workspace = open_workspace(docs, settings, ModelPool())
    workspace.update()
    generator = workspace.generator()
    answer = settings.answer
    # Every sentence is kept for judging: the thresholds are set afterwards.
    keep_all = VerifySettings(support=0.0, order=0.0, unmarked_support=0.0, min_terms=0)
    with open(args.out, "w", encoding="utf-8") as out:
        for number, query in enumerate(evalset.queries[: args.limit or None], start=1):
            if not query.relevant:
                continue
            language = detect_language(query.text)
            hits = workspace.retriever.search(query.text, answer.candidates)
            cjk = is_cjk(query.text)
            above = evidence_hits(hits, answer, cjk)
            evidence = select_evidence(
                above, answer, generator.context_size // 2, generator.count_tokens, language
            )
            if not evidence:
                continue
            messages = build_messages(query.text, evidence, language)
            stream = CitationFilter({e.n for e in evidence})
            text = "".join(
                stream.feed(piece)
                for piece in generator.stream_chat(
                    messages,
                    max_tokens=answer.max_answer_tokens,
                    temperature=answer.temperature,
                    should_stop=lambda: False,
                )
            )
            text = clean_answer_text(text + stream.flush())
            strict = verify(text, evidence, VerifySettings())
            loose = verify(text, evidence, keep_all)
            by_n = {e.n: e.hit.chunk.text for e in evidence}
            for judged, checked in zip(loose.sentences, strict.sentences, strict=True):
                cited = judged.cited
                out.write(
                    json.dumps(
                        {
                            "question": query.text,
                            "sentence": judged.text,
                            "cites": list(cited),
                            "support": round(judged.support, 3),
                            "kept_by_default": checked.kept,
                            "evidence": {str(n): by_n[n] for n in cited},
                            "supported": None,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
            print(f"{number}/{len(evalset.queries)}", file=sys.stderr)
    workspace.close()


def score(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in Path(args.labels).read_text("utf-8").splitlines()]
    judged = [r for r in rows if isinstance(r.get("supported"), bool) and r["cites"]]
    positives = sum(r["supported"] for r in judged)
    print(f"{len(judged)} judged sentences, {positives} supported by what they cite")
    scored = []
    for row in judged:
        terms = keywords.terms(row["sentence"])
        best = (0.0, 0.0)
        for n, text in row["evidence"].items():
            chunk = Chunk("judged", "", (), text, None, None, None, 0)
            evidence = Evidence(int(n), Hit(int(n), int(n), 1.0, chunk))
            best = max(best, support(terms, block_spans(evidence)))
        scored.append((best, row["supported"]))
    print("terms  order  kept  precision  recall")
    for share in (0.6, 0.7, 0.8, 0.9):
        for order in (0.0, 0.3, 0.4, 0.5, 0.6):
            kept = [ok for (s, o), ok in scored if s >= share and o >= order]
            good = sum(kept)
            precision = good / len(kept) if kept else float("nan")
            print(
                f"{share:5.2f} {order:6.2f} {len(kept):5} {precision:10.3f} {good / positives:7.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("generate")
    p.add_argument("questions")
    p.add_argument("--docs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int, default=0)
    p.set_defaults(run=generate)
    p = sub.add_parser("score")
    p.add_argument("labels")
    p.set_defaults(run=score)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
