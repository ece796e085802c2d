"""One editor's settings and folders: the folders key, the citeline section, layering,
and what the service is told."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from citeline.lsp.convert import uri_to_path
from citeline.service.session import EditorSession, merge_layers, split_options


def test_split_options_takes_out_folders() -> None:
    layer, folders, warnings = split_options(
        {"folders": ["/a", "file:///b%20c"], "search": {"topK": 3}}, "init", uri_to_path
    )
    assert layer == {"search": {"topK": 3}}
    assert folders == [Path("/a"), Path("/b c")]
    assert warnings == []


def test_split_options_accepts_a_citeline_section_and_a_single_folder() -> None:
    layer, folders, _ = split_options(
        {"citeline": {"folders": "/x", "answer": {}}}, "init", uri_to_path
    )
    assert layer == {"answer": {}}
    assert folders == [Path("/x")]


def test_split_options_warns_instead_of_failing() -> None:
    assert split_options(None, "init", uri_to_path) == ({}, None, [])
    assert split_options("nonsense", "init", uri_to_path)[2] == ["init must be an object; ignored"]
    layer, folders, warnings = split_options({"folders": 3, "search": {}}, "init", uri_to_path)
    assert layer == {"search": {}} and folders is None and "folders" in warnings[0]
    _, folders, warnings = split_options({"folders": ["untitled:x", "/ok"]}, "init", uri_to_path)
    assert folders == [Path("/ok")] and "not a local path" in warnings[0]


def test_merge_layers_is_deep() -> None:
    assert merge_layers({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}, "c": 4}) == {
        "a": {"x": 1, "y": 3},
        "b": 1,
        "c": 4,
    }


class Recorder:
    """The service's side (pure logic): what it was told."""

    def __init__(self) -> None:
        self.settings: list[dict[str, object]] = []
        self.chosen: list[tuple[list[Path], list[Path], list[Path] | None]] = []

    def settings_changed(self, editor_settings: dict[str, object]) -> None:
        self.settings.append(editor_settings)

    def choose(
        self,
        opened: Iterable[Path],
        named: Iterable[Path] = (),
        setting: Iterable[Path] | None = None,
    ) -> None:
        self.chosen.append((list(opened), list(named), None if setting is None else list(setting)))


def test_the_pulled_section_is_layered_over_the_initial_options() -> None:
    service = Recorder()
    session = EditorSession(service, [Path("/docs")], uri_to_path)
    warnings = session.initialize({"search": {"top_k": 3, "mode": "hybrid"}}, [Path("/w")])
    assert warnings == [] and service.settings == []  # nothing served before initialized
    assert session.pulled({"citeline": {"search": {"top_k": 5}}}) == []
    session.apply()
    assert service.settings == [{"search": {"top_k": 5, "mode": "hybrid"}}]
    assert service.chosen == [([Path("/w")], [Path("/docs")], None)]


def test_a_change_replaces_the_settings_and_the_folders_setting_replaces_opened() -> None:
    service = Recorder()
    session = EditorSession(service, (), uri_to_path)
    session.initialize({"folders": ["/a"], "search": {"top_k": 3}}, [Path("/w")])
    assert session.pulled(None) == []
    session.apply()
    assert service.chosen[-1] == ([Path("/w")], [], [Path("/a")])
    assert session.changed({"answer": {}, "folders": 3}) == [
        "setting 'folders' must be a list of paths; ignored"
    ]
    session.apply()
    assert service.settings[-1] == {"answer": {}}
    assert service.chosen[-1] == ([Path("/w")], [], None)


def test_opened_folders_come_and_go() -> None:
    service = Recorder()
    session = EditorSession(service, (), uri_to_path)
    session.initialize(None, [Path("/a"), Path("/b")])
    session.folders_changed([Path("/c"), Path("/a")], [Path("/b")])
    assert service.chosen == [([Path("/a"), Path("/c")], [], None)]
