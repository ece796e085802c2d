"""A real editor: Emacs (batch) with eglot and the Citeline client in
editor-clients/emacs asks a question and follows a citation.

Needs `emacs` with eglot (scripts/install-editors.sh installs both).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from answer_checks import QUOTED_LABEL, assert_extractive, copied_markdown, flat
from lsp_harness import READY_TIMEOUT, REPO, make_corpus

EMACS = shutil.which("emacs")


def _has_eglot() -> bool:
    if EMACS is None:
        return False
    probe = subprocess.run(
        [EMACS, "--batch", "--eval", "(progn (package-initialize) (require 'eglot))"],
        capture_output=True,
        timeout=120,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _has_eglot(), reason="emacs with eglot is not installed (run scripts/install-editors.sh)"
)

QUESTION = "How many hours of sun do tomatoes need?"


def top(question: str, answer: dict[str, Any], label: str | None) -> str:
    """The *citeline* buffer's head: the question, the grade label the server sent
    (verbatim), the label saying how the answer was made, a blank line."""
    lines = [question, ""]
    if answer.get("grade_label"):
        lines.append(answer["grade_label"])
    if label:
        lines.append(label)
    if len(lines) > 2:
        lines.append("")
    return "\n".join(lines) + "\n"


def location(item: dict[str, Any]) -> str:
    """Where a citation points, as the client names it."""
    if item.get("page") is not None:
        return f"{item['path']}, page {item['page']}"
    if item["end_line"] == item["start_line"]:
        return f"{item['path']}:{item['start_line']}"
    return f"{item['path']}:{item['start_line']}-{item['end_line']}"


def test_emacs_eglot_asks_and_follows_a_citation(tmp_path: Path) -> None:
    assert EMACS is not None
    docs = make_corpus(tmp_path / "docs")
    (docs / "citeline.toml").write_text("# a documents folder\n", "utf-8")
    out = tmp_path / "result.json"
    env = dict(os.environ)
    env.update(
        {
            "CITELINE_TEST_OUT": str(out),
            "CITELINE_TEST_DOCS": str(docs),
            "CITELINE_TEST_QUESTION": QUESTION,
            "CITELINE_TEST_QUERY": "bread dough rising time",
            "CITELINE_TEST_TIMEOUT": str(int(READY_TIMEOUT)),
            "CITELINE_PYTHON": sys.executable,
            "CITELINE_EMACS_CLIENT": str(REPO / "editor-clients" / "emacs"),
            "HOME": str(tmp_path / "home"),
        }
    )
    script = REPO / "tests" / "e2e" / "emacs" / "ask.el"
    completed = subprocess.run(
        [EMACS, "--batch", "-l", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    assert out.exists(), completed.stderr[-4000:]
    result = json.loads(out.read_text())
    assert "error" not in result, f"{result['error']}\n{completed.stderr[-4000:]}"
    answer = result["answer"]
    assert answer["hits"][0]["path"] == "garden.md"
    # The documents' own sentence, cited: in the lines its [n] points at.
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    assert cited["path"] == "garden.md"
    # The buffer: the question, the label, the answer with its markers, the sources.
    shown = result["shown"]
    assert shown.startswith(top(QUESTION, answer, QUOTED_LABEL) + f"{answer['answer']}\n")
    assert sentence in flat(shown)
    assert "Sources:" in shown
    first = answer["citations"][0]
    assert f"[1] {location(first)}" in shown
    # RET on the first [n] of the answer opened its citation; on the first source, the first.
    n = int(result["marker"].strip("[]"))
    marked = next(c for c in answer["citations"] if c["n"] == n)
    marked_at = {"file": str(docs / marked["path"]), "line": marked["start_line"]}
    assert result["marker_jump"] == marked_at
    assert result["jump"] == {"file": str(docs / first["path"]), "line": first["start_line"]}
    assert result["hits"][0]["path"] == "kitchen.md"
    assert result["status"]["folders"][0]["state"] == "ready"

    # answer.mode = generative: the written text streamed into the buffer, then the
    # buffer settled to the final answer, under its label.
    generative = result["generative"]
    assert generative["generator_called"] is True
    assert any("Searching the documents" not in seen for seen in result["generative_seen"]), (
        "nothing streamed into the buffer"
    )
    if generative["mode"] == "generative":
        label = "Written by SmolLM2-135M-Instruct.Q4_1, checked against sources"
    else:
        assert generative["fallback"] == "unsupported"
        label = (
            f"{QUOTED_LABEL} · the model's answer was not supported by the sources; "
            "showing the documents' own sentences"
        )
    assert result["generative_shown"].startswith(
        top(QUESTION, generative, label) + f"{generative['answer']}\n"
    )


def test_emacs_shows_the_indexed_passage_when_the_local_copy_differs(tmp_path: Path) -> None:
    assert EMACS is not None
    out = tmp_path / "passage.txt"
    item = (
        '(list :n 1 :path "garden.md" :page nil :start_line 12 :end_line 13'
        ' :uri "file:///nowhere/garden.md" :local_copy "differs"'
        ' :local_copy_note "your copy of this file differs from the indexed one"'
        ' :text "Marigolds keep aphids away.\\nPlant them early.")'
    )
    program = (
        "(progn (package-initialize)"
        f' (add-to-list (quote load-path) "{REPO / "editor-clients" / "emacs"}")'
        " (require 'citeline)"
        f" (with-current-buffer (citeline--open {item})"
        f' (write-region (point-min) (point-max) "{out}")))'
    )
    completed = subprocess.run(
        [EMACS, "--batch", "--eval", program], capture_output=True, text=True, timeout=120
    )
    assert out.exists(), completed.stderr
    shown = out.read_text().splitlines()
    assert shown[0] == "garden.md:12-13"
    assert shown[1].startswith("(your copy of this file differs from the indexed one; ")
    assert shown[3:] == ["Marigolds keep aphids away.", "Plant them early."]


# The client as a user meets it: root rules beside the user's own eglot server, grade,
# copy onto the kill ring, history, PDF at the page, reindex, index folder.

CLIENT = REPO / "editor-clients" / "emacs"
CLOSEST = "What colour are the flowers of the tomato plants?"
PDF_QUERY = "how often should the bicycle chain be lubricated"
RECORDER = '#!/bin/sh\nprintf "%s\\n" "$@" > "{log}"\n'


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert EMACS is not None
    base = tmp_path_factory.mktemp("emacs-client")
    home = base / "home"
    home.mkdir()
    (home / "notes.md").write_text("# Notes\n\nA shopping list: eggs, flour, milk.\n", "utf-8")
    docs = make_corpus(home / "docs")
    (docs / "citeline.toml").write_text("# a documents folder\n", "utf-8")
    other = home / "other"
    other.mkdir()
    (other / "lighthouse.md").write_text(
        "# Lighthouse\n\nThe lighthouse keeper climbs 120 steps every evening.\n", "utf-8"
    )
    user_docs = base / "user-server"  # what the user's own server serves
    user_docs.mkdir()
    (user_docs / "todo.md").write_text("# Todo\n\nWater the plants.\n", "utf-8")
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
        "HOME": str(base / "emacs-home"),
        "CITELINE_TEST_OUT": str(out),
        "CITELINE_TEST_HOME": str(home),
        "CITELINE_TEST_DOCS": str(docs),
        "CITELINE_TEST_OTHER": str(other),
        "CITELINE_TEST_USER_DOCS": str(user_docs),
        "CITELINE_TEST_QUESTION": QUESTION,
        "CITELINE_TEST_CLOSEST": CLOSEST,
        "CITELINE_TEST_PDF_QUERY": PDF_QUERY,
        "CITELINE_TEST_VIEWER_LOG": str(viewer_log),
        "CITELINE_TEST_OPENER_LOG": str(opener_log),
        "CITELINE_TEST_TIMEOUT": str(int(READY_TIMEOUT)),
        "CITELINE_PYTHON": sys.executable,
        "CITELINE_EMACS_CLIENT": str(CLIENT),
    }
    script = REPO / "tests" / "e2e" / "emacs" / "client.el"
    completed = subprocess.run(
        [EMACS, "--batch", "-l", str(script)],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    assert out.exists(), completed.stderr[-4000:]
    result: dict[str, Any] = json.loads(out.read_text())
    assert "error" not in result, f"{result['error']}\n{completed.stderr[-4000:]}"
    result["paths"] = {"home": str(home), "docs": str(docs), "other": str(other)}
    return result


def test_only_a_marked_folder_starts_citeline_beside_the_users_server(
    session: dict[str, Any],
) -> None:
    paths = session["paths"]
    assert session.get("plain_root") is None
    assert session.get("plain_server") is None
    assert session["docs_root"] == paths["docs"] + "/"
    assert session["folders"] == [paths["docs"] + "/"]
    assert len(session["status"]) == 1
    assert session["status"][0].startswith(f"{paths['docs']}: ready, 4 files")
    # The Markdown buffer stays the user's server's, before and after everything.
    assert session["user_server_started"] in (True, "background")
    assert session["buffer_server_live"] is True
    assert session.get("buffer_server_is_citeline") is None
    assert session["buffer_server_after_live"] is True
    assert session.get("buffer_server_after_is_citeline") is None


def test_copy_puts_the_answer_with_its_sources_on_the_kill_ring(session: dict[str, Any]) -> None:
    answer = session["answer"]
    sentence, cited = assert_extractive(answer, "six hours of direct sun")
    expected = copied_markdown(answer)
    assert session["kill"] == expected
    assert session["copied"] == expected
    assert sentence in flat(session["kill"])
    assert f"]({cited['uri'].split('#')[0]}#L{cited['start_line']}" in session["kill"]


def test_the_grade_label_is_shown_above_the_answer(session: dict[str, Any]) -> None:
    answer, closest = session["answer"], session["closest"]
    assert answer["grade"] == "answer" and answer["grade_label"] == "Answer"
    assert session["shown"].startswith(top(QUESTION, answer, QUOTED_LABEL))
    assert closest["grade"] in {"closest", "refused"}, closest
    assert session["closest_shown"].startswith(f"{CLOSEST}\n\n{closest['grade_label']}\n")


def test_a_pdf_citation_opens_at_its_page(session: dict[str, Any]) -> None:
    hit = session["pdf_hit"]
    assert hit["path"] == "bicycle.pdf" and hit["page"] == 2
    pdf = str(Path(session["paths"]["docs"]) / "bicycle.pdf")
    assert session["plan_doc_view"] == ["doc-view", pdf, 2]
    assert session["plan_pdf_tools"] == ["pdf-tools", pdf, 2]
    # A terminal Emacs shows no images: the first known viewer on PATH, at the page.
    assert session["pdf_opened"] == ["command", ["zathura", "--page=2", pdf]]
    assert session["viewer_argv"] == ["--page=2", pdf]
    assert session["pdf_system"] == ["system", pdf, 2]
    assert session["opener_argv"] == [pdf]
    assert session.get("pdf_buffer") is None  # its bytes were never visited


def test_history_lists_the_asks_and_reopens_one(session: dict[str, Any]) -> None:
    assert session.get("history_error") is None, session.get("history_error")
    entries = session["history"]["entries"]
    assert [e["question"] for e in entries[:2]] == [CLOSEST, QUESTION]
    assert QUESTION in session["history_shown"] and CLOSEST in session["history_shown"]
    assert [e["question"] for e in session["history_filtered"]["entries"]] == [CLOSEST]
    reopened = session["reopened"]
    assert reopened["question"] == QUESTION
    assert reopened["answer"] == session["answer"]["answer"]
    assert reopened["stale"] is False
    assert "Asked " in session["reopened_shown"]
    assert reopened["answer"] in session["reopened_shown"]
    assert session["copied_entry"] == copied_markdown(reopened)
    assert f"*From Citeline's history, asked {reopened['time']}.*" in session["copied_entry"]


def test_reindex_reports_each_folder(session: dict[str, Any]) -> None:
    folders = session["reindex"]["folders"]
    assert [f["uri"] for f in folders] == [Path(session["paths"]["docs"]).as_uri()]
    assert folders[0]["files"] == 4 and folders[0]["embedded"] == 0


def test_pause_and_resume_show_in_the_status(session: dict[str, Any]) -> None:
    docs = session["paths"]["docs"]
    assert all(f["paused"] is True for f in session["paused"]["folders"])
    assert any(line.startswith(f"{docs}: paused, 4 files") for line in session["status_paused"])
    assert all(": paused, " in line for line in session["status_paused"])
    (only,) = session["resumed"]["folders"]
    assert only["uri"] == Path(docs).as_uri() and only["paused"] is False
    assert not any("paus" in line for line in session["status_resumed"])


def test_hover_shows_the_passages_the_sentence_at_point_is_about(session: dict[str, Any]) -> None:
    assert session["hover_mode"] is True
    docs = Path(session["paths"]["docs"])
    # "Basil grows best planted next to tomatoes": the tomato passage, linked.
    first = session["hover"].split("---")[0]
    assert first.startswith("garden.md:5")  # plain text: eglot offers no Markdown hover
    assert f"{(docs / 'garden.md').as_uri()}#L5" in first
    assert session["eldoc"] == session["hover"]


def test_citeline_doctor_reports_each_check_with_its_fix(session: dict[str, Any]) -> None:
    docs = session["paths"]["docs"]
    shown = session["doctor_shown"]
    assert shown.startswith(f"{sys.executable} -m citeline.cli doctor --docs {docs} --json\n")
    if importlib.util.find_spec("citeline.doctor") is not None:
        checks = session["doctor"]["checks"]
        assert {c["area"] for c in checks} >= {"python", "citeline", "models", "folder"}
        for check in checks:
            assert f"{check['level']:8} {check['area']}: {check['summary']}" in shown
        assert f"folder: {docs}: marked by citeline.toml" in shown
    else:
        assert "this Citeline may have no `doctor' command" in shown


def test_index_folder_serves_an_unmarked_folder_and_marks_it(session: dict[str, Any]) -> None:
    paths = session["paths"]
    assert session.get("index_folder_error") is None, session.get("index_folder_error")
    assert session["index_folder"]["uri"] == Path(paths["other"]).as_uri()
    assert (Path(paths["other"]) / "citeline.toml").is_file()
    assert any(
        line.startswith(f"{paths['other']}: ready, 1 files") for line in session["status_after"]
    )


def test_the_package_byte_compiles_cleanly_and_uses_only_public_eglot_api(
    tmp_path: Path,
) -> None:
    assert EMACS is not None
    source = (CLIENT / "citeline.el").read_text("utf-8")
    assert "eglot--" not in source
    for header in (
        "Version:",
        "Package-Requires:",
        "URL:",
        "Keywords:",
        "SPDX-License-Identifier:",
    ):
        assert f";; {header}" in source
    assert (
        ";;; Commentary:" in source and "(require 'cl-lib)" in source and "(require 'seq)" in source
    )
    # No org-mode registration, and nothing put in front of the user's servers.
    assert "org-mode" not in source and "(add-to-list 'eglot-server-programs" not in source
    copy = tmp_path / "citeline.el"
    copy.write_text(source, "utf-8")
    completed = subprocess.run(
        [
            EMACS,
            "--batch",
            "--eval",
            "(progn (package-initialize) (setq byte-compile-error-on-warn t)"
            f' (unless (byte-compile-file "{copy}") (kill-emacs 1)))',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Warning" not in completed.stderr, completed.stderr


GRADED = [
    {
        "question": "How do I make it ignore a folder?",
        "answer": "Citeline skips hidden folders. [1]",
        "mode": "extractive",
        "mode_label": QUOTED_LABEL,
        "grade": "closest",
        "grade_label": "Closest passages — they may not answer the question",
        "refused": False,
        "citations": [
            {
                "n": 1,
                "path": "notes [old].md",
                "section": "Notes > Folders",
                "page": None,
                "start_line": 12,
                "end_line": 14,
                "uri": "file:///docs/notes%20%5Bold%5D.md",
                "local_copy": "same",
            }
        ],
    },
    {
        "question": "What is the capital of Peru?",
        "answer": "The documents do not contain the answer to this question.",
        "mode": None,
        "grade": "refused",
        "grade_label": "Not found in the documents",
        "refused": True,
        "citations": [],
        "hits": [
            {
                "path": "manual.pdf",
                "section": "Manual > Chain",
                "page": 3,
                "uri": "file:///docs/manual.pdf#page=3",
            }
        ],
    },
]


def test_emacs_shows_and_copies_a_closest_and_a_refused_grade(tmp_path: Path) -> None:
    assert EMACS is not None
    data = tmp_path / "answers.json"
    data.write_text(json.dumps(GRADED), "utf-8")
    out = tmp_path / "out.json"
    program = (
        "(progn (package-initialize) (require 'json)"
        f' (add-to-list (quote load-path) "{CLIENT}")'
        " (require 'citeline)"
        f' (let ((answers (with-temp-buffer (insert-file-contents "{data}")'
        "       (json-parse-buffer :object-type 'plist :array-type 'array"
        "                          :null-object nil :false-object :json-false)))"
        "       (seen nil))"
        "   (seq-doseq (answer answers)"
        "     (citeline-show-answer answer)"
        '     (push (list :shown (with-current-buffer "*citeline*" (buffer-string))'
        "                 :copy (citeline-copy-answer) :kill (current-kill 0)) seen))"
        f'   (with-temp-file "{out}" (insert (json-encode (vconcat (nreverse seen)))))))'
    )
    completed = subprocess.run(
        [EMACS, "--batch", "--eval", program], capture_output=True, text=True, timeout=120
    )
    assert out.exists(), completed.stderr
    closest, refused = json.loads(out.read_text())
    label = GRADED[0]["grade_label"]
    assert closest["shown"].startswith(f"{GRADED[0]['question']}\n\n{label}\n{QUOTED_LABEL}\n\n")
    assert closest["copy"] == closest["kill"] == copied_markdown(GRADED[0])
    assert f"> **{label}**" in closest["copy"]
    assert r"[notes \[old\].md:12-14](file:///docs/notes%20%5Bold%5D.md#L12-L14)" in closest["copy"]
    assert refused["shown"].startswith(f"{GRADED[1]['question']}\n\nNot found in the documents\n\n")
    assert refused["copy"] == copied_markdown(GRADED[1])
    assert (
        "- [manual.pdf, page 3](file:///docs/manual.pdf#page=3) — Manual > Chain" in refused["copy"]
    )


def test_index_folder_with_no_server_running_starts_one(tmp_path: Path) -> None:
    assert EMACS is not None
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "paper.md").write_text("# Paper\n\nThe experiment ran for nine days.\n", "utf-8")
    out = tmp_path / "out.json"
    program = (
        "(progn (package-initialize) (require 'json)"
        f' (add-to-list (quote load-path) "{CLIENT}")'
        " (require 'citeline)"
        f' (setq citeline-server-command (list "{sys.executable}" "-m" "citeline.cli" "serve"))'
        " (let ((before (and citeline--server t))"
        f'       (folder (citeline-index-folder "{folder}"))'
        f"       (deadline (+ (float-time) {int(READY_TIMEOUT)})))"
        "   (while (and (< (float-time) deadline)"
        "               (not (equal (plist-get (aref (or (plist-get citeline-last-status"
        "                                                          :folders)"
        "                                               [nil]) 0)"
        '                                      :state) "ready")))'
        "     (accept-process-output nil 0.05))"
        f'   (with-temp-file "{out}"'
        "     (insert (json-encode (list :before before :folder folder"
        "                                :status (vconcat (mapcar"
        "                                                  (function citeline--folder-line)"
        "                                                  (plist-get citeline-last-status"
        "                                                             :folders)))))))"
        "   (citeline-stop)))"
    )
    completed = subprocess.run(
        [EMACS, "--batch", "--eval", program],
        env={**os.environ, "HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=3 * READY_TIMEOUT,
    )
    assert out.exists(), completed.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["before"] is None
    assert result["folder"]["uri"] == folder.as_uri()
    assert result["status"] == [f"{folder}: ready, 1 files, 1 chunks, 0 pending"]
    assert (folder / "citeline.toml").is_file()
