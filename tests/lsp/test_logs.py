"""The server's log: bounded lines, a shared rate limit that says what it dropped."""

from __future__ import annotations

import io
import logging

from citeline.lsp.logs import MAX_CHARS, RateLimit


def _logger(limit: RateLimit) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(limit)
    logger = logging.getLogger(f"citeline.test.logs.{id(limit)}")
    logger.propagate = False
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    return logger, stream


def test_a_flood_costs_a_burst_then_a_trickle_and_says_what_it_dropped() -> None:
    limit = RateLimit(per_second=0.001, burst=10)
    logger, stream = _logger(limit)
    for i in range(5000):
        logger.warning("bad message %d", i)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 10
    limit._tokens = 1.0  # time passes
    logger.warning("after the flood")
    last = stream.getvalue().splitlines()[-1]
    assert last == "(4990 log lines dropped) after the flood"


def test_a_long_message_is_cut() -> None:
    logger, stream = _logger(RateLimit())
    logger.warning("%s", "x" * 100_000)
    assert len(stream.getvalue().strip()) == MAX_CHARS


def test_one_record_is_counted_once_by_every_handler() -> None:
    limit = RateLimit(per_second=0.001, burst=3)
    logger, first = _logger(limit)
    second = io.StringIO()
    other = logging.StreamHandler(second)
    other.addFilter(limit)
    logger.addHandler(other)
    for i in range(3):
        logger.warning("line %d", i)
    assert first.getvalue() == second.getvalue() == "line 0\nline 1\nline 2\n"
