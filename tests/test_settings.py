"""Typed settings: precedence, warnings, defaults that follow the embedding model,
and the VS Code client's settings held to the server's defaults."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import typing
from pathlib import Path

import pytest

from citeline.core.retrieval import RetrievalSettings
from citeline.service.folders import needs_reopen
from citeline.settings import (
    BUNDLED_MODEL_RETRIEVAL,
    E5,
    E5_MODEL_RETRIEVAL,
    MAX_DEPTH,
    MAX_MESSAGES_PER_SOURCE,
    MAX_SETTINGS_BYTES,
    MINILM,
    OWN_MODEL_RETRIEVAL,
    Settings,
    load_settings,
    rule_for,
    snake_case,
)
from conftest import REPO


def test_precedence_defaults_then_toml_then_overrides(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text(
        '[embedding]\nmodel = "/models/e.gguf"\npreset = "bge"\n[search]\ntop_k = 7\n'
        "[answer]\nmin_score = 0.4\n"
    )
    settings, warnings = load_settings(
        tmp_path, {"search": {"topK": 9}, "answer": {"maxEvidence": 2}}
    )
    assert warnings == []
    assert settings.embedding.model == "/models/e.gguf"
    assert settings.embedding.prefixes() == (
        "Represent this sentence for searching relevant passages: ",
        "",
    )
    assert settings.search.top_k == 9  # editor beats file
    assert settings.answer.min_score == 0.4  # file beats default
    assert settings.answer.max_evidence == 2
    assert settings.chunking.max_cost == 1000  # default
    assert settings.index_dir(tmp_path) == tmp_path / ".citeline"


def test_invalid_values_warn_and_keep_the_previous_layer(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text(
        '[search]\ntop_k = "many"\nbogus = 1\n[answer]\nmin_score = -1\n'
    )
    settings, warnings = load_settings(tmp_path, {"embedding": {"preset": "nope"}, "index": 3})
    assert settings.search.top_k == 5 and settings.answer.min_score == 0.4
    assert settings.embedding.preset == ""
    assert len(warnings) == 5
    assert any("search.top_k" in w and "int" in w for w in warnings)
    assert any("unknown setting 'search.bogus'" in w for w in warnings)
    assert any("preset" in w for w in warnings)
    assert any("'index' must be a table" in w for w in warnings)


def test_broken_toml_gives_defaults_and_a_warning(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text("[search\ntop_k = 3")
    settings, warnings = load_settings(tmp_path)
    assert settings.search.top_k == 5 and len(warnings) == 1 and "citeline.toml" in warnings[0]


def test_relative_index_path_is_inside_the_docs(tmp_path: Path) -> None:
    settings, _ = load_settings(tmp_path, {"index": {"path": "idx"}})
    assert settings.index_dir(tmp_path) == tmp_path / "idx"


def test_retrieval_defaults_follow_the_embedding_model(tmp_path: Path) -> None:
    bundled, _ = load_settings(tmp_path)
    assert not bundled.retrieval.dense_for_cjk
    own, _ = load_settings(tmp_path, {"embedding": {"model": "/m/bge-m3.gguf"}})
    assert own.retrieval.dense_for_cjk and own.retrieval.keyword_weight == 0.5
    # an explicit setting still wins over the model's defaults
    mine, _ = load_settings(
        tmp_path, {"embedding": {"model": "/m/x.gguf"}, "retrieval": {"keywordWeight": 2}}
    )
    assert mine.retrieval.keyword_weight == 2.0


def test_answer_mode_is_checked(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text('[answer]\nmode = "generative"\n')
    settings, warnings = load_settings(tmp_path)
    assert settings.answer.mode == "generative" and warnings == []
    settings, warnings = load_settings(tmp_path, {"answer": {"mode": "poetic"}})
    assert settings.answer.mode == "generative"
    assert warnings == [
        "settings: setting 'answer.mode' must be one of auto, extractive, generative,"
        " got 'poetic'; using 'generative'"
    ]


def test_the_defaults_are_what_loading_gives_and_follow_the_model(tmp_path: Path) -> None:
    assert Settings().retrieval == BUNDLED_MODEL_RETRIEVAL
    assert load_settings(tmp_path)[0] == Settings()
    own, _ = load_settings(tmp_path, {"embedding": {"model": "/models/bge.gguf"}})
    assert own.retrieval == OWN_MODEL_RETRIEVAL
    tuned, _ = load_settings(
        tmp_path, {"embedding": {"model": "/m.gguf"}, "retrieval": {"keywordWeight": 0.8}}
    )
    assert tuned.retrieval.keyword_weight == 0.8 and tuned.retrieval.rrf_k == 60.0


# The VS Code settings the client keeps for itself (not part of the server's settings).
CLIENT_ONLY = {"server.command", "server.python", "folders", "hover.mode", "answers.history"}
CLIENT_ONLY |= {"trace.server", "server.wheelhouse", "pdf.viewer"}


def test_vscode_shows_the_servers_defaults_or_none_where_the_model_decides() -> None:
    manifest = json.loads((REPO / "editor-clients" / "vscode" / "package.json").read_text())
    properties = manifest["contributes"]["configuration"]["properties"]
    model_dependent = {
        f.name
        for f in dataclasses.fields(RetrievalSettings)
        if getattr(BUNDLED_MODEL_RETRIEVAL, f.name) != getattr(OWN_MODEL_RETRIEVAL, f.name)
    }
    checked = 0
    for key, spec in properties.items():
        name = key.removeprefix("citeline.")
        if name in CLIENT_ONLY:
            continue
        section, field = name.split(".")
        python = snake_case(field)
        default = getattr(getattr(Settings(), section), python)
        if section == "retrieval" and python in model_dependent:
            assert spec["default"] is None, f"{key}: the default follows the embedding model"
            assert "null" in spec["type"] and "embedding model" in spec["markdownDescription"]
        else:
            assert spec["default"] == default, f"{key}: VS Code shows {spec['default']!r}"
        checked += 1
    assert checked >= 15


def test_the_vector_index_is_auto_unless_a_known_kind_is_set(tmp_path: Path) -> None:
    assert load_settings(tmp_path)[0].index.vectors == "auto"
    (tmp_path / "citeline.toml").write_text('[index]\nvectors = "hnsw"\n')
    settings, warnings = load_settings(tmp_path, {"index": {"vectors": "annoy"}})
    assert settings.index.vectors == "hnsw" and len(warnings) == 1 and "annoy" in warnings[0]


def test_a_team_index_is_one_setting_and_never_keeps_a_password_from_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "citeline.toml").write_text(
        '[index]\nstore = "postgresql://ci:s3cret@db.example.com/citeline?sslmode=require"\n'
        'collection = "docs"\n'
    )
    settings, warnings = load_settings(tmp_path)
    assert settings.index.team and settings.index.collection_name == "docs"
    assert "s3cret" not in settings.index.store and "sslmode=require" in settings.index.store
    assert any("password" in w and "PGPASSWORD" in w for w in warnings)
    assert settings.index.location() == "postgresql://ci@db.example.com/citeline#docs"
    # the editor or command line may pass a URL with one (it is never shown)
    editor, _ = load_settings(tmp_path, {"index": {"store": "postgresql://u:pw@h/db"}})
    assert editor.index.store == "postgresql://u:pw@h/db" and "pw" not in editor.index.location()
    bad, warnings = load_settings(tmp_path, {"index": {"store": "mysql://h/db"}})
    assert bad.index.store == settings.index.store and any("postgresql://" in w for w in warnings)
    assert not Settings().index.team and Settings().index.collection_name == "default"


def test_a_bundled_model_is_named_and_brings_its_prefixes_and_retrieval(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text('[embedding]\nmodel = "multilingual-e5-small"\n')
    settings, warnings = load_settings(tmp_path)
    assert warnings == [] and settings.embedding.bundled == E5
    assert settings.embedding.prefixes() == ("query: ", "passage: ")
    assert settings.retrieval == E5_MODEL_RETRIEVAL and settings.retrieval.dense_for_cjk
    assert settings.embedding.reason == "embedding.model names it"
    minilm, _ = load_settings(tmp_path, {"embedding": {"model": "all-MiniLM-L6-v2"}})
    assert minilm.embedding.bundled == MINILM and minilm.embedding.prefixes() == ("", "")
    assert minilm.retrieval == BUNDLED_MODEL_RETRIEVAL
    assert load_settings(tmp_path, {"embedding": {"model": "e5"}})[0].embedding.bundled == E5
    assert load_settings(tmp_path, {"embedding": {"model": "/m.gguf"}})[0].embedding.bundled is None


def test_a_folder_of_chinese_documents_chooses_the_multilingual_model(tmp_path: Path) -> None:
    (tmp_path / "常见问题.md").write_text("问：索引保存在哪里？答：在文档文件夹的隐藏目录里。" * 20)
    settings, warnings = load_settings(tmp_path)
    assert warnings == [] and settings.embedding.model == E5
    assert settings.embedding.reason == (
        "100% of the documents' text is Chinese, Japanese or Korean (常见问题.md…)"
    )
    assert settings.retrieval == E5_MODEL_RETRIEVAL
    (tmp_path / "citeline.toml").write_text('[embedding]\nmodel = "all-MiniLM-L6-v2"\n')
    forced, _ = load_settings(tmp_path)  # the folder's settings win
    assert forced.embedding.bundled == MINILM and forced.retrieval == BUNDLED_MODEL_RETRIEVAL
    (tmp_path / "citeline.toml").write_text('[embedding]\nchosen_by = "me"\n')
    _, warnings = load_settings(tmp_path)
    assert warnings == ["citeline.toml: unknown setting 'embedding.chosen_by' ignored"]


def test_an_index_path_from_the_folder_file_stays_inside_the_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "out").symlink_to(tmp_path)
    for raw in ("~/.bashrc", "/etc/x", "../x", ".", "out", "out/idx", "sub/../../x"):
        (docs / "citeline.toml").write_text(f'[index]\npath = "{raw}"\n')
        settings, warnings = load_settings(docs)
        assert settings.index.path == "" and settings.index_dir(docs) == docs / ".citeline"
        assert len(warnings) == 1 and "[index] path" in warnings[0] and "refused" in warnings[0]
    (docs / "citeline.toml").write_text('[index]\npath = "sub/idx"\n')
    settings, warnings = load_settings(docs)
    assert warnings == [] and settings.index_dir(docs) == docs / "sub" / "idx"
    # the user's own settings (editor, command line) may put it anywhere
    settings, warnings = load_settings(docs, {"index": {"path": str(tmp_path / "elsewhere")}})
    assert warnings == [] and settings.index_dir(docs) == tmp_path / "elsewhere"


def _every_field() -> list[tuple[str, str, type]]:
    hints_of = typing.get_type_hints(Settings)
    found = []
    for section in dataclasses.fields(Settings):
        kind = hints_of[section.name]
        hints = typing.get_type_hints(kind)
        for f in dataclasses.fields(kind):
            if not f.metadata.get("internal"):  # set by Citeline, never by a layer
                found.append((section.name, f.name, hints[f.name]))
    return found


def _bad_values(where: str, kind: type) -> list[object]:
    """A wrong type, and every kind of value the field's rule refuses."""
    rule = rule_for(where, kind)
    bad: list[object] = [{"nested": 1} if kind is not bool else "yes"]
    bad.append([1, 2] if kind is str else "text")
    if kind in (int, float):
        bad += [float("nan"), float("inf"), -float("inf")] if kind is float else [1.5]
        if rule.low is not None:
            bad.append(kind(rule.low) - 1)
        if rule.high is not None:
            bad.append(kind(rule.high) + 1)
    if kind is str:
        bad.append("x" * (rule.max_chars + 1))
        if rule.choices is not None:
            bad.append("semantic")
        if rule.check is not None:
            bad.append("/nonexistent/citeline-test/model.gguf")
    return bad


