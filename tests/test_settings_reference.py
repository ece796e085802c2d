"""The settings the docs describe are the settings Citeline has.

``docs/user-guide.md`` documents every ``citeline.toml`` table and key with its
type and default, and ``samples/configuration.md`` (the demo corpus, which users
ask about) lists every key: both are read here and compared with the dataclasses
of ``citeline.settings``, so a key added, renamed, retyped or given a new default
without its documentation fails this test, and so does a documented key that
does not exist.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from typing import Any, get_type_hints

from citeline.settings import OWN_MODEL_RETRIEVAL, Settings
from conftest import REPO

GUIDE = REPO / "docs" / "user-guide.md"
SAMPLE = REPO / "samples" / "configuration.md"
TYPE_NAMES = {str: "string", int: "integer", float: "float", bool: "boolean"}
_TABLE_HEADING = re.compile(r"^### `\[(\w+)\]`\s*$")
_LITERAL = re.compile(r"`([^`]*)`")


def settings_keys() -> dict[str, dict[str, tuple[type, Any]]]:
    """table -> key -> (type, default), from the dataclasses themselves."""
    settings = Settings()
    tables: dict[str, dict[str, tuple[type, Any]]] = {}
    for table in dataclasses.fields(settings):
        value = getattr(settings, table.name)
        hints = get_type_hints(type(value))
        tables[table.name] = {
            f.name: (hints[f.name], getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    return tables


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def guide_tables(text: str) -> dict[str, dict[str, list[str]]]:
    """table -> key -> [type, default cell] from the guide's reference tables."""
    tables: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for line in text.splitlines():
        heading = _TABLE_HEADING.match(line)
        if heading:
            current = tables.setdefault(heading.group(1), {})
            continue
        if line.startswith("#"):
            current = None
            continue
        if current is None or not line.startswith("| `"):
            continue
        key, kind, default, _meaning = _cells(line)
        current[key.strip("`")] = [kind, default]
    return tables


def toml_value(literal: str) -> Any:
    return tomllib.loads(f"value = {literal}")["value"]


def test_the_guide_documents_every_table_and_key_with_its_type_and_default() -> None:
    documented = guide_tables(GUIDE.read_text("utf-8"))
    actual = settings_keys()
    assert sorted(documented) == sorted(actual)
    for table, keys in actual.items():
        assert sorted(documented[table]) == sorted(keys), table
        for key, (kind, default) in keys.items():
            doc_kind, doc_default = documented[table][key]
            where = f"[{table}] {key}"
            assert doc_kind == TYPE_NAMES[kind], where
            literals = _LITERAL.findall(doc_default)
            assert literals, f"{where}: no default given"
            assert toml_value(literals[0]) == default, where
            assert type(toml_value(literals[0])) is kind, f"{where}: write the default as a {kind}"
    # the retrieval defaults that follow a model the user brings, in brackets
    for key, (_kind, _default) in actual["retrieval"].items():
        literals = _LITERAL.findall(documented["retrieval"][key][1])
        if len(literals) > 1:
            assert toml_value(literals[1]) == getattr(OWN_MODEL_RETRIEVAL, key), key


def test_the_guide_names_the_number_of_tables() -> None:
    count = len(settings_keys())
    words = {9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
    assert f"It has {words.get(count, str(count))} tables" in GUIDE.read_text("utf-8")


def test_the_sample_configuration_lists_every_key_and_table() -> None:
    text = SAMPLE.read_text("utf-8")
    listed = set(re.findall(r"^\| `(\w+)\.(\w+)` \|", text, flags=re.MULTILINE))
    actual = {(table, key) for table, keys in settings_keys().items() for key in keys}
    assert listed == actual
    intro = re.search(r"with (\w+) tables: (.*?)\. Every", text, flags=re.DOTALL)
    assert intro is not None
    assert re.findall(r"`\[(\w+)\]`", intro.group(2)) == list(settings_keys())


def test_the_reader_finds_a_missing_or_extra_key() -> None:
    """The comparison itself: a guide without a key, or with one more, differs."""
    text = GUIDE.read_text("utf-8")
    without = text.replace("| `top_k` | integer | `5` |", "| `topk_removed` | integer | `5` |")
    assert "topk_removed" in guide_tables(without)["search"]
    assert "top_k" not in guide_tables(without)["search"]
    assert guide_tables(text)["search"]["top_k"] == ["integer", "`5`"]
