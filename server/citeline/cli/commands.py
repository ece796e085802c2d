"""The commands: each opens what it needs through the service, and prints the result.

Every command prints one JSON object with ``--json``, else a few readable lines.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from citeline import wire
from citeline.cli.progress import progress
from citeline.service.errors import DiskFull, ServiceError

if TYPE_CHECKING:
    from citeline.service.service import Service
    from citeline.service.workspace import Workspace

log = logging.getLogger("citeline")

DEMO_QUERY = "Where does Citeline store its index?"


def store_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The settings --store, --collection and --exact-search stand for.  A team store
    asked for on the command line without its driver installed is the command's error
    (a setting in a file is a warning and the embedded index instead)."""
    index: dict[str, object] = {}
    if getattr(args, "store", None):
        if importlib.util.find_spec("psycopg") is None:
            from citeline.app import TEAM_EXTRA_HINT

            raise ServiceError(TEAM_EXTRA_HINT)
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
    settings, _ = load_settings(docs, overrides, sources=("command line",))
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
    try:
        with progress("indexing") as bar:
            report = workspace.update(progress=bar)
    except DiskFull as exc:  # the index as it is answers
        log.warning("%s; searching the index as it is", exc)
        return
    for path, message in report.errors:
        log.warning("%s: %s", path, message)


def _location(item: Mapping[str, object]) -> str:
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
        "model_reason": out["models"]["embedding_reason"],
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
    note = wire.local_copy_note(local_copy)  # a team index's reader: this copy is not it
    return f"[{citation['n']}] {where}{section}" + (f"  ({note})" if note else "")


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
    label = wire.mode_label(answer.mode, answer.model)  # None for a refusal
    if label:
        note = wire.fallback_note(answer.mode, answer.fallback, answer.degraded)
        print(f"\n({label}" + (f" · {note})" if note else ")"))
    citations: list[dict[str, Any]] = result["citations"]  # type: ignore[assignment]
    if citations:
        print()
        print("Sources:" if answer.language != "zh" else "出处：")
        for citation in citations:
            print(_citation_line(citation, copies.get(str(citation["path"]), "same")))
    return 0


def _settled_note(mode: str | None) -> str:
    if mode == "extractive":
        return "Not supported by the documents; the documents' own words instead:"
    return "Checked against the sources:"


def run_history(args: argparse.Namespace) -> int:
    """List past answers (newest first), show one, delete one, or clear them all."""
    from citeline.service.history import MAX_LIMIT, FolderHistory, page
    from citeline.settings import load_settings

    docs = Path(args.docs).expanduser().absolute()
    if not docs.is_dir():
        raise ServiceError(f"documents folder {docs} does not exist")
    settings, _ = load_settings(docs)
    history = FolderHistory.of(docs, settings)
    if args.action in ("show", "delete") and not args.id:
        raise ServiceError(f"citeline history {args.action} needs the answer's ID")
    if args.action == "list" and args.id:
        raise ServiceError(f"unexpected argument {args.id!r} (citeline history show ID?)")
    if args.action == "show":
        recorded = history.entry(args.id)
        if recorded is None:
            raise ServiceError(f"no past answer {args.id!r} in {docs}")
        if args.json:
            _print_json(recorded.to_json())
        else:
            _print_recorded(recorded.to_json())
        return 0
    if args.action in ("delete", "clear"):
        deleted = history.delete(args.id if args.action == "delete" else None)
        if args.action == "delete" and not deleted:
            raise ServiceError(f"no past answer {args.id!r} in {docs}")
        if args.json:
            _print_json({"deleted": deleted})
        else:
            print(f"deleted {deleted} past answer{'' if deleted == 1 else 's'}")
        return 0
    if not 1 <= args.limit <= MAX_LIMIT:
        raise ServiceError(f"--limit must be between 1 and {MAX_LIMIT}")
    found = page([history], args.query, args.limit)
    if args.json:
        _print_json({"entries": [e.to_json() for e in found.entries], "total": found.total})
        return 0
    if not found.entries:
        print("no past answers" + (f" matching {args.query!r}" if args.query else ""))
    for entry in found.entries:
        sources = f"{entry.sources} source{'' if entry.sources == 1 else 's'}"
        print(f"{entry.id}  {entry.time}  {entry.grade}, {sources}")
        print(f"  {entry.question}")
        print(f"  {entry.preview}")
    if found.total > len(found.entries):
        print(f"({len(found.entries)} of {found.total}; --limit shows more)")
    return 0


