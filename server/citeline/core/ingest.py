"""Bringing an index up to date with its documents folder: plan, then apply.

``plan_changes`` is cheap and pure of side effects: it compares size and mtime
with the index, for the whole folder (a walk) or for some paths (each checked
on its own, without walking the tree).  ``Ingestor.run`` applies a plan in
batches: read each changed file once (a regular file inside the folder, bounded:
``core.files``), load and chunk it, look every chunk's embedding text up by
content hash, embed only the texts never seen before (at most ``batch_chunks``
per model call, several files' chunks together), keep each call's vectors at
once in their own transaction, then replace each file's chunks in its own
transaction.  Progress is reported per file once it is committed (and between
model calls inside a large file), cancellation is checked before each file,
between model calls and before removals, and a run can be killed at any moment:
the next run opens a consistent store, reuses every vector already embedded and
finishes the job.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from citeline.core import keywords, loaders
from citeline.core.chunking import ChunkSettings, embedding_key, embedding_text, iter_chunks
from citeline.core.documents import LoadError, SourceDocument, display_text
from citeline.core.embedding import Embedder
from citeline.core.files import TooLarge
from citeline.core.index import DocumentIndex, FileRecord, FileUpdate, NewChunk, Vector
from citeline.core.loaders import parse_document, read_document
from citeline.core.walking import DocumentFilter

log = logging.getLogger(__name__)

TERMS_KEPT = 8192  # chunk texts whose keyword terms an ingestor keeps

ProgressCallback = Callable[[int, int, str], None]
"""Called with (files done, files to do, path just done)."""

Between = Callable[[], None]
"""Called between the steps of a run (after each file is read, after each model call,
every few thousand files of a whole-folder plan), so the caller can let other work
in: the daemon runs queued searches there."""

Planned = Callable[[int], None]
"""Called once a batch is planned, with the number of files it reads or removes: the
daemon's catch-up after a start says "indexing" only when something changed."""

Parse = Callable[[bytes, Path, str, Between], SourceDocument]
"""Turns a file's bytes (with its path and relative path) into a document, calling
``between`` while it waits if it waits (a parser in another process); LoadError for
a file it cannot use.  The default parses in this process."""

PLAN_PAUSE_FILES = 500  # files compared between two calls of ``between`` while planning
LOADERS_META = "loader_versions"  # the index's record of the loaders that read it
LOOKUP_KEYS = 2000  # vector keys looked up in the index between two calls of ``between``
BIG_FILE_BYTES = 2 * 1024 * 1024  # a file this big holds the cyclic collector off
BIG_FILE_CHUNKS = 5000  # and so does one of this many chunks
PAUSE_CHUNKS = 100  # a big file's chunks made or looked at between two calls of ``between``


@dataclass(frozen=True)
class Plan:
    # new, or size/mtime changed: (relative path, path) as strings (a Path object costs
    # 0.2 KB more a file: 21 MB in a first index of 100,000 files)
    to_check: list[tuple[str, str]]
    to_remove: list[str]
    unchanged: int
    whole: bool = True  # the whole folder was compared (not only some paths)
    # Formats whose loader changed since the index read them: their files are read
    # and chunked again although their bytes did not change.
    reread: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.to_check and not self.to_remove


@dataclass
class IngestReport:
    files: int = 0
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    removed: int = 0
    files_changed: int = 0
    files_removed: int = 0
    cancelled: bool = False
    seconds: float = 0.0
    errors: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "files": self.files,
            "chunks": self.chunks,
            "embedded": self.embedded,
            "reused": self.reused,
            "removed": self.removed,
            "files_changed": self.files_changed,
            "files_removed": self.files_removed,
            "cancelled": self.cancelled,
            "seconds": round(self.seconds, 3),
            "errors": [{"path": p, "message": m} for p, m in self.errors],
            "notes": [{"path": p, "message": m} for p, m in self.notes],
        }


