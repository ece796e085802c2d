"""The lanes a batch runs on, from the cores other processes leave free (pure inputs),
and the reading of /proc that feeds it (from given file texts, then the real /proc)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from citeline.backends.llama.cpu_free import (
    FreeCpu,
    lanes_for,
    others_running,
    running_tasks,
    task_running,
)

PROC_STAT = """cpu  5161 0 2086 140771 201 0 96 0 0 0
cpu0 2570 0 1049 70384 104 0 51 0 0 0
intr 1049219 0 9 0
ctxt 2046311
btime 1764757200
processes 13093
procs_running 4
procs_blocked 0
"""


def test_nothing_else_running_keeps_the_share() -> None:
    assert lanes_for(2, 2, 0) == 2
    assert lanes_for(4, 8, 0) == 4
    assert lanes_for(1, 2, 0) == 1
    assert lanes_for(0, 2, 0) == 1  # never below one


def test_beside_busy_processes_a_batch_keeps_its_share_of_the_scheduler() -> None:
    # One busy process on two cores: one core free, two lanes beyond it, at most one
    # lane more than the model's share (three threads on two cores: 3/2 of a core).
    assert lanes_for(2, 2, 1) == 3
    assert lanes_for(2, 2, 1, beyond=1) == 2
    assert lanes_for(2, 2, 1, beyond=0) == 1  # the free cores alone
    # As many others as cores or more: the lanes beyond, never zero.
    assert lanes_for(2, 2, 2) == 2
    assert lanes_for(2, 2, 5) == 2
    assert lanes_for(2, 2, 5, beyond=0) == 1
    # Eight cores: one busy leaves enough for a share of 4, and 4 never grows.
    assert lanes_for(4, 8, 1) == 4
    assert lanes_for(4, 8, 6) == 4
    assert lanes_for(8, 8, 3) == 7
    assert lanes_for(8, 8, 3, beyond=0) == 5
    assert lanes_for(8, 8, 0) == 8
    assert lanes_for(2, 2, -1) == 2  # a reading below zero is nothing running


def test_proc_texts_are_parsed() -> None:
    assert running_tasks(PROC_STAT) == 4
    assert running_tasks("cpu 1 2 3\n") is None
    assert task_running("1234 (python3 (a) b) R 1 2 3")
    assert not task_running("1234 (citeline-lane) S 1 2 3")
    assert not task_running("")
    # The reading thread is running while it reads: it is never counted as another.
    assert others_running(4, 1) == 3
    assert others_running(4, 0) == 3
    assert others_running(1, 3) == 0


def test_the_smallest_of_a_few_readings_counts() -> None:
    machine = iter([5, 3, 4])
    files = {"/proc/self/task/1/stat": "1 (python) R 0", "/proc/self/task/2/stat": "2 (x) S 0"}

    def read(path: str) -> str:
        if path == "/proc/stat":
            return f"procs_running {next(machine)}\n"
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    free = FreeCpu(read, lambda: ["1", "2", "3"])  # task 3 ended before its read
    assert free.others() == 2  # min(5, 3, 4) - 1 running thread of ours
    assert free.last == 2


def test_no_proc_means_nothing_is_known() -> None:
    def read(path: str) -> str:
        raise FileNotFoundError(path)

    assert FreeCpu(read, lambda: []).others() is None
    assert FreeCpu(lambda path: "cpu 1\n", lambda: []).others() is None


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc")
def test_a_real_busy_process_is_seen() -> None:
    free = FreeCpu()
    before = free.others()
    assert before is not None
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        # The machine may have other work starting and stopping: the spinner is one
        # more runnable task than the quietest of a few readings before it.
        readings = [free.others() or 0 for _ in range(5)]
    finally:
        spinner.kill()
        spinner.wait()
    assert max(readings) >= 1
