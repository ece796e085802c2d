"""Decoding on several one-thread contexts of one model at once: *lanes*.

A llama.cpp context computing on two threads meets a barrier after every graph node
(about a hundred per MiniLM decode), where the faster thread waits for the slower.
Two contexts of the same model, each computing on one thread in its own Python thread
(ctypes releases the GIL for the call), share the weights and nothing else, and never
wait for each other.  Measured on 2 cores with all-MiniLM-L6-v2 over 256 chunks
(docs/performance.md, "Lanes"): one context on 2 threads 3,301 tokens/s, two lanes
4,477 (1.36×), one thread alone 2,308; with one thread per lane no OpenMP region
runs, so nothing spins when another process takes a core.

:class:`Lanes` holds the contexts (the first made with the encoder, the others on
the first call that can use them) and hands a call's decodes out from one queue, so
a lane that finishes early takes the next.  A call with one decode (a query) runs on
the first lane in the caller's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from citeline.backends.llama.batch import PackedBatch

T = TypeVar("T")


@dataclass
class Lane:
    """One context of the model with its own batch buffers."""

    ctx: Any
    memory: Any
    batch: PackedBatch


class Lanes(Generic[T]):
    """The lanes of one encoder.  Calls come from one thread at a time."""

    def __init__(self, first: Lane, make: Callable[[], Lane]) -> None:
        self._lanes = [first]
        self._make = make
        self._pool: ThreadPoolExecutor | None = None
        self._workers = 0  # the pool's threads: one per lane but the first

    @property
    def first(self) -> Lane:
        return self._lanes[0]

    def __len__(self) -> int:
        return len(self._lanes)

    def run(self, items: Sequence[T], count: int, work: Callable[[Lane, T], None]) -> int:
        """``work(lane, item)`` for every item, on up to ``count`` lanes at once;
        returns how many ran.  The first exception is raised once every lane stopped."""
        count = max(1, min(count, len(items)))
        if count == 1:
            for item in items:
                work(self.first, item)
            return 1
        while len(self._lanes) < count:
            self._lanes.append(self._make())
        if self._pool is None or self._workers < len(self._lanes) - 1:
            if self._pool is not None:
                self._pool.shutdown()
            self._workers = len(self._lanes) - 1
            self._pool = ThreadPoolExecutor(self._workers, "citeline-lane")
        queue = iter(items)
        lock = threading.Lock()
        failed = threading.Event()

        def drain(lane: Lane) -> None:
            while not failed.is_set():
                with lock:
                    item = next(queue, None)
                if item is None:
                    return
                try:
                    work(lane, item)
                except BaseException:
                    failed.set()
                    raise

        others: list[Future[None]] = [
            self._pool.submit(drain, lane) for lane in self._lanes[1:count]
        ]
        try:
            drain(self.first)
        finally:
            for future in others:
                future.exception()  # waits; a lane never outlives the call
        for future in others:
            future.result()
        return count

    def close(self, free: Callable[[Any], None]) -> None:
        """Free every lane's context (``free``) after its work has stopped."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for lane in self._lanes:
            if lane.ctx is not None:
                free(lane.ctx)
                lane.ctx = None
        self._lanes = self._lanes[:1]
