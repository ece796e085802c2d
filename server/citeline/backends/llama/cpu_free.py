"""How many cores other processes leave free now, and how many lanes an encoder runs on.

Read at the start of each batch of decodes (``encoder._encode``), never inside one:
``/proc/stat``'s ``procs_running`` is every runnable task on the machine at this
instant; the tasks of this process that are running (``/proc/self/task/*/stat``, state
``R``; the caller's own thread among them) are taken out, and what is left is the other
processes' demand.  The reading is instantaneous and costs tens of microseconds (no
window to wait for); a task that runs in bursts may be missed by one reading, so the
smallest of a few readings counts (a short-lived task is not a busy process).
``docs/performance.md`` section 4 ("Reading the load") measured that the count is exact
for busy processes, where a CPU-time window saturates at the core count.

:func:`lanes_for` is the pure decision; :class:`FreeCpu` reads the machine.  Where
``/proc`` cannot be read (not Linux), nothing is known and every core counts as free.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

#: Readings per decision: the smallest counts.
READINGS = 3


#: Lanes beyond the free cores a batch runs on (see :func:`lanes_for`).
BEYOND = 2


def lanes_for(maximum: int, cores: int, others: int, *, beyond: int = BEYOND) -> int:
    """The lanes a batch runs on: ``maximum`` (the model's share of this process's
    cores) while the cores ``others`` leave free hold it, else the free cores plus
    ``beyond``, at most one lane more than ``maximum`` and never fewer than one.

    A lane is one thread that never waits for another (no barrier, nothing spins), so
    a lane beyond the free cores costs the other processes only the fair share the
    scheduler gives any runnable thread, and fewer lanes than the share only give
    that share away: beside one busy process on two cores, one lane gets one core,
    two lanes 4/3 and three 3/2 (``docs/performance.md``, the last section, measures
    ``beyond`` 0, 1 and 2).
    """
    maximum = max(1, maximum)
    free = max(cores - max(others, 0), 0)
    if free >= maximum:
        return maximum
    return max(1, min(maximum + 1, free + beyond))


def running_tasks(proc_stat: str) -> int | None:
    """``procs_running`` of ``/proc/stat``'s text (None when absent)."""
    for line in proc_stat.splitlines():
        if line.startswith("procs_running"):
            return int(line.split()[1])
    return None


def task_running(task_stat: str) -> bool:
    """Whether one ``/proc/<pid>/task/<tid>/stat`` line is of a running task."""
    rest = task_stat.rsplit(")", 1)[-1].split()
    return bool(rest) and rest[0] == "R"


def others_running(procs_running: int, own_running: int) -> int:
    """Runnable tasks of other processes: the machine's less this process's own
    (at least the reading thread itself, which is running while it reads)."""
    return max(procs_running - max(own_running, 1), 0)


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def _own_running(read: Callable[[str], str], tasks: Iterable[str]) -> int:
    count = 0
    for tid in tasks:
        try:
            if task_running(read(f"/proc/self/task/{tid}/stat")):
                count += 1
        except OSError:  # the thread ended between the listing and the read
            continue
    return count


class FreeCpu:
    """Reads how many runnable tasks other processes have (``others``)."""

    def __init__(
        self,
        read: Callable[[str], str] = _read,
        list_tasks: Callable[[], Iterable[str]] = lambda: os.listdir("/proc/self/task"),
    ) -> None:
        self._read = read
        self._list_tasks = list_tasks
        self.last: int | None = None  # the last reading, for the benchmarks

    def others(self) -> int | None:
        """Other processes' runnable tasks now (the smallest of :data:`READINGS`),
        or None when ``/proc`` cannot be read."""
        best: int | None = None
        for _ in range(READINGS):
            try:
                machine = running_tasks(self._read("/proc/stat"))
                own = _own_running(self._read, self._list_tasks())
            except (OSError, ValueError):
                return None
            if machine is None:
                return None
            reading = others_running(machine, own)
            best = reading if best is None else min(best, reading)
            if best == 0:
                break
        self.last = best
        return best
