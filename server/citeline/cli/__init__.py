"""The command-line front end: index, search, ask, status, history, eval, serve, doctor, demo.

The only package allowed to print.  ``commands`` parses nothing: each command
opens a folder's :class:`~citeline.service.workspace.Workspace` through the
composition root, calls it and prints what comes back.  Expected problems
(``citeline.service.errors``: a missing folder, a bad model, a damaged index)
are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from collections.abc import Callable, Sequence

from citeline import __version__
from citeline.cli import commands
from citeline.platforms import unsupported_reason
from citeline.service.errors import EXPECTED_ERRORS

EXIT_ERROR = 2
MODEL_HELP = (
    "embedding model: all-MiniLM-L6-v2, multilingual-e5-small or a GGUF file"
    " (default: chosen by the documents)"
)


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="citeline: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citeline",
        description="Ask questions of your own documents and get answers that cite the place.",
    )
    parser.add_argument("--version", action="version", version=f"citeline {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def store_options(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--store",
            metavar="URL",
            help="a team index: postgresql://[user@]host[:port]/database (credentials from"
            " PGPASSWORD, ~/.pgpass or a service file, never the command line)",
        )
        command.add_argument("--collection", help="the team index's collection (default: default)")

    def docs_option(command: argparse.ArgumentParser, default: str | None = ".") -> None:
        command.add_argument("--docs", default=default, help="documents folder (default: current)")
        command.add_argument("--model", help=MODEL_HELP)
        command.add_argument("--reranker", help="GGUF reranker model (default: none)")
        store_options(command)

    def seed_option(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--seed-from",
            metavar="DIR",
            help="team index: first copy the vectors of this embedded index (a documents"
            " folder or its .citeline) built with the same model, so they are not embedded again",
        )

    def json_option(command: argparse.ArgumentParser) -> None:
        command.add_argument("--json", action="store_true", help="print one JSON object")

    def no_update_option(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "--no-update", action="store_true", help="do not update the index first"
        )

    command = sub.add_parser(
        "index",
        help="build or update the index of a documents folder (with --store: write the team"
        " collection from this checkout)",
    )
    docs_option(command)
    seed_option(command)
    json_option(command)
    command.set_defaults(run=commands.run_index)

    command = sub.add_parser("search", help="search the indexed documents")
    command.add_argument("query")
    docs_option(command)
    command.add_argument("-k", type=int, default=0, help="number of results")
    no_update_option(command)
    json_option(command)
    command.set_defaults(run=commands.run_search)

    command = sub.add_parser("ask", help="answer a question from the documents, with citations")
    command.add_argument("question")
    docs_option(command)
    no_update_option(command)
    json_option(command)
    command.set_defaults(run=commands.run_ask)

    command = sub.add_parser("status", help="what the index holds")
    docs_option(command)
    json_option(command)
    command.set_defaults(run=commands.run_status)

    command = sub.add_parser(
        "history",
        help="past answers: list them (newest first), show one, delete one or clear them",
    )
    command.add_argument(
        "action",
        nargs="?",
        default="list",
        choices=["list", "show", "delete", "clear"],
        help="list (the default), show ID, delete ID, or clear (every past answer)",
    )
    command.add_argument("id", nargs="?", help="the past answer's id (show, delete)")
    command.add_argument("--docs", default=".", help="documents folder (default: current)")
    command.add_argument("--query", help="only answers whose question or answer holds this")
    command.add_argument("--limit", type=int, default=50, help="at most N entries (default 50)")
    json_option(command)
    command.set_defaults(run=commands.run_history)

    command = sub.add_parser("serve", help="run the language server (LSP over stdio by default)")
    command.add_argument(
        "--docs", action="append", default=[], help="documents folder (repeatable)"
    )
    command.add_argument(
        "--tcp", metavar="[HOST:]PORT", help="serve over TCP (default host 127.0.0.1)"
    )
    command.add_argument(
        "--token-file",
        metavar="PATH",
        help="with --tcp: where to write the client token ({port} is replaced;"
        " default: $XDG_RUNTIME_DIR/citeline/tcp-{port}.token)",
    )
    command.add_argument("--log-file", help="also write the log to this file")
    command.add_argument("--stdio", action="store_true", help="serve over stdio (the default)")
    command.add_argument(
        "--attach",
        action="store_true",
        help="one server per folder: attach to a running `serve --attach` that serves this"
        " window's folders (no second model load), else serve them and let later windows"
        " attach (stdio only)",
    )
    store_options(command)
    command.set_defaults(run=commands.run_serve)

    command = sub.add_parser(
        "mcp",
        help="run the MCP server over stdio (search, ask and status tools for coding agents)",
    )
    command.add_argument(
        "--docs",
        action="append",
        default=[],
        help="documents folder (repeatable; default: the current folder when it holds"
        " citeline.toml or .citeline/)",
    )
    command.add_argument("--log-file", help="also write the log to this file")
    command.add_argument(
        "--attach",
        action="store_true",
        help="attach to a running `citeline serve --attach` that serves these folders (no"
        " model load of its own), else serve them here",
    )
    store_options(command)
    command.set_defaults(run=commands.run_mcp)

    command = sub.add_parser(
        "eval", help="measure retrieval quality on a benchmark or your questions"
    )
    command.add_argument("kind", choices=["beir", "squad", "questions"])
    command.add_argument("path", help="BEIR folder, SQuAD JSON file, or questions JSONL file")
    command.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    command.add_argument("--docs", help="documents folder (for `questions`)")
    command.add_argument("--model", help=MODEL_HELP)
    command.add_argument("--reranker", help="GGUF reranker model: adds a `reranked` block")
    command.add_argument("--limit", type=int, default=0, help="only the first N queries")
    command.add_argument(
        "--answers",
        type=int,
        default=0,
        metavar="N",
        help="also answer the first N questions and score the answers",
    )
    command.add_argument(
        "--modes",
        default="extractive,generative",
        help="answer modes to score with --answers (default: extractive,generative)",
    )
    command.add_argument("--work", help="where benchmark corpora are written and indexed")
    store_options(command)
    seed_option(command)
    command.add_argument(
        "--exact-search",
        action="store_true",
        help="team index: exact vector search instead of the HNSW index (to measure it)",
    )
    json_option(command)
    command.set_defaults(run=commands.run_eval)

    command = sub.add_parser(
        "doctor", help="check what Citeline needs (Python, llama.cpp, models, folders): fixes"
    )
    command.add_argument(
        "--docs",
        action="append",
        default=[],
        help="a documents folder to check (repeatable; default: the current folder if it"
        " has citeline.toml or .citeline/)",
    )
    json_option(command)
    command.set_defaults(run=commands.run_doctor)

    command = sub.add_parser("demo", help="index the bundled sample documents, search and ask them")
    docs_option(command, default=None)
    command.add_argument("question", nargs="?", default=None)
    command.set_defaults(run=commands.run_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # A file name that is not valid UTF-8 is kept as Python keeps it (lone surrogates);
    # printed, it is escaped ("bad\\udcff.md"): readable, exact, and valid in JSON.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    if (reason := unsupported_reason()) is not None:
        print(f"citeline: error: {reason}", file=sys.stderr)
        return EXIT_ERROR
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except EXPECTED_ERRORS as exc:
        print(f"citeline: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("citeline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
