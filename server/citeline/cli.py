"""The command-line front end: index, search, status, demo.

The only module allowed to print.  Expected problems (missing folder, bad
model, damaged index) are one line on stderr and exit status 2, never a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from citeline import __version__

if TYPE_CHECKING:
    from citeline.app import Workspace
    from citeline.core.answering.results import Answer

log = logging.getLogger("citeline")

EXIT_ERROR = 2


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="citeline: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )


class _ProgressBar:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self.started = time.perf_counter()
        self.drawn = False

    def __call__(self, done: int, total: int, path: str) -> None:
        if not self.enabled or total == 0:
            return
        width = 30
        filled = int(width * done / total)
        elapsed = time.perf_counter() - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        name = path if len(path) <= 40 else "…" + path[-39:]
        sys.stderr.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
            f" {rate:.1f} files/s {name:<40}"
        )
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _docs(args: argparse.Namespace) -> Path:
    return Path(args.docs).expanduser()


def _open(args: argparse.Namespace, docs: Path | None = None) -> Workspace:
    """The folder's workspace: settings from citeline.toml, then --model and --reranker."""
    from citeline.app import open_workspace
    from citeline.settings import load_settings

    docs = docs if docs is not None else _docs(args)
    if not docs.is_dir():
        raise _UserError(f"documents folder {docs} does not exist")
    overrides: dict[str, object] = {}
    if getattr(args, "model", None):
        overrides["embedding"] = {"model": args.model}
    if getattr(args, "reranker", None):
        overrides["reranking"] = {"model": args.reranker}
    settings, _ = load_settings(docs, overrides)
    return open_workspace(docs, settings)


@contextlib.contextmanager
def _progress(label: str) -> Iterator[_ProgressBar]:
    bar = _ProgressBar(label)
    try:
        yield bar
    finally:
        bar.close()


class _UserError(Exception):
    pass


def _run_index(args: argparse.Namespace) -> int:
    workspace = _open(args)
    try:
        with _progress("indexing") as bar:
            report = workspace.update(progress=bar)
    finally:
        workspace.close()
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        print(
            f"{report.files} files, {report.chunks} chunks: {report.embedded} embedded,"
            f" {report.reused} reused, {report.removed} removed in {report.seconds:.1f}s"
        )
        for path, message in report.errors:
            print(f"  {path}: {message}")
    return 0


def _update_first(workspace: Workspace, args: argparse.Namespace) -> None:
    """Bring the index up to date before answering: cheap when nothing changed."""
    if args.no_update:
        return
    with _progress("indexing") as bar:
        report = workspace.update(progress=bar)
    for path, message in report.errors:
        log.warning("%s: %s", path, message)


def _location(hit: dict[str, object]) -> str:
    if hit["page"] is not None:
        return f"{hit['path']} (page {hit['page']})"
    if hit["start_line"] is not None:
        return f"{hit['path']}:{hit['start_line']}"
    return str(hit["path"])


def _run_search(args: argparse.Namespace) -> int:
    workspace = _open(args)
    try:
        _update_first(workspace, args)
        hits = workspace.retriever.search(args.query, k=args.k or workspace.settings.search.top_k)
    finally:
        workspace.close()
    results = [h.to_json() for h in hits]
    if args.json:
        print(json.dumps({"hits": results}, ensure_ascii=False))
        return 0
    if not results:
        print("no results (is the folder indexed? run `citeline index`)")
    for hit in results:
        section = f"  § {hit['section']}" if hit["section"] else ""
        print(f"{hit['rank']}. {_location(hit)}  [{hit['score']:.3f}]  {hit['title']}{section}")
        snippet = " ".join(str(hit["text"]).split())
        print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
    return 0


def _run_status(args: argparse.Namespace) -> int:
    from citeline.app import reranker_name

    workspace = _open(args)
    try:
        counts = workspace.index.counts()
        last = workspace.index.last_update()
        status = {
            "docs": str(workspace.docs_root),
            "index": workspace.index.location,
            "files": counts.files,
            "chunks": counts.chunks,
            "model": workspace.embedder.name,
            "dimension": workspace.embedder.dimension,
            "reranker": reranker_name(workspace.settings.reranking),
            "chunking": workspace.settings.chunking.fingerprint(),
            "last_update": (
                time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(last)) if last else None
            ),
            "errors": [{"path": p, "message": m} for p, m in workspace.index.file_errors()],
        }
    finally:
        workspace.close()
    if args.json:
        print(json.dumps(status, ensure_ascii=False))
    else:
        keys = ("docs", "index", "files", "chunks", "model", "dimension", "reranker", "last_update")
        for key in keys:
            print(f"{key:12} {status[key]}")
        errors = status["errors"]
        assert isinstance(errors, list)
        print(f"{'errors':12} {len(errors)}")
        for error in errors:
            print(f"  {error['path']}: {error['message']}")
    return 0


def _citation_line(citation: dict[str, object]) -> str:
    where = _location(citation)
    if citation["page"] is None and citation["end_line"] not in (None, citation["start_line"]):
        where += f"-{citation['end_line']}"
    section = f"  § {citation['section']}" if citation["section"] else ""
    return f"[{citation['n']}] {where}{section}"


