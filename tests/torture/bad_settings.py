"""Bad settings in a folder's ``citeline.toml``, every kind found: each is at most a
bounded number of warnings (one for one bad value) and the default, and search and
ask still answer from the folder, never a traceback.
Used by tests/torture/test_bad_settings.py and benchmarks/torture.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from citeline.app import ModelPool, open_workspace
from citeline.settings import MAX_MESSAGES_PER_SOURCE, load_settings
from torture.hostile import PROSE


@dataclass(frozen=True)
class Case:
    name: str
    text: str  # the citeline.toml
    warnings: int = 1  # how many lines the user is told
    says: str = ""  # what the first of them names
    prepare: Callable[[Path], None] | None = None  # instead of writing ``text``


def _garbage_reranker(docs: Path) -> None:
    model = docs.parent / "reranker.gguf"
    model.write_bytes(b"GGUF" + os.urandom(4000))
    (docs / "citeline.toml").write_text(f'[reranking]\nmodel = "{model}"\n')


def _symlink_out(docs: Path) -> None:
    outside = docs.parent / "big.toml"
    with outside.open("wb") as handle:  # 200 MB, sparse: never read
        handle.truncate(200 * 1024 * 1024)
    (docs / "citeline.toml").symlink_to(outside)


def _too_big(docs: Path) -> None:
    (docs / "citeline.toml").write_bytes(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")


CASES = (
    Case("unknown retrieval mode", '[retrieval]\nmode = "semantic"\n', says="retrieval.mode"),
    Case("max_file_mb nan", "[index]\nmax_file_mb = nan\n", says="index.max_file_mb"),
    Case("max_file_mb inf", "[index]\nmax_file_mb = inf\n", says="index.max_file_mb"),
    Case("max_file_mb 0", "[index]\nmax_file_mb = 0\n", says="index.max_file_mb"),
    Case("top_k 0", "[search]\ntop_k = 0\n", says="search.top_k"),
    Case("top_k a string", '[search]\ntop_k = "many"\n', says="search.top_k"),
    Case("min_score nan", "[answer]\nmin_score = nan\n", says="answer.min_score"),
    Case("context_size 32k", "[generation]\ncontext_size = 32768\n", says="context_size"),
    Case("unknown answer mode", '[answer]\nmode = "poetic"\n', says="answer.mode"),
    Case("unknown vector index", '[index]\nvectors = "annoy"\n', says="index.vectors"),
    Case("unknown preset", '[embedding]\npreset = "gte"\n', says="embedding.preset"),
    Case("overlap over max", "[chunking]\nmax_cost = 100\noverlap_cost = 200\n", says="overlap"),
    Case("missing reranker", '[reranking]\nmodel = "/nonexistent/r.gguf"\n', says="reranker"),
    Case("missing generator", '[generation]\nmodel = "/nonexistent/g.gguf"\n', says="generation"),
    Case("garbage reranker", "", warnings=0, prepare=_garbage_reranker),
    Case("a table as a number", "[search.top_k]\nx = 1\n", says="search.top_k"),
    Case("nested 5,000 deep", "a = " + "[" * 5000 + "]" * 5000 + "\n", says="deep"),
    Case("nested 40 deep", "[search]\nx = " + "[" * 40 + "]" * 40 + "\n", says="deep"),
    Case(
        "20,000 unknown keys",
        "[search]\n" + "".join(f"key{i} = {i}\n" for i in range(20_000)),
        warnings=MAX_MESSAGES_PER_SOURCE + 1,
        says="unknown setting",
    ),
    Case("a symlink out, 200 MB", "", says="outside", prepare=_symlink_out),
    Case("2 MB", "", says="limit", prepare=_too_big),
)


def run_case(work: Path, case: Case, models: ModelPool) -> str | None:
    """None when the case is said as expected and search and ask still answer."""
    docs = work / case.name.replace(" ", "-").replace(",", "")
    docs.mkdir(parents=True)
    (docs / "keeper.md").write_text("# Keeper\n\n" + PROSE)
    if case.prepare is not None:
        case.prepare(docs)
    else:
        (docs / "citeline.toml").write_text(case.text)
    try:
        settings, warnings = load_settings(docs)
        if len(warnings) != case.warnings:
            return f"{len(warnings)} warnings, expected {case.warnings}: {warnings[:3]}"
        if case.says and case.says not in warnings[0]:
            return f"the warning does not name {case.says!r}: {warnings[0]}"
        workspace = open_workspace(docs, settings, models)
        try:
            workspace.update()
            hits = workspace.search("lighthouse weather")
            if not hits or hits[0].chunk.path != "keeper.md":
                return f"search found {[h.chunk.path for h in hits]}"
            hover = workspace.search("lighthouse weather", 1, rerank=False)
            if not hover:
                return "a hover's search found nothing"
            answer = workspace.ask("When does the lighthouse keeper log the weather?")
            if answer.refused:
                return f"the ask was refused: {answer.text[:120]}"
        finally:
            workspace.close()
    except Exception as exc:  # the failure this suite exists to catch
        return f"{type(exc).__name__}: {exc}"
    return None


def run_all(work: Path, models: ModelPool | None = None) -> dict[str, str | None]:
    models = models if models is not None else ModelPool()
    return {case.name: run_case(work, case, models) for case in CASES}