def _print_recorded(recorded: dict[str, Any]) -> None:
    print(f"{recorded['time']}  {recorded['question']}")
    print()
    print(recorded["answer"])
    citations: list[dict[str, Any]] = recorded["citations"]
    if citations:
        print()
        print("Sources:")
        for citation in citations:
            note = "  (changed since this answer)" if citation["changed"] else ""
            print(_citation_line(citation) + note)
    if recorded["stale"]:
        print("\n(a source this answer cites has changed or gone since)")


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


def run_mcp(args: argparse.Namespace) -> int:
    docs = [Path(d).expanduser().absolute() for d in args.docs]
    for folder in docs:
        if not folder.is_dir():
            raise ServiceError(f"documents folder {folder} does not exist")
    settings = store_overrides(args)
    streams = None
    if args.attach:
        streams, code = _attach_mcp(args, docs, settings)
        if code is not None:
            return code
    from citeline.app import ModelPool
    from citeline.mcp.server import serve

    return serve(
        docs=docs,
        backends=ModelPool(),
        log_file=args.log_file,
        verbose=args.verbose,
        settings=settings,
        streams=streams,
    )


def _attach_mcp(
    args: argparse.Namespace, docs: list[Path], settings: dict[str, object]
) -> tuple[tuple[BinaryIO, BinaryIO], int | None]:
    """``citeline mcp --attach``: the protocol's streams, and the exit status when this
    process was attached to a ``citeline serve --attach`` daemon serving its folders
    (the ``--docs`` folders, else the current one when it holds a marker) and has
    ended; None when it serves them itself (no such daemon, a refusal, or a team
    store named on the command line, which the daemon would not use)."""
    from citeline.lsp.attach import find_daemon, proxy_mcp
    from citeline.service.selection import marked
    from citeline.stdio import log_to_stderr, protocol_streams

    log_to_stderr(args.log_file, args.verbose, "mcp")
    streams = protocol_streams()
    if settings:
        log.info("--store/--collection: this MCP server serves its folders itself")
        return streams, None
    folders = docs or ([Path.cwd()] if marked(Path.cwd()) else [])
    record = find_daemon(folders)
    if record is None:
        return streams, None
    return streams, proxy_mcp(record, *streams)


async def mcp_host(
    service: Service, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """What a ``serve --attach`` daemon runs for an attached ``citeline mcp``: the MCP
    front end over the connection, with the daemon's service (the MCP SDK is imported
    at the first one, off the event loop)."""
    serve_connection = await asyncio.to_thread(_mcp_connection_server)
    await serve_connection(service, reader, writer)


def _mcp_connection_server() -> Callable[
    [Service, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]
]:
    from citeline.mcp.server import serve_connection

    return serve_connection


def run_serve(args: argparse.Namespace) -> int:
    from citeline.app import ModelPool
    from citeline.lsp.server import serve

    docs = [Path(d).expanduser() for d in args.docs]
    for folder in docs:
        if not folder.is_dir():
            raise ServiceError(f"documents folder {folder} does not exist")
    return serve(
        docs=docs,
        backends=ModelPool(),
        tcp=args.tcp,
        log_file=args.log_file,
        verbose=args.verbose,
        token_file=args.token_file,
        settings=store_overrides(args),
        attach=args.attach,
        mcp_host=mcp_host,
    )


def run_doctor(args: argparse.Namespace) -> int:
    """What works and what is missing, with the fix for each: exit 0 when all is well."""
    from citeline import doctor

    folders = [Path(d) for d in args.docs]
    if not folders and any(Path(marker).exists() for marker in doctor.MARKERS):
        folders = [Path.cwd()]
    report = doctor.run(folders)
    if args.json:
        _print_json(report.to_json())
        return 0 if report.ok else 1
    for check in report.checks:
        print(f"{check.level:8} {check.area:10} {check.summary}")
        if check.fix:
            print(f"{'':8} {'':10} fix: {check.fix}")
    problems = sum(check.level == "problem" for check in report.checks)
    print("\nall is well" if report.ok else f"\n{problems} problem(s): see the fixes above")
    return 0 if report.ok else 1


def _samples_dir() -> Path:
    """The sample documents the demo indexes: in a checkout, the repository's
    ``samples/`` (``citeline/samples`` links to it); from an installed wheel, a copy
    of its package data in the cache, so the index is not written into site-packages."""
    from citeline.demo import demo_documents

    return demo_documents()


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
