"""The wire contract, held in one place: ``citeline.wire`` against what produces the
JSON (the core's answer, the LSP layer's conversions, status and reports), against
the VS Code client's ``protocol.ts`` (method names, the ``Requests`` table, every
interface's fields, the enums), the Neovim and Emacs clients' method names, and
docs/lsp-extensions.md (every request, command and field, and wire.py's hash, as
rust-analyzer ties lsp-extensions.md to lsp_ext.rs).

Each check is a function of the texts it reads, so a test also shows it failing on
a deliberate violation.
"""

from __future__ import annotations

import hashlib
import re
import typing
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from citeline import wire
from citeline.core.answering.results import Answer, Citation
from citeline.core.documents import Chunk, Hit
from citeline.core.ingest import IngestReport
from citeline.lsp import ask, commands, convert, folders, history, pause, reindex, search, status
from citeline.service import workspace
from citeline.service.selection import Unserved
from citeline.service.status import FolderStatus
from conftest import REPO

PROTOCOL_TS = REPO / "editor-clients" / "vscode" / "src" / "protocol.ts"
LSP_EXTENSIONS = REPO / "docs" / "lsp-extensions.md"
WIRE_PY = REPO / "server" / "citeline" / "wire.py"
# Where each client names a method: a Lua string, an Elisp keyword (or `eql` symbol).
CLIENTS = REPO / "editor-clients"
CLIENT_METHODS = {
    CLIENTS / "neovim" / "lua" / "citeline" / "init.lua": r"[\"'](citeline/\w+)[\"']",
    CLIENTS / "emacs" / "citeline.el": r"(?::|\(eql )(citeline/\w+)",
}
ENUMS: dict[str, type[StrEnum]] = {
    "AnswerMode": wire.AnswerMode,
    "Grade": wire.Grade,
    "Fallback": wire.Fallback,
    "Refusal": wire.Refusal,
    "LocalCopy": wire.LocalCopy,
}


def wire_types() -> dict[str, type[Any]]:
    """Every TypedDict of the wire module, by name."""
    return {
        name: value
        for name, value in vars(wire).items()
        if isinstance(value, type) and typing.is_typeddict(value)
    }


def keys(kind: type[Any]) -> set[str]:
    return set(kind.__required_keys__ | kind.__optional_keys__)


# -- protocol.ts, read ---------------------------------------------------------------


