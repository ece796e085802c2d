"""The commands, run as a user runs them: a separate process, real model, real files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.models.minilm import default_embedding_model_path
from conftest import SAMPLES, copy_samples
from corpora import KITCHEN, write_files

CLI = [sys.executable, "-m", "citeline.cli"]


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture()
def samples(tmp_path: Path) -> Path:
    docs = tmp_path / "samples"
    copy_samples(docs)
    return docs


def test_index_search_status_json(samples: Path) -> None:
    report = json.loads(run("index", "--docs", str(samples), "--json").stdout)
    assert report["files"] >= 8 and report["chunks"] > 20
    assert report["embedded"] == report["chunks"] and report["reused"] == 0
    assert report["removed"] == 0 and report["errors"] == []

    again = json.loads(run("index", "--docs", str(samples), "--json").stdout)
    assert again["embedded"] == 0 and again["chunks"] == report["chunks"]

    out = json.loads(
        run("search", "encrypted PDF", "--docs", str(samples), "-k", "3", "--json").stdout
    )
    hits = out["hits"]
    assert [h["rank"] for h in hits] == [1, 2, 3]
    assert set(hits[0]) >= {
        "rank",
        "score",
        "path",
        "title",
        "section",
        "page",
        "start_line",
        "end_line",
        "text",
    }
    assert all("\\" not in h["path"] and not h["path"].startswith("/") for h in hits)
    for h in hits:
        if h["page"] is None:
            assert 1 <= h["start_line"] <= h["end_line"]
            lines = (samples / h["path"]).read_text().splitlines()
            first_words = h["text"].split()[0]
            cited = "\n".join(lines[h["start_line"] - 1 : h["end_line"]])
            assert first_words in cited
        else:
            assert h["page"] >= 1 and h["start_line"] is None

    status = json.loads(run("status", "--docs", str(samples), "--json").stdout)
    assert status["files"] == report["files"] and status["chunks"] == report["chunks"]
    assert status["dimension"] == 384 and status["models"]["embedding"].endswith(".gguf")
    assert status["last_update"] and status["errors"] == []
    assert status["state"] == "ready" and status["docs"] == str(samples.resolve())


def test_ask_shows_the_grade(samples: Path) -> None:
    run("index", "--docs", str(samples))
    found = json.loads(
        run("ask", "Where does Citeline store its index?", "--docs", str(samples), "--json").stdout
    )
    assert found["grade"] == "answer" and found["grade_label"] == "Answer"
    assert found["refused"] is False and found["mode"] == "extractive" and found["citations"]
    text = run("ask", "Where does Citeline store its index?", "--docs", str(samples)).stdout
    assert not text.startswith(("Closest", "Not found"))  # an answer needs no label
    assert ".citeline" in text and "Sources:" in text

    off = "Who painted the ceiling of the Sistine Chapel?"
    refused = json.loads(run("ask", off, "--docs", str(samples), "--json").stdout)
    assert (refused["grade"], refused["refused"], refused["refusal"]) == (
        "refused",
        True,
        "off_topic",
    )
    lines = run("ask", off, "--docs", str(samples)).stdout.splitlines()
    assert lines[0] == "Not found in the documents" and lines[1] == ""
    assert lines[2].startswith("The documents do not contain the answer")


def test_search_with_a_reranker(samples: Path, reranker_path: Path) -> None:
    out = json.loads(
        run(
            "search",
            "encrypted PDF",
            "--docs",
            str(samples),
            "-k",
            "3",
            "--json",
            "--reranker",
            str(reranker_path),
        ).stdout
    )
    assert [h["rank"] for h in out["hits"]] == [1, 2, 3]
    scores = [h["rerank"] for h in out["hits"]]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    status = json.loads(
        run("status", "--docs", str(samples), "--json", "--reranker", str(reranker_path)).stdout
    )
    assert status["models"]["reranking"] == reranker_path.name


def test_readable_search_has_clickable_locations(samples: Path) -> None:
    run("index", "--docs", str(samples))
    out = run("search", "Where is the index stored?", "--docs", str(samples)).stdout
    first = out.splitlines()[0]
    assert first.startswith("1. ") and (".md:" in first or "page" in first)


def test_expected_errors_are_one_line(tmp_path: Path) -> None:
    missing = run("index", "--docs", str(tmp_path / "nope"), check=False)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip().count("\n") == 0 and "does not exist" in missing.stderr

    (tmp_path / "d").mkdir()
    bad_model = run(
        "index", "--docs", str(tmp_path / "d"), "--model", str(tmp_path / "m.gguf"), check=False
    )
    assert bad_model.returncode == 2 and "m.gguf" in bad_model.stderr
    assert "Traceback" not in bad_model.stderr and bad_model.stderr.strip().count("\n") == 0

    index_dir = tmp_path / "d" / ".citeline"
    index_dir.mkdir()
    (index_dir / "index.sqlite3").write_bytes(b"garbage" * 1000)
    corrupt = run("status", "--docs", str(tmp_path / "d"), check=False)
    # A damaged index is derived data: moved aside and rebuilt, said once on stderr.
    assert corrupt.returncode == 0 and "damaged" in corrupt.stderr
    assert "moved it aside" in corrupt.stderr and corrupt.stderr.strip().count("\n") == 0
    assert "Traceback" not in corrupt.stderr
    assert [p.name.split("-")[0] for p in index_dir.glob("*.damaged-*")] == [
        "index.sqlite3.damaged"
    ]

    (tmp_path / "r").mkdir()
    embedding_model = default_embedding_model_path()  # an embedding model is no reranker
    for path, message in (
        (tmp_path / "r.gguf", "does not exist"),
        (embedding_model, "not a reranker"),
    ):
        bad = run(
            "search", "x", "--docs", str(tmp_path / "r"), "--reranker", str(path), check=False
        )
        # A reranker that cannot be used is one warning, and the search runs without it.
        assert bad.returncode == 0 and message in bad.stderr and path.name in bad.stderr
        assert "Traceback" not in bad.stderr and bad.stderr.strip().count("\n") == 0


def test_kill_9_mid_run_leaves_a_usable_index_that_the_next_run_completes(tmp_path: Path) -> None:
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(120):
        body = "\n\n".join(
            f"Document {i} paragraph {j} describes subsystem {i * 7 + j} and its failure mode {j}."
            for j in range(6)
        )
        (docs / f"doc{i:03}.md").write_text(f"# Doc {i}\n\n{body}\n")
    proc = subprocess.Popen(
        [*CLI, "index", "--docs", str(docs)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    db_path = docs / ".citeline" / "index.sqlite3"
    deadline = time.time() + 300
    committed = 0
    while time.time() < deadline and proc.poll() is None:
        if db_path.exists():
            try:
                with sqlite3.connect(db_path, timeout=1) as db:
                    committed = db.execute("SELECT count(*) FROM files").fetchone()[0]
            except sqlite3.Error:
                committed = 0
            if 5 <= committed < 100:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "indexing finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    # the interrupted index opens and answers
    status = json.loads(run("status", "--docs", str(docs), "--json").stdout)
    assert 0 < status["files"] < 120
    hits = json.loads(
        run("search", "subsystem failure mode", "--docs", str(docs), "--json").stdout
    )["hits"]
    assert hits

    # the next run completes it, without duplicates or orphans
    report = json.loads(run("index", "--docs", str(docs), "--json").stdout)
    assert report["files"] == 120 and report["errors"] == []
    with sqlite3.connect(db_path) as db:
        assert (
            db.execute(
                "SELECT count(*) FROM (SELECT file_id, ordinal FROM chunks"
                " GROUP BY file_id, ordinal HAVING count(*) > 1)"
            ).fetchone()[0]
            == 0
        )
        assert (
            db.execute(
                "SELECT count(*) FROM chunks WHERE file_id NOT IN (SELECT id FROM files)"
            ).fetchone()[0]
            == 0
        )
        assert (
            db.execute(
                "SELECT count(*) FROM chunks WHERE vector_key NOT IN (SELECT key FROM vectors)"
            ).fetchone()[0]
            == 0
        )
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert report["chunks"] == chunks == 120 * 1  # each small doc is one chunk
    fresh = tmp_path / "fresh"
    shutil.copytree(docs, fresh, ignore=shutil.ignore_patterns(".citeline"))
    assert json.loads(run("index", "--docs", str(fresh), "--json").stdout)["chunks"] == chunks


def test_the_demo_finds_the_bundled_samples() -> None:
    from citeline.cli.commands import _samples_dir

    assert _samples_dir() == SAMPLES and (SAMPLES / "getting-started.md").is_file()


# What a search must not import: the PDF parser (PyMuPDF imports an ONNX layout model,
# 1.7 s), the other parsers, the language server, the answer stage and the other models.
NOT_FOR_A_SEARCH = (
    "pymupdf",
    "fitz",
    "markdown_it",
    "citeline.core.loaders.pdf",
    "citeline.core.loaders.markdown",
    "pygls",
    "lsprotocol",
    "watchdog",
    "citeline.core.answering.flow",
    "citeline.backends.llama.generator",
    "citeline.backends.llama.reranker",
    "gguf",
    "llama_cpp.llama",  # llama-cpp-python's high-level API: a search uses its C API only
    "jinja2",
)


def test_a_search_imports_only_what_it_uses(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nThe vault key rotates every quarter.\n")
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    run("index", "--docs", str(docs))
    probe = (
        "import json, sys; from citeline.cli import main;"
        f"code = main(['search', 'vault key', '--docs', {str(docs)!r}, '--json']);"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('pymupdf', 'fitz', 'markdown_it', 'pygls', 'lsprotocol', 'watchdog', 'gguf',"
        " 'llama_cpp', 'jinja2')"
        " or m.startswith('citeline.'))), file=sys.stderr); sys.exit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["path"] == "notes.md"
    imported = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert imported & set(NOT_FOR_A_SEARCH) == set()


def test_history_lists_shows_deletes_and_clears_past_answers(tmp_path: Path) -> None:
    docs = write_files(tmp_path / "kitchen", KITCHEN)
    question = "How often is the coffee machine descaled?"
    given = json.loads(run("ask", question, "--docs", str(docs), "--json").stdout)
    run("ask", "How long is the dough kneaded?", "--docs", str(docs), "--json")

    listed = json.loads(run("history", "--docs", str(docs), "--json").stdout)
    assert listed["total"] == 2
    bread, coffee = listed["entries"]
    assert coffee["question"] == question and coffee["folder"] == str(docs.absolute())
    assert coffee["sources"] == len(given["citations"])
    found = json.loads(run("history", "--docs", str(docs), "--query", "COFFEE", "--json").stdout)
    assert [e["id"] for e in found["entries"]] == [coffee["id"]]
    readable = run("history", "--docs", str(docs), "--limit", "1").stdout
    assert bread["id"] in readable and coffee["id"] not in readable and "1 of 2" in readable

    shown = json.loads(run("history", "show", coffee["id"], "--docs", str(docs), "--json").stdout)
    assert shown["answer"] == given["answer"] and shown["stale"] is False
    assert [c["start_line"] for c in shown["citations"]] == [
        c["start_line"] for c in given["citations"]
    ]
    (docs / "kitchen.md").write_text("# Kitchen handbook\n\nAll new.\n")
    readable = run("history", "show", coffee["id"], "--docs", str(docs)).stdout
    assert "changed since this answer" in readable and given["answer"] in readable

    assert run("history", "delete", coffee["id"], "--docs", str(docs)).stdout.startswith(
        "deleted 1 past answer"
    )
    missing = run("history", "show", coffee["id"], "--docs", str(docs), check=False)
    assert missing.returncode == 2 and "no past answer" in missing.stderr
    assert "Traceback" not in missing.stderr
    cleared = json.loads(run("history", "clear", "--docs", str(docs), "--json").stdout)
    assert cleared == {"deleted": 1}
    assert "no past answers" in run("history", "--docs", str(docs)).stdout
    bad = run("history", "show", "--docs", str(docs), check=False)
    assert bad.returncode == 2 and "needs the answer's ID" in bad.stderr


def test_index_on_a_folder_another_process_indexes_says_it_waits_and_for_whom(
    tmp_path: Path,
) -> None:
    import fcntl
    import select

    docs = tmp_path / "docs"
    write_files(docs, KITCHEN)
    run("index", "--docs", str(docs))
    (docs / "more.md").write_text("# More\n\nThe oven is preheated to 230 degrees.\n")
    # The write lock a daemon holds while it indexes, with what it writes into it.
    fd = os.open(docs / ".citeline" / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, f"pid {os.getpid()}: citeline serve".encode(), 0)
    proc = subprocess.Popen(
        [*CLI, "index", "--docs", str(docs)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert select.select([proc.stderr], [], [], 300)[0], "nothing said while it waits"
        first = proc.stderr.readline()  # it says so while it waits, not after
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    _, rest = proc.communicate(timeout=600)
    assert proc.returncode == 0, rest
    assert "waiting" in first and "waiting" not in rest  # one line
    assert f"pid {os.getpid()}: citeline serve" in first and "is indexing" in first
    assert "goes on when it has committed its batch" in first
    status = json.loads(run("status", "--docs", str(docs), "--json").stdout)
    assert status["files"] == len(KITCHEN) + 1
