"""Torture: a seeded fuzz of 2,000 hostile JSON-RPC messages over stdio and over TCP;
the server answers every health check quickly, never crashes, logs little and
still finds passages afterwards (tests/torture/fuzz.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from torture import fuzz
from torture.hostile import PROSE

MESSAGES = 2000


def test_the_same_seed_gives_the_same_messages() -> None:
    assert list(fuzz.messages(7, 300)) == list(fuzz.messages(7, 300))
    assert list(fuzz.messages(7, 300)) != list(fuzz.messages(8, 300))


@pytest.mark.parametrize("transport", ["stdio", "tcp"])
def test_fuzzed_json_rpc_leaves_the_server_healthy(tmp_path: Path, transport: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keeper.md").write_text("# Keeper\n\n" + PROSE)
    result = fuzz.run(transport, docs, tmp_path / "work", count=MESSAGES, seed=11)
    figures = result.to_json()
    assert result.messages == MESSAGES, figures
    assert result.crashes == 0 and result.hangs == 0, figures
    assert result.exit_code == 0, figures
    assert len(result.health_ms) >= MESSAGES // 50, figures
    assert figures["health_p95_ms"] < 2000, figures  # a loaded 2-core machine: generous
    assert figures["tracebacks"] == 0, figures
    assert figures["stderr_kb"] < 512, figures
