"""`citeline eval` end to end on small slices of the public benchmarks (in the repo)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, copy_samples

FIXTURES = REPO / "tests" / "fixtures" / "eval"
CLI = [sys.executable, "-m", "citeline.cli"]
BLOCK_KEYS = {"ndcg@10", "recall@5", "mrr@10", "hit@5", "latency", "per_query_ms"}


def run_eval(*args: str) -> dict[str, object]:
    proc = subprocess.run(
        [*CLI, "eval", *args, "--json"], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert isinstance(result, dict)
    return result


def check_blocks(result: dict[str, object]) -> None:
    for method in ("dense", "keyword", "hybrid"):
        block = result[method]
        assert isinstance(block, dict) and set(block) >= BLOCK_KEYS
        for key in ("ndcg@10", "recall@5", "mrr@10", "hit@5"):
            assert 0.0 <= block[key] <= 1.0
        assert block["latency"]["p50_ms"] > 0
        per_query = block["per_query_ms"]
        assert len(per_query) == result["queries"] and all(ms > 0 for ms in per_query.values())


def test_beir_slice(tmp_path: Path) -> None:
    result = run_eval(
        "beir", str(FIXTURES / "scifact-slice"), "--split", "train", "--work", str(tmp_path)
    )
    assert result["queries"] == 15 and result["documents"] == 57
    check_blocks(result)
    # on a 57-document slice every method should find most cited abstracts
    for method in ("dense", "keyword", "hybrid"):
        assert result[method]["hit@5"] >= 0.8, result[method]
    assert result["hybrid"]["ndcg@10"] >= 0.7
    # a second run reuses the index: nothing is embedded again
    again = run_eval(
        "beir", str(FIXTURES / "scifact-slice"), "--split", "train", "--work", str(tmp_path)
    )
    assert again["embedded"] == 0 and again["hybrid"] == {
        **result["hybrid"],
        "latency": again["hybrid"]["latency"],
        "per_query_ms": again["hybrid"]["per_query_ms"],
    }


def test_a_reranker_adds_a_reranked_block(tmp_path: Path, reranker_path: Path) -> None:
    args = ["beir", str(FIXTURES / "scifact-slice"), "--split", "train", "--work", str(tmp_path)]
    plain = run_eval(*args)
    reranked = run_eval(*args, "--reranker", str(reranker_path))
    assert "reranked" not in plain
    check_blocks(reranked)
    block = reranked["reranked"]
    assert isinstance(block, dict) and set(block) >= BLOCK_KEYS
    assert 0.0 <= block["ndcg@10"] <= 1.0 and block["latency"]["p50_ms"] > 0
    # the other methods do not change when a reranker is configured
    for method in ("dense", "keyword", "hybrid"):
        timing = {"latency": None, "per_query_ms": None}
        assert {**reranked[method], **timing} == {**plain[method], **timing}
    assert reranked["embedded"] == 0  # the reranker does not touch the index


def test_squad_slice_chinese(tmp_path: Path) -> None:
    result = run_eval("squad", str(FIXTURES / "cmrc2018-trial-slice.json"), "--work", str(tmp_path))
    assert result["queries"] == 27 and result["documents"] == 10
    check_blocks(result)
    # Chinese keyword search works thanks to bigrams; hybrid is no worse than the best method
    assert result["keyword"]["recall@5"] >= 0.9
    best = max(result["dense"]["recall@5"], result["keyword"]["recall@5"])
    assert result["hybrid"]["recall@5"] >= best - 0.04
    refusal = result["refusal"]
    assert set(refusal) >= {"answerable_refused", "relevant_removed_refused", "off_topic_refused"}


def test_own_questions_file(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps(
            {
                "question": "What happens when a PDF is encrypted?",
                "sources": ["troubleshooting.md", "citeline-guide.pdf#page=5"],
            }
        )
        + "\n"
        + json.dumps(
            {
                "question": "索引保存在哪里？",
                "sources": ["zh/常见问题.md"],
                "answers": [".citeline/"],
            },
            ensure_ascii=False,
        )
        + "\n"
        + json.dumps({"question": "Which GPU does Citeline need?", "sources": []})
        + "\n"
    )

    docs = tmp_path / "docs"
    copy_samples(docs)
    result = run_eval("questions", str(questions), "--docs", str(docs), "--answers", "3")
    assert result["queries"] == 3
    check_blocks(result)
    # each answer mode scored: both answerable questions answered from the right
    # sources, the one the documents do not answer refused
    answers = result["answers"]
    assert set(answers) == {"extractive", "generative"}
    for mode, figures in answers.items():
        assert figures["questions"] == 3, mode
        assert figures["answerable_refused"] == 0.0, mode
        assert figures["citation_accuracy"] == figures["citation_accuracy_answered"] == 1.0, mode
        assert figures["unanswerable"] == 1 and figures["unanswerable_refused"] == 1.0, mode
        assert figures["refusal_precision"] == 1.0, mode
        assert figures["supported_sentences"] >= 0.98, mode
        assert 0 < figures["seconds"]["p50"] <= figures["seconds"]["p95"], mode
    extractive = answers["extractive"]
    assert extractive["answer_contains_reference"] == 1.0 and extractive["fallback"] == {}
    assert set(answers["generative"]["fallback"]) <= {"unsupported", "timeout"}