def test_every_field_refuses_every_bad_value_with_one_warning_and_the_default(
    tmp_path: Path,
) -> None:
    fields = _every_field()
    assert len(fields) >= 40
    defaults = Settings()
    checked = 0
    for section, name, kind in fields:
        where = f"{section}.{name}"
        for value in _bad_values(where, kind):
            camel = "".join(p if i == 0 else p.title() for i, p in enumerate(name.split("_")))
            for layer in ({section: {name: value}}, {section: {camel: value}}):
                settings, warnings = load_settings(tmp_path, layer, sources=("editor settings",))
                assert len(warnings) == 1, (where, value, warnings)
                assert warnings[0].startswith("editor settings: ") and where in warnings[0]
                got = getattr(getattr(settings, section), name)
                assert got == getattr(getattr(defaults, section), name), (where, value, got)
                checked += 1
    assert checked > 300


def _toml(value: object) -> str:
    """``value`` as a TOML value (the kinds ``_bad_values`` makes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), -float("inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def test_every_field_in_the_file_refuses_every_bad_value_with_one_warning_and_the_default(
    tmp_path: Path,
) -> None:
    defaults = Settings()
    checked = 0
    for section, name, kind in _every_field():
        where = f"{section}.{name}"
        for value in _bad_values(where, kind):
            (tmp_path / "citeline.toml").write_text(f"[{section}]\n{name} = {_toml(value)}\n")
            settings, warnings = load_settings(tmp_path)
            assert len(warnings) == 1, (where, value, warnings)
            assert warnings[0].startswith("citeline.toml: ") and where in warnings[0]
            got = getattr(getattr(settings, section), name)
            assert got == getattr(getattr(defaults, section), name), (where, value, got)
            checked += 1
    assert checked > 150


def test_nan_and_out_of_range_numbers_in_the_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "citeline.toml").write_text(
        "[index]\nmax_file_mb = nan\n[search]\ntop_k = 0\n[generation]\ncontext_size = 32768\n"
        '[retrieval]\nmode = "semantic"\n[answer]\nmin_score = nan\n'
    )
    settings, warnings = load_settings(tmp_path)
    assert settings == Settings() and len(warnings) == 5
    assert all(w.startswith("citeline.toml: setting '") for w in warnings)


def test_a_team_store_without_the_driver_is_the_embedded_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a)
    )
    settings, warnings = load_settings(tmp_path, {"index": {"store": "postgresql://h/db"}})
    assert not settings.index.team and len(warnings) == 1 and "citeline[team]" in warnings[0]


def test_messages_are_bounded_per_source(tmp_path: Path) -> None:
    keys = "".join(f"key{i} = {i}\n" for i in range(20_000))
    (tmp_path / "citeline.toml").write_text("[search]\n" + keys)
    editor = {"search": {f"k{i}": i for i in range(50_000)}}
    settings, warnings = load_settings(tmp_path, editor, sources=("editor settings",))
    assert settings == Settings()
    file_lines = [w for w in warnings if w.startswith("citeline.toml: ")]
    editor_lines = [w for w in warnings if w.startswith("editor settings: ")]
    assert len(file_lines) == len(editor_lines) == MAX_MESSAGES_PER_SOURCE + 1
    assert file_lines[-1] == "citeline.toml: 19,990 more settings problems not shown"
    assert editor_lines[-1] == "editor settings: 49,990 more settings problems not shown"


def test_the_file_is_read_bounded_inside_the_folder_and_depth_limited(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("[search]\ntop_k = 9\n")
    (docs / "citeline.toml").symlink_to(outside)
    settings, warnings = load_settings(docs)
    assert settings.search.top_k == 5 and len(warnings) == 1 and "outside" in warnings[0]
    (docs / "citeline.toml").unlink()
    (docs / "citeline.toml").write_bytes(b"# " + b"x" * (MAX_SETTINGS_BYTES + 10) + b"\n")
    settings, warnings = load_settings(docs)
    assert settings == Settings() and len(warnings) == 1 and "limit" in warnings[0]
    for nested in ("a = " + "[" * 5000 + "]" * 5000, "a = " + "[" * 40 + "]" * 40):
        (docs / "citeline.toml").write_text(nested + "\n[search]\ntop_k = 3\n")
        settings, warnings = load_settings(docs)
        assert settings == Settings() and len(warnings) == 1 and "deep" in warnings[0]
    deep: dict[str, object] = {}
    inner = deep
    for _ in range(40):
        inner["x"] = {}
        inner = inner["x"]  # type: ignore[assignment]
    (docs / "citeline.toml").unlink()
    settings, warnings = load_settings(docs, deep, sources=("editor settings",))
    assert settings == Settings() and warnings == [
        f"editor settings: nested more than {MAX_DEPTH} levels deep; ignored"
    ]


SETTINGS_TS = REPO / "editor-clients" / "vscode" / "src" / "settings.ts"
# A value of each kind VS Code sends that the server accepts and that differs from
# its default (the model files exist: a missing one is refused with a warning).
_LIVE_VALUES = {"integer": 3, "number": 0.3, "boolean": True, "string[]": ["/tmp"]}
_LIVE_STRINGS = {
    "embedding.preset": "bge",
    "retrieval.mode": "keyword",
    "answer.mode": "extractive",
    "index.store": "postgresql://localhost/notes",  # the team extra is a dev dependency
    "index.collection": "notes",
}
_LIVE_NUMBERS = {"chunking.maxCost": 2000, "chunking.overlapCost": 100}  # overlap < max


def _vscode_server_settings() -> list[tuple[str, list[str], str]]:
    text = SETTINGS_TS.read_text("utf-8")
    rows = re.findall(r"\{ key: '([\w.]+)', path: \[([^\]]*)\], kind: '([\w\[\]]+)' \}", text)
    return [(key, re.findall(r"'(\w+)'", path), kind) for key, path, kind in rows]


def test_vscode_restarts_only_for_what_starts_the_server(tmp_path: Path) -> None:
    # The server applies every setting it understands as it changes: a change to what
    # an index is reopens it (needs_reopen), the rest applies to the next request; so
    # VS Code restarts the server only for its own start-up settings.
    text = SETTINGS_TS.read_text("utf-8")
    restart = re.search(r"RESTART_KEYS: readonly string\[\] = \[([^\]]*)\]", text)
    assert restart and re.findall(r"'([\w.]+)'", restart.group(1)) == [
        "server.command",
        "server.python",
    ]
    rows = _vscode_server_settings()
    assert len(rows) >= 20
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    base, warnings = load_settings(tmp_path, {}, sources=("editor settings",))
    reopened = set()
    for key, path, kind in rows:
        if key == "folders":  # which folders are served: service/session.py, live
            continue
        section, name = path[0], snake_case(path[1])
        default = getattr(getattr(base, section), name)
        value: object = _LIVE_VALUES.get(kind)
        if kind == "boolean":
            value = not default
        elif kind == "string":
            value = _LIVE_STRINGS.get(key, str(model))
        elif key in _LIVE_NUMBERS:
            value = _LIVE_NUMBERS[key]
        elif kind in ("integer", "number"):
            rule = rule_for(f"{section}.{name}", int if kind == "integer" else float)
            low = rule.low if rule.low is not None else 0
            value = low if low != default else (rule.high if rule.high is not None else low + 1)
            value = int(value) if kind == "integer" else float(value)
        layer: dict[str, object] = {path[0]: {path[1]: value}}
        changed, warnings = load_settings(tmp_path, layer, sources=("editor settings",))
        assert warnings == [], (key, warnings)
        assert changed != base, key
        if needs_reopen(base, changed):
            reopened.add(key.split(".")[0])
    # what docs/lsp-extensions.md says reopens the index
    assert reopened == {"embedding", "chunking", "index"}


@pytest.mark.parametrize("section", [f.name for f in dataclasses.fields(Settings)])
def test_every_section_refuses_an_unknown_key_and_a_value_that_is_not_a_table(
    tmp_path: Path, section: str
) -> None:
    defaults = Settings()
    for layer, why in (
        ({section: {"semantic": 1}}, f"unknown setting '{section}.semantic' ignored"),
        ({section: "semantic"}, f"setting '{section}' must be a table"),
    ):
        settings, warnings = load_settings(tmp_path, layer, sources=("editor settings",))
        assert len(warnings) == 1 and why in warnings[0], (layer, warnings)
        assert getattr(settings, section) == getattr(defaults, section)