def _run_ask(args: argparse.Namespace) -> int:
    workspace = _open(args)
    streamed: list[str] = []

    def on_token(piece: str) -> None:
        streamed.append(piece)
        sys.stdout.write(piece)
        sys.stdout.flush()

    try:
        _update_first(workspace, args)
        answer = workspace.ask(args.question, on_token=None if args.json else on_token)
    finally:
        workspace.close()
    result = answer.to_json()
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
        return 0
    if not streamed:
        print(answer.text, end="")
    elif "".join(streamed) != answer.text:  # a generated answer, settled by the check
        print(f"\n\n{_settled_note(answer)}\n{answer.text}", end="")
    print()
    label = _mode_label(answer)
    if label:
        print(f"\n({label})")
    citations = result["citations"]
    assert isinstance(citations, list)
    if citations:
        print()
        print("Sources:" if answer.language != "zh" else "出处：")
        for citation in citations:
            print(_citation_line(citation))
    return 0


_MODE_LABELS = {
    "extractive": "quoted from the documents",
    "generative": "written by the model; every sentence checked against its sources",
}


def _mode_label(answer: Answer) -> str:
    """Which way the answer was made, in a few words ("" for a refusal)."""
    return _MODE_LABELS.get(answer.mode or "", "")


def _settled_note(answer: Answer) -> str:
    if answer.mode == "extractive":
        return "Not supported by the documents; the documents' own words instead:"
    return "Checked against the sources:"


def _run_serve(args: argparse.Namespace) -> int:
    from citeline.lsp.server import serve

    docs = [Path(d).expanduser() for d in args.docs]
    for folder in docs:
        if not folder.is_dir():
            raise _UserError(f"documents folder {folder} does not exist")
    return serve(docs=docs, tcp=args.tcp, log_file=args.log_file, verbose=args.verbose)


def _run_eval(args: argparse.Namespace) -> int:
    from citeline.evaluation import datasets, runner
    from citeline.evaluation.off_topic import OFF_TOPIC_QUESTIONS

    kind = args.kind
    try:
        if kind == "beir":
            evalset = datasets.load_beir(Path(args.path), args.split)
        elif kind == "squad":
            evalset = datasets.load_squad(Path(args.path))
        else:
            evalset = datasets.load_questions(Path(args.path))
    except datasets.DatasetError as exc:
        raise _UserError(str(exc)) from exc
    if args.limit:
        evalset.queries = evalset.queries[: args.limit]
    if evalset.documents is not None:
        cache = Path(args.work).expanduser() if args.work else _cache_dir() / "eval"
        docs = runner.corpus_folder(cache, evalset)
        runner.write_corpus(evalset, docs)
    else:
        if not args.docs:
            raise _UserError("citeline eval questions needs --docs DIR")
        docs = Path(args.docs).expanduser()
        if not docs.is_dir():
            raise _UserError(f"documents folder {docs} does not exist")
    workspace = _open(args, docs)
    settings = workspace.settings
    try:
        with _progress("indexing") as bar:
            report = workspace.update(progress=bar)
        with _progress("querying") as bar:
            methods = runner.methods(workspace)
            results = runner.run_retrieval(workspace, evalset, methods, progress=bar)
        out: dict[str, object] = {
            "dataset": evalset.name,
            "queries": len(evalset.queries),
            "documents": report.files,
            "chunks": report.chunks,
            "index_seconds": round(report.seconds, 2),
            "embedded": report.embedded,
        }
        for method, result in results.items():
            block: dict[str, object] = {
                k: round(v, 4) for k, v in result.metrics(evalset.queries).items()
            }
            block["latency"] = result.latency()
            block["per_query_ms"] = result.per_query_ms()
            out[method] = block
        answer_settings = settings.answer
        out["refusal"] = {
            # what the answer stage sees: reranked hits when a reranker is configured
            **runner.refusal_rates(evalset, results[methods[-1]], answer_settings),
            "off_topic_refused": runner.off_topic_refused(
                workspace, OFF_TOPIC_QUESTIONS, answer_settings
            ),
            "min_score": answer_settings.min_score,
            "min_keyword_score": answer_settings.min_keyword_score,
            "min_keyword_score_cjk": answer_settings.min_keyword_score_cjk,
        }
        if args.answers:
            from citeline.evaluation.answers import MODES, run_answers

            modes = [m.strip() for m in args.modes.split(",") if m.strip()]
            unknown = [m for m in modes if m not in MODES]
            if unknown or not modes:
                raise _UserError(f"--modes: use {' and/or '.join(MODES)}, not {args.modes!r}")
            with _progress("answering") as bar:
                out["answers"] = run_answers(workspace, evalset, args.answers, modes, bar)
    finally:
        workspace.close()
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    print(
        f"{out['dataset']}: {out['queries']} queries, {out['documents']} documents,"
        f" {out['chunks']} chunks (indexed in {out['index_seconds']}s)"
    )
    names = ["ndcg@10", "recall@5", "recall@10", "mrr@10", "hit@1", "hit@5", "hit@10"]
    print(f"{'method':8} " + " ".join(f"{n:>9}" for n in names) + f" {'p50 ms':>8} {'p95 ms':>8}")
    for method in methods:
        row = out[method]
        assert isinstance(row, dict)
        latency = row["latency"]
        print(
            f"{method:8} "
            + " ".join(f"{row[n]:>9.4f}" for n in names)
            + f" {latency['p50_ms']:>8.1f} {latency['p95_ms']:>8.1f}"
        )
    refusal = out["refusal"]
    assert isinstance(refusal, dict)
    print(
        f"refusal: answerable refused {refusal['answerable_refused']:.1%},"
        f" relevant-removed refused {refusal['relevant_removed_refused']:.1%},"
        f" off-topic refused {refusal['off_topic_refused']:.1%}"
    )
    answers = out.get("answers")
    if isinstance(answers, dict):
        for mode, figures in answers.items():
            print(f"answers ({mode}): {json.dumps(figures)}")
    return 0


