"""Editor settings: the folders key, the citeline section, layering."""

from __future__ import annotations

from pathlib import Path

from citeline.lsp.session import merge_layers, split_options


def test_split_options_takes_out_folders() -> None:
    layer, folders, warnings = split_options(
        {"folders": ["/a", "file:///b%20c"], "search": {"topK": 3}}, "init"
    )
    assert layer == {"search": {"topK": 3}}
    assert folders == [Path("/a"), Path("/b c")]
    assert warnings == []


def test_split_options_accepts_a_citeline_section_and_a_single_folder() -> None:
    layer, folders, _ = split_options({"citeline": {"folders": "/x", "answer": {}}}, "init")
    assert layer == {"answer": {}}
    assert folders == [Path("/x")]


def test_split_options_warns_instead_of_failing() -> None:
    assert split_options(None, "init") == ({}, None, [])
    assert split_options("nonsense", "init")[2] == ["init must be an object; ignored"]
    layer, folders, warnings = split_options({"folders": 3, "search": {}}, "init")
    assert layer == {"search": {}} and folders is None and "folders" in warnings[0]
    _, folders, warnings = split_options({"folders": ["untitled:x", "/ok"]}, "init")
    assert folders == [Path("/ok")] and "not a local path" in warnings[0]


def test_merge_layers_is_deep() -> None:
    assert merge_layers({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}, "c": 4}) == {
        "a": {"x": 1, "y": 3},
        "b": 1,
        "c": 4,
    }
