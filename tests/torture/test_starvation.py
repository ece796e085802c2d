"""Torture: eight idle connections that reconnect when dropped never keep the token
holder out, and SIGTERM closes the server cleanly (tests/torture/starvation.py)."""

from __future__ import annotations

from pathlib import Path

from torture import starvation


def test_the_token_holder_is_served_beside_idle_reconnecting_connections(
    tmp_path: Path,
) -> None:
    result = starvation.run(tmp_path, attackers=8, attempts=20)
    assert result.attacker_connections >= 8
    assert result.served == result.attempts
    assert result.sigterm_exit == 0
    assert not result.token_file_left
    assert result.clean_close  # the index closed as exit closes it: no full check next
