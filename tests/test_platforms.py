"""Platforms without the POSIX features Citeline needs get one plain line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from citeline import platforms

# Runs the real command line in a Python that lacks what Windows lacks: fcntl and the
# POSIX-only open flags.
WITHOUT_POSIX = """
import os, sys
sys.modules["fcntl"] = None
for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NOCTTY"):
    delattr(os, name)
from citeline.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_without_posix(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_POSIX, *args], capture_output=True, text=True, timeout=120
    )


def test_this_platform_has_everything() -> None:
    assert platforms.missing_features() == [] and platforms.unsupported_reason() is None


def test_the_first_command_says_which_platforms_work(tmp_path: Path) -> None:
    for command in (["index", "--docs", str(tmp_path)], ["serve"], ["demo"]):
        proc = run_without_posix(*command)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("citeline: error: Citeline runs on Linux and macOS;")
        assert "O_NOFOLLOW, O_DIRECTORY, O_NOCTTY, fcntl" in lines[0] and "WSL 2" in lines[0]
        assert proc.stdout == ""
    assert not (tmp_path / ".citeline").exists()


def test_version_and_help_still_answer() -> None:
    proc = run_without_posix("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("citeline ")


def test_each_missing_feature_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(platforms.os, "O_CLOEXEC")
    monkeypatch.setattr(platforms.importlib.util, "find_spec", lambda name: None)
    assert platforms.missing_features() == ["O_CLOEXEC", "fcntl"]
    assert "lacks O_CLOEXEC, fcntl" in (platforms.unsupported_reason() or "")
