"""The commands: each opens what it needs through the service, and prints the result.

Every command prints one JSON object with ``--json``, else a few readable lines.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.cli.progress import progress
from citeline.service.errors import ServiceError

if TYPE_CHECKING:
    from citeline.service.workspace import Workspace

log = logging.getLogger("citeline")

DEMO_QUERY = "Where does Citeline store its index?"


def store_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The settings --store, --collection and --exact-search stand for."""
    index: dict[str, object] = {}
    if getattr(args, "store", None):
        index["store"] = args.store
    if getattr(args, "collection", None):
        index["collection"] = args.collection
    if getattr(args, "exact_search", False):
        index["exact_search"] = True
    return {"index": index} if index else {}


def _open(
    args: argparse.Namespace, docs: Path | None = None, *, write_collection: bool = False
) -> Workspace:
    """The folder's workspace: settings from citeline.toml, then --model, --reranker,
    --store and --collection.  A team collection is written only by ``index`` and
    ``eval`` (``write_collection``); every other command reads it."""
    from citeline.app import open_workspace, seed_vectors
    from citeline.settings import load_settings

    docs = docs if docs is not None else Path(args.docs).expanduser()
    overrides: dict[str, object] = store_overrides(args)
    if getattr(args, "model", None):
        overrides["embedding"] = {"model": args.model}
    if getattr(args, "reranker", None):
        overrides["reranking"] = {"model": args.reranker}
    settings, _ = load_settings(docs, overrides)
    workspace = open_workspace(docs, settings, write_collection=write_collection)
    if getattr(args, "seed_from", None):
        try:
            with progress("seeding vectors"):
                seeded = seed_vectors(workspace, Path(args.seed_from))
        except BaseException:
            workspace.close()
            raise
        log.info("seeded %d vectors from %s", seeded, args.seed_from)
    return workspace


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False))


def _update_first(workspace: Workspace, args: argparse.Namespace) -> None:
    """Bring the index up to date before answering: cheap when nothing changed."""
    if args.no_update:
        return
    with progress("indexing") as bar:
        report = workspace.update(progress=bar)
    for path, message in report.errors:
        log.warning("%s: %s", path, message)


def _location(item: dict[str, Any]) -> str:
    if item["page"] is not None:
        return f"{item['path']} (page {item['page']})"
    if item["start_line"] is not None:
        return f"{item['path']}:{item['start_line']}"
    return str(item["path"])


# -- commands -----------------------------------------------------------------------


def run_index(args: argparse.Namespace) -> int:
    workspace = _open(args, write_collection=True)
    try:
        with progress("indexing") as bar:
            report = workspace.update(progress=bar)
    finally:
        workspace.close()
    if args.json:
        _print_json(report.to_json())
        return 0
    print(
        f"{report.files} files, {report.chunks} chunks: {report.embedded} embedded,"
        f" {report.reused} reused, {report.removed} removed in {report.seconds:.1f}s"
    )
    for path, message in report.errors:
        print(f"  {path}: {message}")
    return 0


def run_search(args: argparse.Namespace) -> int:
    workspace = _open(args)
    try:
        _update_first(workspace, args)
        hits = [h.to_json() for h in workspace.search(args.query, args.k or None)]
    finally:
        workspace.close()
    if args.json:
        _print_json({"hits": hits})
        return 0
    if not hits:
        print("no results (is the folder indexed? run `citeline index`)")
    for hit in hits:
        section = f"  § {hit['section']}" if hit["section"] else ""
        print(f"{hit['rank']}. {_location(hit)}  [{hit['score']:.3f}]  {hit['title']}{section}")
        snippet = " ".join(str(hit["text"]).split())
        print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
    return 0


def run_status(args: argparse.Namespace) -> int:
    workspace = _open(args)
    try:
        status = workspace.status()
    finally:
        workspace.close()
    if args.json:
        _print_json(status.to_json())
        return 0
    out = status.to_json()
    rows = {
        "docs": out["docs"],
        "index": out["index"],
        "generation": out["generation"],
        "files": out["files"],
        "chunks": out["chunks"],
        "model": out["models"]["embedding"],
        "dimension": out["dimension"],
        "reranker": out["models"]["reranking"],
        "last_update": out["last_update"],
        "errors": len(out["errors"]),
    }
    for key, value in rows.items():
        print(f"{key:12} {value}")
    for error in out["errors"]:
        print(f"  {error['path']}: {error['message']}")
    return 0