def plan_changes(
    index: DocumentIndex,
    documents: DocumentFilter,
    only: Iterable[str] | None = None,
    between: Between | None = None,
    reread: frozenset[str] = frozenset(),
) -> Plan:
    """What differs between the folder and the index; ``reread``: the formats whose
    files are planned although unchanged on disk (their loader changed).

    ``only`` limits the plan to some relative paths (a saved file, a watcher
    batch); paths among them that are no longer documents are planned for removal.
    A whole-folder plan calls ``between`` before and after reading the index's file
    records (one statement: 0.1 s at 25,000 files) and every ``PLAN_PAUSE_FILES`` files.
    """
    if only is None:
        if between is not None:
            between()
        known = index.files()
        if between is not None:
            between()
        seen: set[str] = set()
        to_check = []
        for rel, entry in documents.entries():
            seen.add(rel)
            if not _same_stat(known.get(rel), entry) or _stale(known.get(rel), reread):
                to_check.append((rel, entry.path))
            if between is not None and len(seen) % PLAN_PAUSE_FILES == 0:
                between()
        gone = [p for p in known if p not in seen]
        present_count = len(seen)
    else:
        wanted = set(only)
        known = index.files(wanted)  # a saved file costs its own record, not the folder's
        verdicts = {rel: documents.check(rel) for rel in sorted(wanted)}
        if None in verdicts.values():  # through a symlinked folder: only a walk can tell
            present = {rel: path for rel, path in documents.walk() if rel in wanted}
        else:
            present = {rel: documents.root / rel for rel, found in verdicts.items() if found}
        gone = [p for p in wanted if p in known and p not in present]
        to_check = [
            (rel, os.fspath(path))
            for rel, path in present.items()
            if not _same_stat(known.get(rel), path) or _stale(known.get(rel), reread)
        ]
        present_count = len(present)
    return Plan(
        to_check=to_check,
        to_remove=sorted(gone),
        unchanged=present_count - len(to_check),
        whole=only is None,
        reread=reread,
    )


def _stale(record: FileRecord | None, reread: frozenset[str]) -> bool:
    """Whether ``record`` was read by a loader that changed since."""
    return record is not None and record.kind in reread and record.error is None


def stale_formats(index: DocumentIndex) -> frozenset[str]:
    """The formats whose loader version differs from the one the index recorded
    (none when it recorded none: an index from before versions were kept)."""
    recorded = _recorded_versions(index)
    if recorded is None:
        return frozenset()
    return frozenset(k for k, v in loaders.LOADER_VERSIONS.items() if recorded.get(k) != v)


def _recorded_versions(index: DocumentIndex) -> dict[str, object] | None:
    try:
        value = json.loads(index.get_meta(LOADERS_META) or "null")
    except ValueError:
        return {}  # unreadable: every format is read again
    return value if isinstance(value, dict) or value is None else {}


def content_hash(path: Path, max_bytes: int, *, root: Path | None = None) -> str:
    """The sha256 of a file's bytes, read as ingest reads them (a regular file, bounded,
    inside ``root``): what the index records and readers compare their copy with;
    LoadError when it cannot be read."""
    return hashlib.sha256(read_document(path, max_bytes, root=root)).hexdigest()


def _same_stat(record: FileRecord | None, path: Path | os.DirEntry[str]) -> bool:
    """Whether ``path`` has the size and mtime the index recorded for it."""
    if record is None:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (record.size, record.mtime_ns)


@dataclass
class _Prepared:
    rel: str
    content_hash: str
    size: int
    mtime_ns: int
    document: SourceDocument | None
    chunks: list[NewChunk]
    error: str | None
    gone: bool = False
    note: str | None = None


