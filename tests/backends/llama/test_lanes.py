"""Lanes: how a call's decodes are handed out (pure logic; the real model runs on
lanes in tests/backends/llama/test_embedder.py)."""

from __future__ import annotations

import threading
import time

import pytest

from citeline.backends.llama.lanes import Lane, Lanes


def lane(name: str) -> Lane:
    return Lane(ctx=name, memory=None, batch=None)  # type: ignore[arg-type]


def test_one_lane_runs_in_the_callers_thread_and_more_are_made_when_useful() -> None:
    made: list[str] = []

    def make() -> Lane:
        made.append(f"ctx{len(made) + 1}")
        return lane(made[-1])

    lanes: Lanes[int] = Lanes(lane("ctx0"), make)
    seen: list[tuple[str, int, str]] = []

    def work(on: Lane, item: int) -> None:
        time.sleep(0.01)  # long enough that every lane takes some
        seen.append((on.ctx, item, threading.current_thread().name))

    assert lanes.run([1, 2, 3], 1, work) == 1
    assert {t for _, _, t in seen} == {threading.current_thread().name} and made == []
    seen.clear()
    assert lanes.run(list(range(12)), 3, work) == 3
    assert sorted(i for _, i, _ in seen) == list(range(12)) and made == ["ctx1", "ctx2"]
    assert {c for c, _, _ in seen} == {"ctx0", "ctx1", "ctx2"}
    assert lanes.run([7], 3, work) == 1 and len(lanes) == 3  # one item: one lane
    freed: list[str] = []
    lanes.close(freed.append)
    assert freed == ["ctx0", "ctx1", "ctx2"]


def test_a_failing_item_stops_every_lane_and_is_raised_once_they_stopped() -> None:
    lanes: Lanes[int] = Lanes(lane("a"), lambda: lane("b"))
    done: list[int] = []

    def work(on: Lane, item: int) -> None:
        if item == 3:
            raise RuntimeError("decode failed")
        time.sleep(0.005)
        done.append(item)

    with pytest.raises(RuntimeError, match="decode failed"):
        lanes.run(list(range(100)), 2, work)
    assert len(done) < 99  # the others stopped early