def _block(text: str, start: int) -> str:
    """The text between the brace at ``start - 1`` and its closing brace."""
    depth, i = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def _uncommented(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def ts_interfaces(text: str) -> dict[str, dict[str, bool]]:
    """Each exported interface's fields (inherited ones included): name → optional?"""
    found: dict[str, tuple[str | None, dict[str, bool]]] = {}
    for m in re.finditer(r"export interface (\w+)(?: extends (\w+))? \{", text):
        fields: dict[str, bool] = {}
        depth = 0
        for line in _uncommented(_block(text, m.end())).split("\n"):
            field = re.match(r"\s*'?([\w/]+)'?(\?)?:", line)
            if depth == 0 and field:
                fields[field.group(1)] = bool(field.group(2))
            depth += line.count("{") - line.count("}")
        found[m.group(1)] = (m.group(2), fields)

    def resolved(name: str) -> dict[str, bool]:
        base, fields = found[name]
        return {**(resolved(base) if base else {}), **fields}

    return {name: resolved(name) for name in found}


def ts_methods(text: str) -> set[str]:
    return set(re.findall(r"export const \w+ = '(citeline/\w+)'", text))


def ts_requests(text: str) -> dict[str, tuple[str, str]]:
    start = text.index("export interface Requests {") + len("export interface Requests {")
    rows = re.findall(r"'(citeline/\w+)': \{ params: (\w+); result: (\w+) \}", _block(text, start))
    return {name: (params, result) for name, params, result in rows}


def ts_commands(text: str) -> set[str]:
    start = text.index("export const ServerCommands = {") + len("export const ServerCommands = {")
    return set(re.findall(r"'(citeline\.\w+)'", _block(text, start)))


def ts_union(text: str, name: str) -> set[str]:
    m = re.search(rf"export type {name} = ([^;]+);", text)
    assert m, f"protocol.ts has no type {name}"
    return set(re.findall(r"'([^']+)'", m.group(1)))


def protocol_problems(text: str) -> list[str]:
    """Where ``protocol.ts`` (its ``text``) departs from the wire module."""
    problems = []
    if ts_methods(text) != set(wire.METHODS):
        problems.append(f"method constants {sorted(ts_methods(text) ^ set(wire.METHODS))}")
    wanted = {
        m.name: (m.params.__name__ if m.params else "null", m.result.__name__)
        for m in wire.METHODS.values()
    }
    if ts_requests(text) != wanted:
        problems.append(f"Requests {ts_requests(text)} is not {wanted}")
    if ts_commands(text) != set(wire.COMMANDS):
        problems.append(f"ServerCommands {sorted(ts_commands(text) ^ set(wire.COMMANDS))}")
    interfaces = ts_interfaces(text)
    for name, kind in wire_types().items():
        if name not in interfaces:
            problems.append(f"no interface {name}")
            continue
        ts_fields = interfaces[name]
        if set(ts_fields) != keys(kind):
            problems.append(f"{name}: fields {sorted(set(ts_fields) ^ keys(kind))} differ")
        for key in kind.__optional_keys__ & set(ts_fields):
            if not ts_fields[key]:
                problems.append(f"{name}.{key} may be absent: it must be optional")
    for name, enum in ENUMS.items():
        if ts_union(text, name) != {e.value for e in enum}:
            problems.append(f"type {name} is not {sorted(e.value for e in enum)}")
    return problems


def test_protocol_ts_mirrors_the_wire_module() -> None:
    assert protocol_problems(PROTOCOL_TS.read_text("utf-8")) == []


def test_the_protocol_check_fails_on_a_drifted_protocol_ts() -> None:
    text = PROTOCOL_TS.read_text("utf-8")
    drifted = text.replace("  mode_label?: string | null;\n", "", 1)
    drifted = drifted.replace("'citeline/historyDelete'", "'citeline/historyRemove'")
    drifted = drifted.replace("'off_topic' | 'unknown_term'", "'off_topic'")
    problems = protocol_problems(drifted)
    assert any("Answer: fields ['mode_label']" in p for p in problems)
    assert any("HistoryEntry: fields ['mode_label']" in p for p in problems)
    assert any(p.startswith("method constants") for p in problems)
    assert any(p.startswith("Requests") for p in problems)
    assert any(p.startswith("type Refusal") for p in problems)


def test_the_neovim_and_emacs_clients_name_only_methods_the_server_answers() -> None:
    for path, pattern in CLIENT_METHODS.items():
        named = set(re.findall(pattern, path.read_text("utf-8")))
        assert named <= set(wire.METHODS), path.name
        assert {"citeline/ask", "citeline/status"} <= named, path.name  # the pattern finds them


# -- docs/lsp-extensions.md ----------------------------------------------------------


def wire_hash(source: str) -> str:
    return hashlib.sha256(source.replace("\r\n", "\n").encode("utf-8")).hexdigest()[:16]


def docs_problems(doc: str, source: str) -> list[str]:
    """Where lsp-extensions.md (``doc``) departs from the wire module (``source``)."""
    problems = []
    documented = set(re.findall(r"^## `(citeline/\w+)` \(request\)", doc, flags=re.M))
    if documented != set(wire.METHODS):
        problems.append(f"requests {sorted(documented ^ set(wire.METHODS))}")
    rows = dict(re.findall(r"^\| `(citeline\.\w+)` \| `\[([^\]]*)\]`", doc, flags=re.M))
    table = {c: tuple(a.strip(" ?") for a in a_.split(",") if a.strip()) for c, a_ in rows.items()}
    if table != {c: args for c, (args, _) in wire.COMMANDS.items()}:
        problems.append(f"commands table {table}")
    named = set(re.findall(r"`([a-z_A-Z]+)`", doc)) | set(re.findall(r'"(\w+)":', doc))
    for name, kind in wire_types().items():
        missing = sorted(keys(kind) - named)
        if missing:
            problems.append(f"{name}: {missing} undocumented")
    m = re.search(r"wire\.py hash: ([0-9a-f]{16})", doc)
    if not m or m.group(1) != wire_hash(source):
        problems.append(
            f"wire.py changed: review this document and protocol.ts, then write"
            f" `wire.py hash: {wire_hash(source)}`"
        )
    return problems


def test_lsp_extensions_md_documents_the_wire_module() -> None:
    doc = LSP_EXTENSIONS.read_text("utf-8")
    assert docs_problems(doc, WIRE_PY.read_text("utf-8")) == []


def test_the_docs_check_fails_when_the_wire_module_changes() -> None:
    doc = LSP_EXTENSIONS.read_text("utf-8")
    source = WIRE_PY.read_text("utf-8")
    problems = docs_problems(doc, source + "\n# a new field\n")
    assert [p for p in problems if p.startswith("wire.py changed")] == problems != []
    renamed = doc.replace("## `citeline/reindex` (request)", "## `citeline/rebuild` (request)")
    assert any(p.startswith("requests") for p in docs_problems(renamed, source))


# -- what produces the JSON ----------------------------------------------------------

ROOT = Path("/home/me/notes")


def _hit() -> Hit:
    chunk = Chunk("a.md", "A", ("A", "Install"), "Run it.", 3, 5, None, 0)
    return Hit(1, 1, 0.5, chunk, dense=0.6)


def _answer(**extra: Any) -> Answer:
    hit = _hit()
    citation = Citation(1, 1, "a.md", "A", "A > Install", None, 3, 5, 0.5, True)
    return Answer(
        "q", "en", "Run it. [1]", False, False, [citation], [hit], [], mode="extractive", **extra
    )


def test_the_answer_json_has_exactly_the_wire_fields() -> None:
    out = convert.answer(_answer(), ROOT, "file:///home/me/notes", {"a.md": "differs"})
    assert set(out) == keys(wire.Answer)
    (citation,) = out["citations"]
    assert set(citation) == keys(wire.Citation) - {"text", "changed"}  # no passage given
    assert set(out["hits"][0]) == keys(wire.Hit)
    assert citation["local_copy_note"] == wire.LOCAL_COPY_NOTES[wire.LocalCopy.DIFFERS]


def test_a_hit_status_and_report_have_exactly_the_wire_fields() -> None:
    assert set(convert.hit(_hit(), ROOT, "f")) == keys(wire.Hit)
    status = convert.folder_status(FolderStatus(ROOT, "i", message="m"))
    assert set(status) == keys(wire.FolderStatus)
    assert set(status["models"]) == keys(wire.ModelNames)
    assert set(convert.unserved(Unserved(ROOT, "why"))) == keys(wire.UnservedFolder)
    assert set(convert.reindex_report(ROOT, IngestReport())) == keys(wire.ReindexFolderReport)


def test_the_answer_vocabulary_is_the_cores() -> None:
    answer = _answer(fallback=wire.Fallback.CONTEXT)
    out = answer.to_json()
    assert out["mode"] == "extractive" and out["fallback"] == "context"
    assert out["grade"] == wire.Grade.ANSWER == "answer"
    assert wire.fallback_note("extractive", "context", None) == wire.FALLBACK_NOTES["context"]
    assert wire.fallback_note("extractive", None, "timeout") == wire.FALLBACK_NOTES["timeout"]
    assert wire.fallback_note("generative", "context", None) is None
    assert "(later)" in (wire.fallback_note("extractive", "later", None) or "")
    assert wire.mode_label("generative", None) == "Written by the model, checked against sources"
    assert wire.model_name("C:\\models\\Tiny.GGUF") == "Tiny"
    assert wire.local_copy_note("same") is None


def test_local_copy_is_the_services_verdicts() -> None:
    # the service compares the files (service/workspace.py); the wire names its verdicts
    assert set(typing.get_args(workspace.LocalCopy)) == {c.value for c in wire.LocalCopy}


def test_the_method_table_gives_each_handler_its_params() -> None:
    assert wire.ASK.param_names() == {"question", "folder", "partialResultToken"}
    assert wire.STATUS.param_names() == frozenset()
    assert wire.INDEX_FOLDER.params is not None
    assert wire.INDEX_FOLDER.params.__required_keys__ == {"folder"}


class _Recorder:
    """Records what a server registers (``register`` only declares it)."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.features: list[str] = []

    def command(self, name: str) -> Any:
        self.commands.append(name)
        return lambda f: f

    def feature(self, name: str) -> Any:
        self.features.append(name)
        return lambda f: f


def test_the_server_registers_exactly_the_wire_methods_and_commands() -> None:
    recorder = _Recorder()
    for module in (ask, commands, folders, history, pause, reindex, search, status):
        module.register(recorder)  # type: ignore[arg-type]
    assert sorted(recorder.commands) == sorted(wire.COMMANDS)
    custom = [f for f in recorder.features if f.startswith("citeline/")]
    assert sorted(custom) == sorted(wire.METHODS)


def test_every_command_but_open_citation_is_a_requests_twin() -> None:
    twins = {m.command: m for m in wire.METHODS.values() if m.command}
    assert set(wire.COMMANDS) == {*twins, wire.OPEN_CITATION}
    for name, m in twins.items():
        assert set(m.arguments) <= m.param_names(), name
        assert wire.COMMANDS[name] == (m.arguments, m.name)


@pytest.mark.parametrize("method", sorted(wire.METHODS))
def test_every_request_has_a_handler_module_naming_it(method: str) -> None:
    lsp = REPO / "server" / "citeline" / "lsp"
    named = [p for p in lsp.glob("*.py") if f"wire.{_constant(method)}" in p.read_text("utf-8")]
    assert named, f"no handler in lsp/ uses wire.{_constant(method)}"


def _constant(method: str) -> str:
    """``citeline/historyEntry`` → ``HISTORY_ENTRY``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method.split("/", 1)[1]).upper()
