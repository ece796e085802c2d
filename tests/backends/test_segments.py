"""The head and token files the base-and-log indexes share."""

from __future__ import annotations

from pathlib import Path

import pytest

from citeline.backends import segments


def test_a_head_round_trips_and_refuses_another_format(tmp_path: Path) -> None:
    path = tmp_path / "head"
    with pytest.raises(FileNotFoundError, match="no thing at"):
        segments.read_head(path, "f/1", "thing")
    segments.write_head(path, {"format": "f/1", "log": "x"})
    assert segments.read_head(path, "f/1", "thing") == {"format": "f/1", "log": "x"}
    with pytest.raises(ValueError, match="another format"):
        segments.read_head(path, "f/2", "thing")
    path.write_bytes(b"\xff")
    with pytest.raises(ValueError, match="unreadable thing"):
        segments.read_head(path, "f/1", "thing")


def test_only_the_named_tokens_files_are_kept(tmp_path: Path) -> None:
    keep, old = segments.new_token(), segments.new_token()
    assert len(keep) == segments.TOKEN_LENGTH and keep != old
    names = [f"head.{keep}.log", f"head.{old}.log", f"head.{old}.rows.npy", "head.json", "other"]
    for name in names:
        (tmp_path / name).write_text("x")
    segments.remove_other_tokens(tmp_path / "head", keep)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"head.{keep}.log", "head.json", "other"]
    )


def test_a_log_grows_from_the_bytes_its_head_counts(tmp_path: Path) -> None:
    path = tmp_path / "head"
    (tmp_path / "head.t.log").write_bytes(b"okHALF-WRITTEN")  # a crash after the head said 2
    head = segments.append_log(path, {"format": "f/1", "log": "head.t.log", "log_bytes": 2}, b"+")
    assert head["log_bytes"] == 3 and (tmp_path / "head.t.log").read_bytes() == b"ok+"
    assert segments.read_head(path, "f/1", "thing") == head
