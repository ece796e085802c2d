"""lsp/attach.py: which folders a window would serve, which daemon it attaches to,
the records a daemon writes.  Two real `citeline serve --attach` processes with a
real LSP client: tests/e2e/test_lsp_attach.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from citeline.lsp.attach import find_daemon, record_path, window_folders


def initialize(*folders: Path, root: Path | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"capabilities": {}}
    if folders:
        params["workspaceFolders"] = [{"uri": f.as_uri(), "name": f.name} for f in folders]
    if root is not None:
        params["rootUri"] = root.as_uri()
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def write_record(where: Path, folder: Path, **record: Any) -> None:
    where.mkdir(mode=0o700, exist_ok=True)
    record_path(folder, where).write_text(json.dumps(record))


def test_a_window_serves_its_marked_workspace_folders_or_the_named_ones(tmp_path: Path) -> None:
    marked, plain, named = tmp_path / "marked", tmp_path / "plain", tmp_path / "named"
    for folder in (marked, plain, named):
        folder.mkdir()
    (marked / "citeline.toml").write_text("")
    assert window_folders(initialize(marked, plain), []) == [marked]
    assert window_folders(initialize(root=marked), []) == [marked]
    assert window_folders(initialize(plain), []) == []
    assert window_folders(initialize(marked), [named]) == [named.absolute()]
    assert window_folders({"method": "initialize", "params": "junk"}, []) == []


def test_a_window_attaches_only_to_one_live_daemon_serving_all_its_folders(
    tmp_path: Path,
) -> None:
    where = tmp_path / "run"
    one, two = tmp_path / "one", tmp_path / "two"
    live = {"pid": os.getpid(), "socket": str(where / "a.sock"), "token": "t"}
    assert find_daemon([one], where) is None  # no record
    write_record(where, one, **live)
    assert find_daemon([one], where) == live
    assert find_daemon([], where) is None
    assert find_daemon([one, two], where) is None  # the second folder is not served
    write_record(where, two, **{**live, "socket": str(where / "b.sock")})
    assert find_daemon([one, two], where) is None  # served by two daemons
    write_record(where, two, **live)
    assert find_daemon([one, two], where) == live
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_record(where, one, **{**live, "pid": gone.pid})
    assert find_daemon([one], where) is None  # its daemon has ended
    record_path(one, where).write_text("not json")
    assert find_daemon([one], where) is None


def test_one_record_per_folder_whatever_its_spelling(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    assert record_path(folder, tmp_path) == record_path(tmp_path / "x" / ".." / "docs", tmp_path)
    assert record_path(folder, tmp_path) != record_path(tmp_path, tmp_path)
