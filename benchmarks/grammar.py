"""Does forcing a marker after every sentence (a llama.cpp GBNF grammar) help the
bundled generator write supported answers?

For the answerable questions of a question file, the generator answers from the
same evidence twice, without and with a grammar that allows only one to four
sentences, each ending in ``[n]`` for a block that was given.  Prints, for each:
the share of generated sentences the checker keeps (``answering.verification``),
answers with at least one kept sentence, answers that contain a reference, and
seconds per answer.

    .venv/bin/python benchmarks/grammar.py eval/manuals-en/questions-tune.jsonl \\
        --docs eval/manuals-en/docs [--limit 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.core.answering.citations import CitationFilter, clean_answer_text
from citeline.core.answering.evidence import evidence_hits, select_evidence
from citeline.core.answering.prompt import build_messages
from citeline.core.answering.verification import VerifySettings, verify
from citeline.core.scripts import detect_language, is_cjk
from citeline.evaluation import datasets
from citeline.evaluation.answers import contains_reference
from citeline.settings import load_settings


def grammar_for(blocks: int) -> str:
    numbers = " | ".join(f'"{n}"' for n in range(1, blocks + 1))
    return (
        "root ::= sentence sentence{0,3}\n"
        f'sentence ::= [^\\[\\]\\n]{{8,300}} " [" ({numbers}) "]" ("\\n" | " ")\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions")
    parser.add_argument("--docs", required=True)
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    from llama_cpp import LlamaGrammar

    evalset = datasets.load_questions(Path(args.questions))
    docs = Path(args.docs)
    settings, _ = load_settings(docs)
    workspace = open_workspace(docs, settings, ModelPool())
    workspace.update()
    generator = workspace.generator()
    llm = generator._llm  # type: ignore[attr-defined]  # the benchmark reaches past the protocol
    answer = settings.answer
    results: dict[str, list[tuple[int, int, bool, float]]] = {"free": [], "grammar": []}
    queries = [q for q in evalset.queries if q.relevant][: args.limit]
    for query in queries:
        hits = workspace.retriever.search(query.text, answer.candidates)
        above = evidence_hits(hits, answer, is_cjk(query.text))
        language = detect_language(query.text)
        evidence = select_evidence(
            above, answer, generator.context_size // 2, generator.count_tokens, language
        )
        if not evidence:
            continue
        messages = build_messages(query.text, evidence, language)
        for kind in results:
            grammar = (
                LlamaGrammar.from_string(grammar_for(len(evidence)), verbose=False)
                if kind == "grammar"
                else None
            )
            started = time.perf_counter()
            out = llm.create_chat_completion(
                messages=messages,
                max_tokens=answer.max_answer_tokens,
                temperature=answer.temperature,
                grammar=grammar,
            )
            seconds = time.perf_counter() - started
            filtered = CitationFilter({e.n for e in evidence})
            text = out["choices"][0]["message"]["content"] or ""
            text = clean_answer_text(filtered.feed(text) + filtered.flush())
            checked = verify(text, evidence, VerifySettings())
            results[kind].append(
                (
                    len(checked.kept),
                    len(checked.sentences),
                    contains_reference(checked.text(), query.answers),
                    seconds,
                )
            )
    for kind, rows in results.items():
        kept = sum(r[0] for r in rows)
        sentences = sum(r[1] for r in rows)
        print(
            f"{kind:8} answers {len(rows)}: sentences kept {kept}/{sentences}"
            f" ({kept / max(sentences, 1):.1%}), answers with a kept sentence"
            f" {sum(r[0] > 0 for r in rows)}, containing a reference {sum(r[2] for r in rows)},"
            f" {statistics.median(r[3] for r in rows):.1f} s per answer (median)"
        )
    workspace.close()


if __name__ == "__main__":
    main()
