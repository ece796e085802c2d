"""Sharing the CPU between models that run at the same time in one process.

llama.cpp's worker threads spin while they wait for each other, so two models that
each use every core (the daemon embedding a folder while it writes an answer) slow
each other down more than their share.  Measured on 2 cores with all-MiniLM-L6-v2
embedding while SmolLM2-135M generated (``benchmarks/contention.py``, two runs):
with every core each, generation ran at 26-28 tokens/s and embedding at 5.5-5.6
chunks/s; sharing, at 37-41 tokens/s and 5.3-6.4 chunks/s.

Each model marks the time it computes with :meth:`CpuShare.busy` and, through its
:class:`ThreadLimit`, takes its thread count before each step: its own maximum
divided by the number of models busy now.  A model running alone keeps every core.

Other processes count too.  With another busy process on 2 cores, two llama.cpp
threads spin at every barrier waiting for the one the scheduler has parked, and
generation collapsed (first token after 20-45 s).  :class:`ExternalLoad` measures
how many cores other processes keep busy (``/proc/stat`` minus this process's own
CPU time, over the last quarter second or so), and the threads a model gets are
taken from the cores left free, never fewer than one: one thread never waits on
another (``benchmarks/contention.py`` measures it).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator

Sample = tuple[float, float, float]  # (wall seconds, machine busy CPU-seconds, ours)


def _proc_sample() -> Sample | None:
    """Now, the machine's busy CPU time and this process's, in seconds; None off Linux."""
    try:
        with open("/proc/stat", "rb") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if len(fields) < 8 or fields[0] != b"cpu":
        return None
    # user nice system idle iowait irq softirq steal: busy is all but idle and iowait
    ticks = [int(x) for x in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return time.monotonic(), busy / _CLOCK_TICKS, time.process_time()


_CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


class ExternalLoad:
    """How many cores other processes keep busy, measured over a short recent window.

    Reading it costs two small file reads at most every ``interval`` seconds; in
    between, the last estimate is returned.  Without ``/proc`` it is always 0.
    """

    def __init__(
        self,
        interval: float = 0.25,
        sample: Callable[[], Sample | None] = _proc_sample,
    ) -> None:
        self.interval = interval
        self._sample = sample
        self._lock = threading.Lock()
        self._last = sample()
        self._cores = 0.0

    def cores(self) -> float:
        with self._lock:
            if self._last is None:
                return 0.0
            now = self._sample()
            if now is None or now[0] - self._last[0] < self.interval:
                return self._cores
            wall = now[0] - self._last[0]
            others = (now[1] - self._last[1]) - (now[2] - self._last[2])
            self._cores = max(0.0, others / wall)
            self._last = now
            return self._cores


class CpuShare:
    def __init__(self, load: ExternalLoad | None = None, cpus: int | None = None) -> None:
        self._lock = threading.Lock()
        self._busy: dict[int, int] = {}  # id(model) -> nesting depth
        self.load = load if load is not None else ExternalLoad()
        self.cpus = cpus if cpus is not None else len(os.sched_getaffinity(0))

    @contextlib.contextmanager
    def busy(self, model: object) -> Iterator[None]:
        """Count ``model`` as computing for the duration of the block."""
        key = id(model)
        with self._lock:
            self._busy[key] = self._busy.get(key, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                if self._busy[key] == 1:
                    del self._busy[key]
                else:
                    self._busy[key] -= 1

    def free(self) -> int:
        """Cores other processes leave free now (at least one)."""
        return max(1, self.cpus - round(self.load.cores()))

    def threads(self, model: object, maximum: int) -> int:
        """Threads ``model`` may use now: the free cores (at most ``maximum``) split
        between the busy models."""
        with self._lock:
            others = sum(1 for key in self._busy if key != id(model))
        return max(1, min(maximum, self.free()) // (others + 1))


#: The process's one share: every llama.cpp model in Citeline uses it.
CPU = CpuShare()


class ThreadLimit:
    """One model's thread count, kept at its share of :data:`CPU`.

    ``apply`` sets the count on the model (``llama_set_n_threads`` on its context);
    it is called only when the count changes, from the model's own thread.
    """

    def __init__(
        self,
        model: object,
        maximum: int,
        apply: Callable[[int], None],
        share: CpuShare | None = None,
    ) -> None:
        self._model = model
        self.maximum = maximum
        self.current = maximum
        self._apply = apply
        self._share = share if share is not None else CPU

    def fit(self) -> None:
        """Take this model's share now; call before each decode."""
        threads = self._share.threads(self._model, self.maximum)
        if threads != self.current:
            self._apply(threads)
            self.current = threads
