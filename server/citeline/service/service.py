"""The application the language server fronts: served folders, their indexing,
and the requests (search, ask, reindex, status), each one method.

Threads: methods are called on the event loop and never block it.  Everything
that touches a folder's workspace runs on the index worker; answers are written
on the generation worker (``Workers.generate``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from citeline.core.answering.results import Answer
from citeline.core.documents import Hit, display_text
from citeline.core.errors import IndexDamaged
from citeline.core.files import FileRefused, OutsideRoot, read_regular_file
from citeline.core.ingest import IngestReport
from citeline.service.errors import EXPECTED_ERRORS, ServiceError
from citeline.service.events import Events
from citeline.service.folders import Folder, folder_key
from citeline.service.history import FolderHistory, HistoryPage, RecordedAnswer, page
from citeline.service.registry import Folders
from citeline.service.routing import FolderHit, best_folder, merge_hits
from citeline.service.scheduler import IngestScheduler
from citeline.service.selection import Unserved, mark, select
from citeline.service.status import FolderStatus, ModelNames
from citeline.service.workers import OnIndex, Workers
from citeline.service.workspace import Backends, Workspace, answer
from citeline.settings import SETTINGS_FILE

log = logging.getLogger(__name__)

T = TypeVar("T")

NO_FOLDERS = (
    "no documents folder: open one that holds citeline.toml or .citeline/ (or index it with"
    " “Citeline: Index This Folder”), set citeline.folders, or start with --docs"
)


@dataclass(frozen=True)
class Status:
    """Every served folder's status, in the order they were added."""

    folders: list[FolderStatus]
    models: ModelNames  # the first folder's known model of each kind
    unserved: list[Unserved] = field(default_factory=list)  # opened, not served: why