class Ingestor:
    """Applies plans to one index with one embedder.  Use from one thread."""

    def __init__(
        self,
        index: DocumentIndex,
        embedder: Embedder,
        chunking: ChunkSettings,
        documents: DocumentFilter,
        *,
        max_file_bytes: int = 20 * 1024 * 1024,
        batch_chunks: int = 64,
        embed_chunks: int | None = None,
        parse: Parse | None = None,
    ) -> None:
        self.index = index
        self.documents = documents
        self.embedder = embedder
        self.chunking = chunking
        self.max_file_bytes = max_file_bytes
        self.batch_chunks = batch_chunks  # chunks read before they are embedded and committed
        self.embed_chunks = embed_chunks  # texts per model call (None: batch_chunks)
        self.parse: Parse = parse or _parse_here
        self._between: Between = _nothing  # the running batch's, for a parse that waits
        self._reread: frozenset[str] = frozenset()  # the running plan's formats read again
        self._collector = _CollectorHold()  # the running batch's
        # Keyword terms of recent chunk texts by embedding key: a saved file's unchanged
        # chunks are not stemmed again (a third of a save's work in a 50 KB file).
        self._terms: OrderedDict[str, str] = OrderedDict()

    def _keyword_terms(self, key: str, text: str) -> str:
        """``text``'s keyword terms, space-separated; the last few thousand kept."""
        found = self._terms.get(key)
        if found is not None:
            self._terms.move_to_end(key)
            return found
        found = self._terms[key] = " ".join(keywords.terms(text))
        if len(self._terms) > TERMS_KEPT:
            self._terms.popitem(last=False)
        return found

    def update(
        self,
        paths: Iterable[str] | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] | None = None,
        between: Between | None = None,
        planned: Planned | None = None,
    ) -> IngestReport:
        """Bring ``paths`` (None: the whole folder) up to date: planned once, applied.

        A batch of paths that are indexed as they are on disk (a save the watcher
        saw too) is not applied at all: the report only counts what the index holds.
        """
        plan = plan_changes(self.index, self.documents, paths, between, stale_formats(self.index))
        if planned is not None:
            planned(len(plan.to_check) + len(plan.to_remove))
        if paths is not None and plan.empty:
            return self.report()
        return self.run(plan, progress=progress, cancelled=cancelled, between=between)

    def report(self, report: IngestReport | None = None) -> IngestReport:
        """``report`` (or an empty one) with what the index holds now: counts, errors."""
        report = report if report is not None else IngestReport()
        counts = self.index.counts()
        report.files, report.chunks = counts.files, counts.chunks
        report.errors = self.index.file_errors()
        report.notes = self.index.file_notes()
        return report

    def run(
        self,
        plan: Plan | None = None,
        *,
        progress: ProgressCallback | None = None,
        cancelled: Callable[[], bool] | None = None,
        between: Between | None = None,
    ) -> IngestReport:
        started = time.perf_counter()
        pause = self._between = between or _nothing
        report = IngestReport()
        with self.index.writing(between), _CollectorHold() as held:
            self._collector = held
            if plan is None:
                plan = plan_changes(self.index, self.documents, reread=stale_formats(self.index))
            self._reread = plan.reread
            known = self.index.files([rel for rel, _ in plan.to_check])
            total = len(plan.to_check)
            done = 0
            batch: list[_Prepared] = []
            batch_cost = 0
            for rel, path in plan.to_check:
                if cancelled is not None and cancelled():
                    report.cancelled = True
                    break
                prepared = self._prepare(rel, Path(path), known.get(rel))
                pause()
                if prepared is not None and len(prepared.chunks) >= BIG_FILE_CHUNKS:
                    held.hold()
                if prepared is not None and prepared.gone:  # deleted since the plan
                    if rel in known:
                        plan.to_remove.append(rel)
                    prepared = None
                if prepared is None:  # content unchanged, only the mtime moved
                    done += 1
                    if progress:
                        progress(done, total, rel)
                    continue
                batch.append(prepared)
                batch_cost += len(prepared.chunks)
                if batch_cost >= self.batch_chunks:
                    done = self._commit(batch, report, done, total, progress, cancelled, pause)
                    batch, batch_cost = [], 0
                    held.release()
                    if report.cancelled:
                        break
            if batch and not report.cancelled:
                done = self._commit(batch, report, done, total, progress, cancelled, pause)
            held.release()
            if plan.to_remove and not report.cancelled and cancelled is not None and cancelled():
                report.cancelled = True
            if plan.to_remove and not report.cancelled:
                removed = self.index.remove_files(plan.to_remove)
                report.removed += len(removed)
                report.files_removed += len(plan.to_remove)
            if plan.whole:  # not for a saved file: a whole-folder update is often enough
                self.index.prune_vectors()
            if plan.whole and not report.cancelled:  # every file read by today's loaders
                versions = json.dumps(loaders.LOADER_VERSIONS, sort_keys=True)
                if self.index.get_meta(LOADERS_META) != versions:
                    self.index.set_meta(LOADERS_META, versions)
        self.report(report)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare(self, rel: str, path: Path, record: FileRecord | None) -> _Prepared | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return _Prepared(rel, "", 0, 0, None, [], None, gone=True)
        except OSError as exc:
            return _Prepared(rel, "", 0, 0, None, [], _os_message(exc))
        try:
            data = read_document(path, self.max_file_bytes, root=self.documents.root)
        except LoadError as exc:
            if not path.exists() and not path.is_symlink():
                return _Prepared(rel, "", 0, 0, None, [], None, gone=True)
            log.warning("%s: %s", display_text(rel), exc)
            # A file too large keeps its size and mtime: it is not read again until
            # it changes.  Other failures are tried again on the next run.
            kept = isinstance(exc.__cause__, TooLarge)
            size, mtime = (st.st_size, st.st_mtime_ns) if kept else (0, 0)
            return _Prepared(rel, f"error:{size}", size, mtime, None, [], str(exc))
        if len(data) >= BIG_FILE_BYTES:
            self._collector.hold()  # until its batch is committed
        content_hash = hashlib.sha256(data).hexdigest()
        if (
            record is not None
            and record.content_hash == content_hash
            and record.error is None
            and record.kind not in self._reread
        ):
            self.index.touch_file(rel, st.st_size, st.st_mtime_ns)
            return None
        try:
            document = self.parse(data, path, rel, self._between)
        except LoadError as exc:
            log.warning("%s: %s", display_text(rel), exc)
            return _Prepared(rel, content_hash, st.st_size, st.st_mtime_ns, None, [], str(exc))
        chunks = []
        for n, chunk in enumerate(iter_chunks(document, self.chunking), start=1):
            if n % PAUSE_CHUNKS == 0:
                self._between()  # a big file's chunks take a while: searches get in
            text = embedding_text(chunk, self.chunking)
            key = embedding_key(text)
            chunks.append(NewChunk(chunk, key, self._keyword_terms(key, text)))
        note = "; ".join(document.notes) or None
        if note is not None:
            log.info("%s: %s", display_text(rel), note)
        return _Prepared(
            rel, content_hash, st.st_size, st.st_mtime_ns, document, chunks, None, note=note
        )

    def _commit(
        self,
        batch: list[_Prepared],
        report: IngestReport,
        done: int,
        total: int,
        progress: ProgressCallback | None,
        cancelled: Callable[[], bool] | None,
        pause: Between,
    ) -> int:
        dim = self.embedder.dimension
        keys = list({c.vector_key: None for p in batch for c in p.chunks})
        cached: dict[str, Vector] = {}
        for start in range(0, len(keys), LOOKUP_KEYS):  # a big file's: searches in between
            if start:
                pause()
            cached.update(self.index.vectors_for_keys(keys[start : start + LOOKUP_KEYS]))
        missing: dict[str, str] = {}
        for prepared in batch:
            for n, item in enumerate(prepared.chunks, start=1):
                if n % PAUSE_CHUNKS == 0:
                    pause()
                if item.vector_key not in cached and item.vector_key not in missing:
                    missing[item.vector_key] = embedding_text(item.chunk, self.chunking)
        fresh: dict[str, Vector] = {}
        pending = list(missing.items())
        step = self.embed_chunks or max(self.batch_chunks, 1)
        for start in range(0, len(pending), step):
            if start and cancelled is not None and cancelled():
                report.cancelled = True  # what was embedded is kept; no file is half done
                return done
            part = pending[start : start + step]
            vectors = self.embedder.embed_documents([text for _, text in part])
            embedded = dict(zip((key for key, _ in part), vectors, strict=True))
            self.index.add_vectors(embedded)  # kept now, whatever happens next
            fresh.update(embedded)
            pause()  # between model calls: searches get in
            if progress and start + step < len(pending):
                progress(done, total, batch[0].rel)
        for prepared in batch:
            new_for_file = {
                c.vector_key: fresh[c.vector_key] for c in prepared.chunks if c.vector_key in fresh
            }
            # Vectors written with an earlier file of this batch are cached from now on.
            for key, vector in new_for_file.items():
                cached[key] = vector
                fresh.pop(key, None)
            vectors_for_chunks = np.empty((len(prepared.chunks), dim), np.float32)
            for start in range(0, len(prepared.chunks), PAUSE_CHUNKS):
                if start:
                    pause()  # a big file's 50,000 vectors are a stretch to copy
                rows = prepared.chunks[start : start + PAUSE_CHUNKS]
                for row, new_chunk in enumerate(rows, start=start):
                    vectors_for_chunks[row] = cached[new_chunk.vector_key]
            removed, added = self.index.replace_file(
                FileUpdate(
                    path=prepared.rel,
                    kind=prepared.document.kind if prepared.document else "unknown",
                    title=prepared.document.title
                    if prepared.document
                    else display_text(prepared.rel),
                    content_hash=prepared.content_hash,
                    size=prepared.size,
                    mtime_ns=prepared.mtime_ns,
                    chunks=prepared.chunks,
                    chunk_vectors=vectors_for_chunks,
                    new_vectors=new_for_file,
                    error=prepared.error,
                    note=prepared.note,
                )
            )
            report.embedded += len(new_for_file)
            report.reused += len(prepared.chunks) - len(new_for_file)
            report.removed += max(0, len(removed) - len(added))
            report.files_changed += 1
            done += 1
            if progress:
                progress(done, total, prepared.rel)
        return done


def _nothing() -> None:
    pass


class _CollectorHold:
    """Python's cyclic garbage collector held off from the moment a big file is read
    (:data:`BIG_FILE_CHUNKS` chunks) until its batch is committed.  A 50,000-page
    PDF puts a million objects in memory (blocks, chunks, keyword rows), and each
    full collection the collector runs meanwhile walks all of them in one stretch
    (0.2-0.3 s at load 18, finding nothing: the file's objects hold no cycles and are
    freed by their counts), which no ``between`` can interrupt.  Only that window is
    held off (from the read of a file of :data:`BIG_FILE_BYTES`, or once a file has
    :data:`BIG_FILE_CHUNKS` chunks), so a long batch of small files keeps its
    collections."""

    def __init__(self) -> None:
        self._held = False

    def hold(self) -> None:
        if not self._held and gc.isenabled():
            gc.disable()
            self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            gc.enable()

    def __enter__(self) -> _CollectorHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _parse_here(data: bytes, path: Path, rel: str, between: Between) -> SourceDocument:
    return parse_document(data, path, rel)


def _os_message(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or str(exc)
