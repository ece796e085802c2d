"""The two threads that own the models: one for the index, one for generation.

Model objects, SQLite connections and FAISS indexes are used from one thread
each, and the event loop never waits on them.  A :class:`Worker` is a thread with
two queues: urgent tasks (searches, query embeddings) always run before normal
ones (opening a folder, ingest batches, closing), and a long normal task lets
queued urgent tasks in by calling :meth:`Worker.run_urgent` between steps, which
the ingest progress callback does after every committed file.  Within one queue,
tasks run in the order they were submitted, so concurrent asks queue fairly.

:class:`Workers` holds the two and states the one rule for using them together:
:meth:`Workers.generate` runs work on the generation worker whose every index
access (retrieval, the folder's workspace) is an urgent task on the index worker.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from citeline.service.errors import ServiceError

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")

_Task = tuple[Future[Any], Callable[[], Any]]


class WorkerStopped(ServiceError):
    """The worker was stopped before the task could run."""


class Worker:
    """One daemon thread running submitted callables, urgent ones first."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._urgent: collections.deque[_Task] = collections.deque()
        self._normal: collections.deque[_Task] = collections.deque()
        self._ready = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=f"citeline-{name}", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T], *, urgent: bool = False) -> Future[T]:
        future: Future[T] = Future()
        with self._ready:
            if self._stopping:
                future.set_exception(WorkerStopped(f"the {self.name} worker has stopped"))
                return future
            (self._urgent if urgent else self._normal).append((future, fn))
            self._ready.notify()
        return future

    async def call(self, fn: Callable[[], T], *, urgent: bool = False) -> T:
        """Run ``fn`` on this worker and await its result without blocking the loop."""
        return await asyncio.wrap_future(self.submit(fn, urgent=urgent))

    def run_urgent(self) -> None:
        """Run the urgent tasks queued now.  Only from inside a task on this worker."""
        if threading.current_thread() is not self._thread:
            return
        while True:
            with self._ready:
                if not self._urgent:
                    return
                task = self._urgent.popleft()
            self._run(task)

    def stop(self, timeout: float | None = None) -> bool:
        """Finish the queued tasks, then end the thread.  True if it ended in time."""
        with self._ready:
            self._stopping = True
            self._ready.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._urgent and not self._normal and not self._stopping:
                    self._ready.wait()
                if self._urgent:
                    task = self._urgent.popleft()
                elif self._normal:
                    task = self._normal.popleft()
                else:
                    return  # stopping and nothing left
            self._run(task)

    @staticmethod
    def _run(task: _Task) -> None:
        future, fn = task
        if not future.set_running_or_notify_cancel():
            return
        try:
            result = fn()
        except BaseException as exc:  # handed to whoever awaits the future
            future.set_exception(exc)
        else:
            future.set_result(result)


class OnIndex(Protocol):
    """Runs a function on the index worker (urgent) and waits for its result, typed as
    the function's (``service.workspace.IndexSide`` is its one user)."""

    def __call__(self, fn: Callable[[], T]) -> T: ...


class Workers:
    """The index worker and the generation worker."""

    def __init__(self) -> None:
        self.index = Worker("index")
        self.generation = Worker("generation")

    async def generate(self, work: Callable[[OnIndex], T], cancel: threading.Event) -> T:
        """Run ``work`` on the generation worker, with retrieval on the index worker.

        ``work`` receives ``on_index``: every function it passes there runs on the
        index worker as an urgent task (overtaking indexing between files), while the
        generation worker waits for its result.  So the folder's workspace is only
        ever touched by the index worker, and the generator only by the generation
        worker.  If the awaiting task is cancelled, ``cancel`` is set (generation
        stops at its next token) and a queued ``work`` never starts.
        """

        def on_index(fn: Callable[[], U]) -> U:
            return self.index.submit(fn, urgent=True).result()

        future = self.generation.submit(lambda: work(on_index))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            cancel.set()
            future.cancel()
            raise

    def stop(self, timeout: float) -> None:
        for worker in (self.index, self.generation):
            if not worker.stop(timeout):
                log.warning("the %s worker did not stop in time", worker.name)