def _citation_line(citation: dict[str, Any], local_copy: str = "same") -> str:
    where = _location(citation)
    if citation["page"] is None and citation["end_line"] not in (None, citation["start_line"]):
        where += f"-{citation['end_line']}"
    section = f"  § {citation['section']}" if citation["section"] else ""
    note = _LOCAL_NOTES.get(local_copy, "")
    return f"[{citation['n']}] {where}{section}{note}"


# How a citation's file here compares with the indexed one (a team index's reader).
_LOCAL_NOTES = {
    "differs": "  (your copy of this file differs from the indexed one)",
    "missing": "  (not in your copy of the documents)",
}


def run_ask(args: argparse.Namespace) -> int:
    from citeline.service.workspace import answer_mode

    workspace = _open(args)
    streamed: list[str] = []

    def on_token(piece: str) -> None:
        streamed.append(piece)
        sys.stdout.write(piece)
        sys.stdout.flush()

    # Only a generated answer streams; any other arrives whole, under its grade.
    live = not args.json and answer_mode(workspace.settings) == "generative"
    try:
        _update_first(workspace, args)
        answer = workspace.ask(args.question, on_token=on_token if live else None)
        copies = workspace.local_copies(c.path for c in answer.citations)
    finally:
        workspace.close()
    result = answer.to_json()
    if args.json:
        _print_json(result)
        return 0
    graded = answer.grade != "answer"  # closest or refused: say so first
    if not streamed:
        if graded:
            print(f"{answer.grade_label}\n")
        print(answer.text, end="")
    elif graded:  # streamed as it came (the extractive text in generative mode)
        print(f"\n\n({answer.grade_label})", end="")
    elif "".join(streamed) != answer.text:  # a generated answer, settled by the check
        print(f"\n\n{_settled_note(answer.mode)}\n{answer.text}", end="")
    print()
    label = _MODE_LABELS.get(answer.mode or "", "")  # "" for a refusal
    if label:
        print(f"\n({label})")
    citations: list[dict[str, Any]] = result["citations"]  # type: ignore[assignment]
    if citations:
        print()
        print("Sources:" if answer.language != "zh" else "出处：")
        for citation in citations:
            print(_citation_line(citation, copies.get(str(citation["path"]), "same")))
    return 0


# Which way an answer was made, in a few words.
_MODE_LABELS = {
    "extractive": "quoted from the documents",
    "generative": "written by the model; every sentence checked against its sources",
}


def _settled_note(mode: str | None) -> str:
    if mode == "extractive":
        return "Not supported by the documents; the documents' own words instead:"
    return "Checked against the sources:"


def run_eval(args: argparse.Namespace) -> int:
    from citeline import cache
    from citeline.evaluation import datasets, runner
    from citeline.evaluation.report import evaluate, summary_lines

    evalset = datasets.load(args.kind, Path(args.path), args.split)
    if args.limit:
        evalset.queries = evalset.queries[: args.limit]
    if evalset.documents is not None:
        work = Path(args.work).expanduser() if args.work else cache.eval_dir()
        docs = runner.corpus_folder(work, evalset)
        runner.write_corpus(evalset, docs)
    elif not args.docs:
        raise ServiceError("citeline eval questions needs --docs DIR")
    else:
        docs = Path(args.docs).expanduser()
    workspace = _open(args, docs, write_collection=True)
    try:
        modes = [m.strip() for m in args.modes.split(",") if m.strip()]
        out = evaluate(workspace, evalset, answers=args.answers, modes=modes, progress=progress)
    finally:
        workspace.close()
    if args.json:
        _print_json(out)
    else:
        for line in summary_lines(out):
            print(line)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    from citeline.lsp.server import serve

    docs = [Path(d).expanduser() for d in args.docs]
    for folder in docs:
        if not folder.is_dir():
            raise ServiceError(f"documents folder {folder} does not exist")
    return serve(
        docs=docs,
        tcp=args.tcp,
        log_file=args.log_file,
        verbose=args.verbose,
        token_file=args.token_file,
        settings=store_overrides(args),
    )


def _samples_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "samples"  # the repository's samples/


def run_demo(args: argparse.Namespace) -> int:
    """Index the bundled samples, search them, and answer a question with citations."""
    args.docs = args.docs or str(_samples_dir())
    args.json = False
    args.no_update = True
    print(f"$ citeline index --docs {args.docs}", flush=True)
    run_index(args)
    args.query = args.question or DEMO_QUERY
    args.k = 3
    print(f"\n$ citeline search {args.query!r}", flush=True)
    run_search(args)
    args.question = args.query
    print(f"\n$ citeline ask {args.question!r}", flush=True)
    return run_ask(args)
