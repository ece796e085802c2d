"""What one editor tells the service, and the policy for it: settings layers and
the folders to serve.

Settings come from the editor in three ways, each given here as it arrived:
``initializationOptions`` (:meth:`EditorSession.initialize`), then the client's
``citeline`` section when the server pulls it (:meth:`EditorSession.pulled`:
merged over the first), then each change (:meth:`EditorSession.changed`: it
replaces them); after each (once the client is initialized)
:meth:`EditorSession.apply` gives the service the layer and the folders to serve.
Together they are the top layer over the defaults and each folder's
``citeline.toml`` (the command line's ``--store``/``--collection`` are
over every layer).  A ``folders`` key in them is taken out: it names the folders
to serve, in place of the folders the editor opened (``service/selection.py``).
Settings that are not an object, or a ``folders`` value that is not a list of
paths, are warnings (the layer below is used), never errors.

The language server passes the client's facts in: the options as sent, the
workspace folders as paths, and how the client names a folder (a path or a
``file://`` URI).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

SECTION = "citeline"  # the client's settings section

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]+:")


class Served(Protocol):
    """What the session changes in the service (``Service``)."""

    def settings_changed(self, editor_settings: dict[str, object]) -> None: ...

    def choose(
        self,
        opened: Iterable[Path],
        named: Iterable[Path] = (),
        setting: Iterable[Path] | None = None,
    ) -> None: ...


def split_options(
    options: object, where: str, uri_path: Callable[[str], Path | None]
) -> tuple[dict[str, Any], list[Path] | None, list[str]]:
    """Editor settings -> (the settings layer, the ``folders`` setting or None, warnings).
    ``uri_path`` reads a folder named by a URI (None: not a local folder)."""
    if options is None:
        return {}, None, []
    if not isinstance(options, Mapping):
        return {}, None, [f"{where} must be an object; ignored"]
    section = options.get(SECTION)
    if set(options) == {SECTION} and isinstance(section, Mapping):
        options = section
    layer: dict[str, Any] = {str(k): v for k, v in options.items()}
    value = layer.pop("folders", None)
    if value is None:
        return layer, None, []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return layer, None, ["setting 'folders' must be a list of paths; ignored"]
    folders: list[Path] = []
    warnings: list[str] = []
    for item in value:
        path = uri_path(item) if _SCHEME.match(item) else Path(item).expanduser().absolute()
        if path is None:
            warnings.append(f"setting 'folders': {item!r} is not a local path; ignored")
        else:
            folders.append(path)
    return layer, folders or None, warnings


def merge_layers(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_layers(out[key], value)
        else:
            out[key] = value
    return out


class EditorSession:
    """One editor's settings layer, ``folders`` setting and opened folders."""

    def __init__(
        self,
        service: Served,
        named: Iterable[Path] = (),
        uri_path: Callable[[str], Path | None] = lambda uri: None,
    ) -> None:
        self.service = service
        self.named = [Path(d).expanduser().absolute() for d in named]  # --docs
        self.uri_path = uri_path
        self.settings: dict[str, Any] = {}
        self.folders_setting: list[Path] | None = None
        self.opened: list[Path] = []

    def _split(
        self, options: object, where: str
    ) -> tuple[dict[str, Any], list[Path] | None, list[str]]:
        return split_options(options, where, self.uri_path)

    def initialize(self, options: object, opened: Iterable[Path]) -> list[str]:
        """The client started with ``options`` and ``opened`` these folders; nothing is
        served until :meth:`pulled`.  The warnings, to show once the client can."""
        self.settings, self.folders_setting, warnings = self._split(
            options, "initializationOptions"
        )
        self.opened = list(opened)
        return warnings

    def pulled(self, options: object | None) -> list[str]:
        """The client's settings section as the server pulled it once initialized
        (None: the client has none), over the initial options; its warnings.  Then
        :meth:`apply`."""
        if options is None:
            return []
        layer, folders, warnings = self._split(options, "workspace/configuration")
        self.settings = merge_layers(self.settings, layer)
        self.folders_setting = folders or self.folders_setting
        return warnings

    def changed(self, options: object) -> list[str]:
        """The client's settings changed to ``options`` (they replace the earlier
        ones); its warnings.  Then :meth:`apply`."""
        self.settings, self.folders_setting, warnings = self._split(options, "settings.citeline")
        return warnings

    def folders_changed(self, added: Iterable[Path], removed: Iterable[Path]) -> None:
        gone = {str(p) for p in removed}
        opened = [r for r in self.opened if str(r) not in gone]
        for path in added:
            if path not in opened:
                opened.append(path)
        self.opened = opened
        self.service.choose(self.opened, self.named, self.folders_setting)

    def apply(self) -> None:
        """Give the service the settings layer, then the folders to serve."""
        self.service.settings_changed(self.settings)
        self.service.choose(self.opened, self.named, self.folders_setting)
