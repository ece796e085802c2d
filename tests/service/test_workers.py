"""The worker threads: urgent tasks first, cooperative long tasks, FIFO otherwise."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from citeline.service.workers import Worker, WorkerStopped


def test_tasks_run_in_order_and_urgent_first() -> None:
    worker = Worker("test")
    gate = threading.Event()
    order: list[str] = []
    blocker = worker.submit(gate.wait)
    futures = [
        worker.submit(lambda: order.append("normal-1")),
        worker.submit(lambda: order.append("normal-2")),
        worker.submit(lambda: order.append("urgent"), urgent=True),
    ]
    gate.set()
    blocker.result(5)
    for f in futures:
        f.result(5)
    assert order == ["urgent", "normal-1", "normal-2"]
    assert worker.stop(5)


def test_a_long_task_lets_urgent_ones_in_between_steps() -> None:
    worker = Worker("test")
    order: list[str] = []
    step_started = threading.Event()
    go_on = threading.Event()

    def long_task() -> None:
        for i in range(3):
            order.append(f"step-{i}")
            if i == 0:
                step_started.set()
                go_on.wait(5)
            worker.run_urgent()

    long = worker.submit(long_task)
    step_started.wait(5)
    search = worker.submit(lambda: order.append("search"), urgent=True)
    go_on.set()
    long.result(5)
    search.result(5)
    assert order == ["step-0", "search", "step-1", "step-2"]
    worker.stop(5)


def test_results_exceptions_and_cancelled_tasks() -> None:
    worker = Worker("test")
    gate = threading.Event()
    worker.submit(gate.wait)
    skipped = worker.submit(lambda: pytest.fail("a cancelled task ran"))
    assert skipped.cancel()
    failing = worker.submit(lambda: 1 / 0)
    ok = worker.submit(lambda: 42)
    gate.set()
    assert ok.result(5) == 42
    with pytest.raises(ZeroDivisionError):
        failing.result(5)
    with pytest.raises(CancelledError):
        skipped.result(0)
    worker.stop(5)


def test_run_urgent_outside_the_worker_does_nothing_and_stop_refuses_new_work() -> None:
    worker = Worker("test")
    worker.run_urgent()
    assert worker.stop(5)
    with pytest.raises(WorkerStopped):
        worker.submit(lambda: 1).result(1)


async def test_call_awaits_without_blocking_the_loop() -> None:
    worker = Worker("test")
    assert await worker.call(lambda: threading.current_thread().name) == "citeline-test"
    worker.stop(5)