class Service:
    def __init__(self, backends: Backends, events: Events) -> None:
        self.backends = backends
        self.workers = Workers()
        self.scheduler = IngestScheduler(self.workers, events, backends)
        self.folders = Folders(self.workers, self.scheduler, events)
        self.events = events
        # Which folders to serve (service/selection.py): what the editor opened, what
        # the user named (command line), the folders setting, and index_folder's.
        self.opened_folders: list[Path] = []
        self.named_folders: list[Path] = []
        self.folders_setting: list[Path] | None = None
        self.requested_folders: list[Path] = []
        self.unserved: list[Unserved] = []

    # -- routing ----------------------------------------------------------------------

    def named(self, path: Path | None) -> Folder | None:
        """The served folder at ``path`` (None for None); an error if it is not served."""
        if path is None:
            return None
        folder = self.folders.get(path)
        if folder is None:
            raise ServiceError(f"{path} is not a documents folder Citeline serves")
        return folder

    def _targets(self, path: Path | None) -> list[Folder]:
        named = self.named(path)
        folders = [named] if named is not None else list(self.folders)
        if not folders:
            if self.unserved:  # say why the folder at hand is not served
                first = self.unserved[0]
                raise ServiceError(f"no documents folder is served ({first.root}: {first.reason})")
            raise ServiceError(NO_FOLDERS)
        return folders

    async def route(self, question: str, path: Path | None) -> Folder:
        """The folder a question goes to: the one named, the only one, or the one whose
        best passage scores highest (searched on the index worker, urgently)."""
        folders = self._targets(path)
        if len(folders) == 1:
            return folders[0]

        def scored() -> list[tuple[Folder, list[Hit]]]:  # index worker
            out = []
            for folder in folders:
                try:
                    hits = folder.open_workspace(self.backends).search(question, 1, rerank=False)
                except Exception as exc:
                    log.warning("%s: cannot search: %s", folder.name, exc)
                    continue
                out.append((folder, hits))
            return out

        chosen = best_folder(await self.workers.index.call(scored, urgent=True))
        if chosen is None:
            raise ServiceError("no documents folder can be searched now")
        return chosen

    async def indexed(
        self,
        path: Path | None,
        timeout: float,
        waiting: Callable[[list[Folder]], Awaitable[None]] | None = None,
        every: float = 2.0,
    ) -> list[Folder]:
        """Wait until the folder at ``path`` (None: every folder) is no longer indexing,
        at most ``timeout`` seconds; the folders still indexing then (for a front end
        whose callers expect a complete index, not one being built).  ``waiting`` is
        told which folders it waits for at once, then every ``every`` seconds."""
        folders = self._targets(path)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        told = None
        while True:
            busy = [f for f in folders if f.state == "indexing" and not f.closed]
            now = loop.time()
            if not busy or now >= deadline:
                return busy
            if waiting is not None and (told is None or now - told >= every):
                told = now
                await waiting(busy)
            await asyncio.sleep(0.1)

    # -- requests ---------------------------------------------------------------------

    async def search(
        self, query: str, k: int | None, path: Path | None, *, rerank: bool = True
    ) -> list[FolderHit[Folder]]:
        """The top ``k`` hits of the folder at ``path``, or of every folder merged.

        ``k`` defaults to the first folder's ``search.top_k``; ``rerank=False`` skips
        a configured reranker (hover stays fast).  With several folders, one that
        cannot be searched (an expected error) is left out and logged.
        """
        folders = self._targets(path)
        count = k if k is not None else folders[0].settings.search.top_k

        damaged: list[Folder] = []
        copies: dict[tuple[str, str], str] = {}

        def work() -> list[tuple[Folder, list[Hit]]]:  # index worker
            found = []
            for folder in folders:
                try:
                    ws = folder.open_workspace(self.backends)
                    hits = ws.search(query, count, rerank=rerank)
                    verdicts = ws.local_copies(h.chunk.path for h in hits)
                    copies.update(((folder.key, p), v) for p, v in verdicts.items())
                    found.append((folder, hits))
                except EXPECTED_ERRORS as exc:
                    if isinstance(exc, IndexDamaged):  # reopened (and rebuilt) below
                        folder.close_workspace()
                        damaged.append(folder)
                    if len(folders) == 1:
                        raise
                    log.warning("%s: cannot search: %s", folder.name, exc)
            return found

        try:
            merged = merge_hits(await self.workers.index.call(work, urgent=True), count)
        finally:
            for folder in damaged:
                self.scheduler.schedule(folder, None, now=True, progress=True)
        return [
            replace(h, local_copy=copies.get((h.folder.key, h.hit.chunk.path), "differs"))
            for h in merged
        ]

    async def local_copies(self, folder: Folder, paths: Iterable[str]) -> dict[str, str]:
        """Whether the folder's own copy of each file is the indexed one ("same"), or
        "differs" / "missing"; "differs" when the index cannot tell now."""
        wanted = list(paths)

        def work() -> dict[str, str]:  # index worker
            return dict(folder.open_workspace(self.backends).local_copies(wanted))

        try:
            return await self.workers.index.call(work, urgent=True)
        except EXPECTED_ERRORS as exc:
            log.warning("%s: cannot compare local copies: %s", folder.name, exc)
            return dict.fromkeys(wanted, "differs")

    async def ask(
        self,
        question: str,
        path: Path | None,
        on_token: Callable[[str], None] | None = None,
    ) -> tuple[Folder, Answer]:
        """Answer ``question`` from the folder it is routed to.

        Asks are answered one at a time, in order, on the generation worker; their
        retrieval runs on the index worker.  ``on_token`` is called on the event loop
        with each piece of text as it is written.  Cancelling the awaiting task stops
        generation at its next token.
        """
        folder = await self.route(question, path)
        settings = folder.settings
        loop = asyncio.get_running_loop()
        cancel = threading.Event()

        def send(piece: str) -> None:  # generation worker
            loop.call_soon_threadsafe(_deliver, on_token, piece, cancel)

        def workspace() -> Workspace:  # index worker
            return folder.open_workspace(self.backends)

        def work(on_index: OnIndex) -> Answer:  # generation worker
            return answer(
                question,
                settings,
                workspace=workspace,
                on_index=on_index,
                generator=lambda: self.backends.generator(settings.generation),
                index_dir=settings.index_dir(folder.root),
                on_token=send if on_token is not None else None,
                cancelled=cancel.is_set,
            )

        try:
            result = await self.workers.generate(work, cancel)
        except asyncio.CancelledError:
            log.info("ask cancelled: %s", question)
            raise
        return folder, result

    async def reindex(self, path: Path | None) -> list[tuple[Folder, IngestReport]]:
        """Bring the folder at ``path`` (None: every folder) up to date now."""
        folders = self._targets(path)
        reports = await asyncio.gather(*(self.scheduler.run_now(f, None) for f in folders))
        return list(zip(folders, reports, strict=True))

    def pause(self, path: Path | None) -> list[Folder]:
        """Pause indexing of the folder at ``path`` (None: every folder): nothing more
        is committed until :meth:`resume` (or a restart); searches and asks go on."""
        folders = self._targets(path)
        for folder in folders:
            self.scheduler.pause(folder)
        return folders

    def resume(self, path: Path | None) -> list[Folder]:
        """Resume indexing of the folder at ``path`` (None: every folder): what waited
        is planned and indexed now."""
        folders = self._targets(path)
        for folder in folders:
            self.scheduler.resume(folder)
        return folders

    def folder_status(self, folder: Folder) -> FolderStatus:
        """One folder's status, as :meth:`status` gives it."""
        return folder.status(self.backends.generation_name(folder.settings.generation))

    async def read_text(self, path: Path) -> str:
        """The text of the file at ``path`` for an editor request (hover on a document
        the editor did not send): only a regular file inside a served folder, at most
        the folder's size limit, read off the event loop as the indexer reads
        (``core.files``).  Anything else is a one-line :class:`ServiceError`; nothing
        outside the folders is ever opened."""
        folders = [(f.root, f.settings.index.max_file_mb) for f in self.folders]
        shown = display_text(str(path))

        def read() -> str:  # a thread of the default executor: never the event loop
            for root, max_mb in folders:
                try:
                    data = read_regular_file(path, int(max_mb * 1024 * 1024), root=root)
                except OutsideRoot:
                    continue
                except FileRefused as exc:
                    raise ServiceError(f"{shown}: {exc}") from exc
                except FileNotFoundError as exc:
                    raise ServiceError(f"{shown}: no such file") from exc
                except OSError as exc:
                    raise ServiceError(f"{shown}: {exc.strerror or exc}") from exc
                return data.decode("utf-8", "replace")
            raise ServiceError(f"{shown} is outside the documents folders Citeline serves")

        return await asyncio.get_running_loop().run_in_executor(None, read)

    # -- history ----------------------------------------------------------------------

    def _histories(self, path: Path | None) -> list[FolderHistory]:
        return [FolderHistory.of(f.root, f.settings) for f in self._targets(path)]

    async def history(
        self, path: Path | None, query: str | None, limit: int, offset: int
    ) -> HistoryPage:
        """Past asks of the folder at ``path`` (None: every folder), newest first, those
        whose question or answer holds ``query``; the page from ``offset``."""
        histories = self._histories(path)
        return await _off_loop(lambda: page(histories, query, limit, offset))

    async def history_entry(self, record_id: str) -> RecordedAnswer:
        """The past answer with ``record_id`` (from any folder), its sources compared
        with the files now."""
        histories = self._histories(None)

        def find() -> RecordedAnswer:  # a thread of the default executor
            for history in histories:
                found = history.entry(record_id)
                if found is not None:
                    return found
            raise ServiceError(f"no past answer {record_id!r} in the served folders' history")

        return await _off_loop(find)

    async def delete_history(self, record_id: str | None, path: Path | None) -> int:
        """Delete one past ask (by id), or every ask of the folder at ``path`` (None:
        of every folder); how many were deleted."""
        histories = self._histories(path)
        return await _off_loop(lambda: sum(h.delete(record_id) for h in histories))

    def status(self) -> Status:
        """Every folder's status, from what the event loop keeps (answers at once)."""
        folders = [self.folder_status(f) for f in self.folders]
        embedding = next((s.models.embedding for s in folders if s.models.embedding), None)
        generation = next((s.models.generation for s in folders if s.models.generation), None)
        reranking = next((s.models.reranking for s in folders if s.models.reranking), None)
        return Status(folders, ModelNames(embedding, generation, reranking), list(self.unserved))

    # -- which folders ------------------------------------------------------------------

    def choose(
        self,
        opened: Iterable[Path],
        named: Iterable[Path] = (),
        setting: Iterable[Path] | None = None,
    ) -> None:
        """Serve what the folder-selection rule picks (``service/selection.py``): the
        ``opened`` folders that hold a marker, every ``named`` one, and the ``folders``
        ``setting`` (when not None) instead of ``opened``; plus each folder
        :meth:`index_folder` was asked for."""
        self.opened_folders = list(opened)
        self.named_folders = list(named)
        self.folders_setting = None if setting is None else list(setting)
        self._reselect()

    def serve(self, roots: Iterable[Path]) -> None:
        """Serve ``roots``, named by the user (and folders asked for by index_folder)."""
        self.choose((), roots)

    async def index_folder(self, path: Path) -> FolderStatus:
        """Serve the folder at ``path`` because the user asked: a minimal ``citeline.toml``
        is written into it first unless it holds a marker, so it is served next time
        too.  Its status (indexing starts in the background)."""
        root = path.expanduser().absolute()
        if await _off_loop(lambda: mark(root)):
            log.info("wrote %s", root / SETTINGS_FILE)
        if all(folder_key(r) != folder_key(root) for r in self.requested_folders):
            self.requested_folders.append(root)
        self._reselect()
        folder = self.folders.get(root)
        if folder is None:  # pragma: no cover - select serves every requested folder
            raise ServiceError(f"{root} could not be served")
        return self.folder_status(folder)

    def _reselect(self) -> None:
        chosen = select(
            self.opened_folders,
            [*self.named_folders, *self.requested_folders],
            self.folders_setting,
        )
        changed = chosen.unserved != self.unserved
        self.unserved = chosen.unserved
        self.folders.reconcile(chosen.served)
        if changed:
            self.events.status_changed(immediate=True)

    # -- what the editor reports ------------------------------------------------------

    def saved(self, path: Path) -> None:
        """The editor saved ``path``; a ``citeline.toml`` saved into an opened folder
        that was not served makes it served."""
        if path.name == SETTINGS_FILE and any(
            folder_key(u.root) == folder_key(path.parent) for u in self.unserved
        ):
            self._reselect()
            return
        self.folders.saved(path)

    def settings_changed(self, editor_settings: dict[str, object]) -> None:
        self.folders.editor_settings = dict(editor_settings)
        self.folders.reload_settings()

    async def shutdown(self, timeout: float) -> None:
        """Stop every folder and close its index."""
        await self.folders.close_all(timeout)

    def stop(self, timeout: float) -> None:
        """Stop at once (the connection is gone): watchers, indexing, the workers."""
        self.folders.stop()
        self.workers.stop(timeout)


async def _off_loop(fn: Callable[[], T]) -> T:
    """``fn()`` on a thread of the default executor: file work never blocks the loop."""
    return await asyncio.get_running_loop().run_in_executor(None, fn)


def _deliver(on_token: Callable[[str], None] | None, piece: str, cancel: threading.Event) -> None:
    if on_token is not None and not cancel.is_set():
        on_token(piece)