def _cache_dir() -> Path:
    base = os.environ.get("CITELINE_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "citeline"


DEMO_QUERY = "Where does Citeline store its index?"


def _samples_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "samples"


def _run_demo(args: argparse.Namespace) -> int:
    """Index the bundled samples, search them, and answer a question with citations."""
    args.docs = args.docs or str(_samples_dir())
    args.json = False
    args.no_update = True
    print(f"$ citeline index --docs {args.docs}", flush=True)
    _run_index(args)
    args.query = args.question or DEMO_QUERY
    args.k = 3
    print(f"\n$ citeline search {args.query!r}", flush=True)
    _run_search(args)
    args.question = args.query
    print(f"\n$ citeline ask {args.question!r}", flush=True)
    return _run_ask(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citeline",
        description="Ask questions of your own documents and get answers that cite the place.",
    )
    parser.add_argument("--version", action="version", version=f"citeline {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def docs_option(p: argparse.ArgumentParser, default: str | None = ".") -> None:
        p.add_argument("--docs", default=default, help="documents folder (default: current)")
        p.add_argument("--model", help="GGUF embedding model (default: bundled MiniLM)")
        p.add_argument("--reranker", help="GGUF reranker model (default: none)")

    p = sub.add_parser("index", help="build or update the index of a documents folder")
    docs_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_run_index)

    p = sub.add_parser("search", help="search the indexed documents")
    p.add_argument("query")
    docs_option(p)
    p.add_argument("-k", type=int, default=0, help="number of results")
    p.add_argument("--no-update", action="store_true", help="do not update the index first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_run_search)

    p = sub.add_parser("ask", help="answer a question from the documents, with citations")
    p.add_argument("question")
    docs_option(p)
    p.add_argument("--no-update", action="store_true", help="do not update the index first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_run_ask)

    p = sub.add_parser("status", help="what the index holds")
    docs_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_run_status)

    p = sub.add_parser("serve", help="run the language server (LSP over stdio by default)")
    p.add_argument("--docs", action="append", default=[], help="documents folder (repeatable)")
    p.add_argument("--tcp", metavar="[HOST:]PORT", help="serve over TCP (default host 127.0.0.1)")
    p.add_argument("--log-file", help="also write the log to this file")
    p.add_argument("--stdio", action="store_true", help="serve over stdio (the default)")
    p.set_defaults(run=_run_serve)

    p = sub.add_parser("eval", help="measure retrieval quality on a benchmark or your questions")
    p.add_argument("kind", choices=["beir", "squad", "questions"])
    p.add_argument("path", help="BEIR folder, SQuAD JSON file, or questions JSONL file")
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    p.add_argument("--docs", help="documents folder (for `questions`)")
    p.add_argument("--model", help="GGUF embedding model (default: bundled MiniLM)")
    p.add_argument("--reranker", help="GGUF reranker model: adds a `reranked` block")
    p.add_argument("--limit", type=int, default=0, help="only the first N queries")
    p.add_argument(
        "--answers",
        type=int,
        default=0,
        metavar="N",
        help="also answer the first N questions and score the answers",
    )
    p.add_argument(
        "--modes",
        default="extractive,generative",
        help="answer modes to score with --answers (default: extractive,generative)",
    )
    p.add_argument("--work", help="where benchmark corpora are written and indexed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=_run_eval)

    p = sub.add_parser("demo", help="index the bundled sample documents, search and ask them")
    docs_option(p, default=None)
    p.add_argument("question", nargs="?", default=None)
    p.set_defaults(run=_run_demo)
    return parser


def _expected_errors() -> tuple[type[BaseException], ...]:
    from citeline.app import WorkspaceError
    from citeline.backends.llama.encoder import LlamaModelError
    from citeline.backends.llama.generator import GenerationError
    from citeline.core.store import StoreError
    from citeline.models import ModelError

    # LlamaModelError: the embedding model or the reranker
    return (_UserError, WorkspaceError, LlamaModelError, GenerationError, StoreError, ModelError)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except _expected_errors() as exc:
        print(f"citeline: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("citeline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
