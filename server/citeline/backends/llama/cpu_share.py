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

Other processes are left to the operating system: llama.cpp's OpenMP threads wait
passively (``runtime.import_llama_cpp``), so a thread whose partner the scheduler
has parked sleeps instead of spinning.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class CpuShare:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: dict[int, int] = {}  # id(model) -> nesting depth

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

    def threads(self, model: object, maximum: int) -> int:
        """Threads ``model`` may use now: ``maximum`` split between the busy models."""
        with self._lock:
            others = sum(1 for key in self._busy if key != id(model))
        return max(1, maximum // (others + 1))


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
