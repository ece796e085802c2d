"""The embedded index: a :class:`~citeline.core.index.DocumentIndex` in a folder.

``<docs>/.citeline/`` (configurable) holds ``index.sqlite3`` (the store: files,
chunks, vectors by content key, FTS5 keyword terms; the source of truth),
``vectors.faiss`` and ``keywords.postings`` (each + ``.json`` with the store
generation it reflects) and a ``.gitignore`` so the folder never pollutes a
repository.

Two in-memory mirrors of the store serve searches: the vector index, of any
:class:`~citeline.core.vectors.VectorIndexType` (FAISS by default), and the keyword
index (``backends/postings``: BM25 as the store's FTS5 table computes it, without
scoring every matching row).  Every commit that changes chunks bumps the store's
generation; each mirror is saved at the end of a write with the generation it
reflects, and on open (or when another process committed) a missing, unreadable or
stale one is rebuilt from the store, which always holds every vector and every
chunk's terms.

Damage is recovered, not reported as a dead end: the index is derived from the
documents, so a damaged database (truncated, overwritten, not a database, a
folder in its place), or anything else in the way of one of the index's files
(a folder or a FIFO where the lock or the vector file belongs), is moved aside
as ``<name>.damaged-<time>`` with one warning, and the index is rebuilt.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from citeline.backends.postings import PostingsKeywordIndex
from citeline.backends.postings.base import Row
from citeline.backends.segments import Segmented
from citeline.backends.sqlite.store import (
    INSERT_SLICE,
    SqliteStore,
    StoreDamaged,
    database_files,
    rebuild_marker,
)
from citeline.core.documents import Chunk
from citeline.core.embedding import FloatMatrix
from citeline.core.errors import BackendError, DiskFull, disk_full_message
from citeline.core.index import (
    FileRecord,
    FileUpdate,
    IndexCounts,
    IndexIdentity,
    Vector,
    reconcile_identity,
)
from citeline.core.scripts import CJK_RUN, is_cjk
from citeline.core.vectors import VectorIndex, VectorIndexType

log = logging.getLogger(__name__)

STORE_FILE = "index.sqlite3"
VECTORS_FILE = "vectors.faiss"
KEYWORDS_FILE = "keywords.postings"
LOCK_FILE = "lock"
#: ``script_means``: chunks sampled, and the change in the number of chunks that
#: takes them again (the means of a language's text move slowly with a folder).
SCRIPT_SAMPLE = 4096
SCRIPT_MEANS_DRIFT = 0.1
SCRIPT_MIN_CHUNKS = 8  # of a kind in the sample, for its mean


class IndexFolderRefused(BackendError):
    """A configured index folder holds something that is not a Citeline index: it is
    left as it is, never moved aside as if it were a damaged index."""


def check_configured_folder(index_dir: Path) -> None:
    """Refuse an index folder set by ``[index] path`` that is not Citeline's to use.

    Only the default ``.citeline`` (Citeline's own name) is repaired by moving what is
    in its way aside.  A configured place must be missing, an empty folder, or a
    folder that already holds a Citeline index; a file (``README.md``, ``~/.bashrc``),
    a symlink or a folder of other things there is left untouched and the index is
    not opened, with one line saying why (:class:`IndexFolderRefused`).
    """
    try:
        info = os.lstat(index_dir)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise IndexFolderRefused(f"cannot use {index_dir} as the index folder: {exc}") from exc
    fix = "; Citeline leaves it alone (change [index] path)"
    if stat.S_ISLNK(info.st_mode):
        raise IndexFolderRefused(f"the index folder {index_dir} is a symlink{fix}")
    if not stat.S_ISDIR(info.st_mode):
        raise IndexFolderRefused(f"the index folder {index_dir} is a file, not an index{fix}")
    try:
        names = set(os.listdir(index_dir))
    except OSError as exc:
        raise IndexFolderRefused(f"cannot use {index_dir} as the index folder: {exc}") from exc
    if names and STORE_FILE not in names and not _own_gitignore(index_dir / ".gitignore"):
        raise IndexFolderRefused(
            f"the index folder {index_dir} holds other files and no Citeline index{fix}"
        )


def _own_gitignore(path: Path) -> bool:
    """Whether ``path`` is the ``.gitignore`` Citeline writes in its index folders."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 64).startswith(b"# Citeline")
    except OSError:
        return False
    finally:
        os.close(fd)


class EmbeddedIndex:
    """Store + vector index for one documents folder.  Use from one thread."""

    def __init__(
        self, index_dir: Path, identity: IndexIdentity, vector_type: VectorIndexType
    ) -> None:
        self.index_dir = index_dir
        self._identity = identity
        self._vector_type = vector_type
        if index_dir.is_symlink() or (index_dir.exists() and not index_dir.is_dir()):
            _move_aside(index_dir, f"{index_dir} is not a folder", rebuild=True)
        index_dir.mkdir(parents=True, exist_ok=True)
        gitignore = index_dir / ".gitignore"
        if not gitignore.exists() and not gitignore.is_symlink():
            gitignore.write_text("# Citeline's index: rebuilt from the documents at any time.\n*\n")
        self.store = self._open_store()
        reconcile_identity(self.store, identity)
        self.vectors = self._open_vectors()
        self.keywords = self._open_keywords()
        self._loaded_generation = self.store.generation
        self._between: Callable[[], None] | None = None  # inside writing(): its between
        self._unsaved = 0  # chunks added to the mirrors since they were last saved

        self._script_means: tuple[int, dict[bool, FloatMatrix]] | None = None

    @property
    def identity(self) -> IndexIdentity:
        return self._identity

    @property
    def location(self) -> str:
        return str(self.index_dir)

    @property
    def collection(self) -> str | None:
        return None

    @property
    def read_only(self) -> bool:
        return False

    @property
    def vectors_path(self) -> Path:
        return self.index_dir / VECTORS_FILE

    @property
    def keywords_path(self) -> Path:
        return self.index_dir / KEYWORDS_FILE

    def _open_store(self) -> SqliteStore:
        """The store; a damaged one is moved aside (with its journal files) and rebuilt."""
        path = self.index_dir / STORE_FILE
        try:
            return SqliteStore(path)
        except DiskFull as exc:  # read what is there; writing waits for space
            log.info("%s; opening the index read-only", exc)
            return SqliteStore(path, snapshot=True)
        except StoreDamaged as exc:
            for file in database_files(path):
                if file.exists() or file.is_symlink():
                    _move_aside(file, str(exc) if file == path else None, rebuild=True)
            rebuild_marker(path).unlink(missing_ok=True)
            return SqliteStore(path)

    # -- the mirrors -----------------------------------------------------------------

    def _open_vectors(self) -> VectorIndex:
        """The saved vector index if it reflects the store, else rebuilt and saved."""
        path, dimension = self.vectors_path, self._identity.dimension
        if self._saved_generation(path) == self.store.generation:
            try:
                return self._vector_type.load(path, dimension)
            except (OSError, ValueError) as exc:
                log.debug("vector index at %s not usable (%s); rebuilding", path, exc)
        log.info("rebuilding vector index from the store")
        vectors = self._vector_type.empty(dimension)
        for ids, rows in self.store.iter_chunk_vectors(dimension):
            vectors.add(ids, rows)
        self._save_if_room(self.vectors_path, vectors)
        return vectors

    def _open_keywords(self) -> PostingsKeywordIndex:
        """The saved keyword index if it reflects the store, else rebuilt and saved."""
        path = self.keywords_path
        if self._saved_generation(path) == self.store.generation:
            try:
                return PostingsKeywordIndex.load(path)
            except (OSError, ValueError) as exc:
                log.debug("keyword index at %s not usable (%s); rebuilding", path, exc)
        return self._rebuild_keywords()

    def _rebuild_keywords(self) -> PostingsKeywordIndex:
        path = self.keywords_path
        started = time.perf_counter()
        keywords = PostingsKeywordIndex.build(self.store.keywords.all_terms())
        log.info(
            "rebuilt the keyword index (%d chunks) from the store in %.2f s",
            len(keywords),
            time.perf_counter() - started,
        )
        self._save_if_room(path, keywords)
        return keywords

    @staticmethod
    def _saved_generation(path: Path) -> int | None:
        """The store generation a saved mirror reflects (None: none readable)."""
        try:
            saved = json.loads(_generation_file(path).read_text())["generation"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return saved if isinstance(saved, int) else None

    def _save(
        self,
        path: Path,
        mirror: VectorIndex | PostingsKeywordIndex,
        between: Callable[[], None] | None = None,
        *,
        later: bool = False,
    ) -> None:
        """Save a mirror with the generation it reflects; :class:`DiskFull` when there
        is no space (the generation file is written last: a mirror cut short is never
        taken for a saved one).  ``between`` runs while a new base is written (the
        daemon's searches go on meanwhile); ``later``: a new base that is due is
        written after the save, on a thread of its own (``Segmented.save``)."""
        try:
            for file in (path, _generation_file(path)):
                _clear_way(file)
            if isinstance(mirror, Segmented) and (between is not None or later):
                mirror.save(path, between, later=later)
            else:
                mirror.save(path)
            _generation_file(path).write_text(json.dumps({"generation": self.store.generation}))
        except (OSError, RuntimeError) as exc:  # FAISS says a failed write as RuntimeError
            if not _no_space(exc):
                raise
            with contextlib.suppress(OSError):
                _generation_file(path).unlink()
            raise DiskFull(disk_full_message(self.index_dir)) from exc

    def _save_if_room(self, path: Path, mirror: VectorIndex | PostingsKeywordIndex) -> None:
        """Save a mirror rebuilt for reading; on a full disk keep it in memory only (the
        next open rebuilds it again): a full disk never stops a search."""
        try:
            self._save(path, mirror)
        except DiskFull as exc:
            log.warning("%s; the rebuilt %s is kept in memory only", exc, path.name)

    def _mirrors_saved(self) -> bool:
        """Whether both mirrors on disk reflect the store as it is (nothing to save)."""
        generation = self.store.generation
        return all(
            self._saved_generation(path) == generation
            for path in (self.vectors_path, self.keywords_path)
        )

    def refresh(self) -> None:
        """Take up what another process committed.  While it is still writing (it holds
        the lock), the mirrors loaded stay: its batch saves them when it ends, and
        rebuilding them meanwhile would cost every search and race its save.  A new
        base written since the last save (a compaction) is taken up here too."""
        if self.store.generation == self._loaded_generation and not self._compaction_done():
            return
        try:
            fd = _open_lock(self.index_dir / LOCK_FILE)
        except OSError:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # a writer is at work: search what is loaded
            try:
                self._settle()
                self._reload()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- compaction ------------------------------------------------------------------

    def _mirrors(self) -> list[tuple[Path, Segmented]]:
        pairs = [(self.vectors_path, self.vectors), (self.keywords_path, self.keywords)]
        return [(path, mirror) for path, mirror in pairs if isinstance(mirror, Segmented)]

    @property
    def compacting(self) -> bool:
        """Whether a mirror's new base is being written (or written, not yet taken up)."""
        return any(mirror.compacting for _, mirror in self._mirrors())

    def _compaction_done(self) -> bool:
        return any(mirror.compaction_done() for _, mirror in self._mirrors())

    def _settle(self, *, wait: bool = False) -> None:
        """Take up each mirror's new base once written (``wait``: wait for it); with the
        write lock held.  The store is as the last save left it, and so is the mirror:
        the generation file stays true."""
        if self.store.generation != self._loaded_generation:
            return  # another process wrote: the mirrors are loaded again from its files
        try:
            for path, mirror in self._mirrors():
                mirror.settle(path, wait=wait)
        except (OSError, ValueError) as exc:
            # The head names the old files or the new ones, each whole: read them again.
            log.warning("%s: a new base could not be taken up (%s)", self.index_dir, exc)
            self.vectors = self._open_vectors()
            self.keywords = self._open_keywords()

    def _reload(self) -> None:
        if self.store.generation != self._loaded_generation:
            self.vectors = self._open_vectors()
            self.keywords = self._open_keywords()
            self._loaded_generation = self.store.generation

    def generation(self) -> int:
        return self.store.generation

    def subscribe(self, callback: Callable[[], None]) -> bool:
        return False  # the folder's own daemon writes it; other writers are rare

    # -- reading ----------------------------------------------------------------------

    def content_hashes(self, paths: Iterable[str]) -> dict[str, str]:
        return self.store.content_hashes(paths)

    def files(self, paths: Iterable[str] | None = None) -> dict[str, FileRecord]:
        return self.store.files(paths)

    def file_errors(self) -> list[tuple[str, str]]:
        return self.store.file_errors()

    def file_notes(self) -> list[tuple[str, str]]:
        return self.store.file_notes()

    def counts(self) -> IndexCounts:
        return self.store.counts()

    def last_update(self) -> float | None:
        return self.store.last_update()

    def chunks_by_id(self, ids: Sequence[int]) -> dict[int, Chunk]:
        return self.store.chunks_by_id(ids)

    def dense_search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        return self.vectors.search(query, k)

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        return self.vectors.similarity(query, ids)

    def keyword_search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        try:
            return self.keywords.search(terms, k)
        except (IndexError, ValueError) as exc:  # files that read back, with damage inside
            log.warning("the keyword index is damaged (%s); rebuilding it from the store", exc)
            self.keywords = self._rebuild_keywords()
            return self.keywords.search(terms, k)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        return self.keywords.document_frequencies(terms)

    def script_means(self) -> dict[bool, FloatMatrix]:
        """From up to :data:`SCRIPT_SAMPLE` chunks; kept until the number of chunks
        moves by more than :data:`SCRIPT_MEANS_DRIFT` of the one they were taken at."""
        chunks = len(self.keywords)
        kept = self._script_means
        if kept is not None and abs(chunks - kept[0]) <= SCRIPT_MEANS_DRIFT * max(kept[0], 1):
            return kept[1]
        sums: dict[bool, FloatMatrix] = {}
        counts: dict[bool, int] = {}
        for text, vector in self.store.sample_chunk_vectors(
            self._identity.dimension, SCRIPT_SAMPLE
        ):
            cjk = CJK_RUN.search(text) is not None and is_cjk(text)
            if cjk in sums:
                sums[cjk] += vector
            else:
                sums[cjk] = vector.astype(np.float32, copy=True)
            counts[cjk] = counts.get(cjk, 0) + 1
        means = {
            cjk: total / np.float32(counts[cjk])
            for cjk, total in sums.items()
            if counts[cjk] >= SCRIPT_MIN_CHUNKS
        }
        self._script_means = (chunks, means)
        return means

    # -- writing ----------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, between: Callable[[], None] | None = None) -> Iterator[None]:
        """Exclusive write access across processes (a CLI run and a daemon, say).

        While another process holds it, ``between`` runs every :data:`LOCK_POLL`
        seconds (a daemon's searches go on) and one line says who is being waited
        for; the holder's pid and command are in the lock file."""
        fd = _open_lock(self.index_dir / LOCK_FILE)
        try:
            self._lock(fd, between)
            try:
                self._settle()
                self._reload()
                before = self.store.generation
                between = self._between = _steps(between)
                yield
                if self.store.generation != before or not self._mirrors_saved():
                    # Only the logs: the batch's chunks are searchable (and saved) now;
                    # a new base that is due is written after, beside what comes next.
                    self._save(self.vectors_path, self.vectors, between, later=True)
                    self._save(self.keywords_path, self.keywords, between, later=True)
                self._loaded_generation = self.store.generation
            finally:
                self._between, self._unsaved = None, 0
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _lock(self, fd: int, between: Callable[[], None] | None) -> None:
        started = time.monotonic()
        said = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pass
            if not said and time.monotonic() - started >= LOCK_SAY_AFTER:
                said = True
                log.warning(
                    "waiting: another Citeline process (%s) is indexing %s; this one goes"
                    " on when it has committed its batch",
                    _holder(fd),
                    self.index_dir.parent,
                )
            if between is not None:
                between()
            time.sleep(LOCK_POLL)
        if said:
            log.info("done waiting (%.1f s)", time.monotonic() - started)
        with contextlib.suppress(OSError):  # who holds it, for whoever waits
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}: {_command()}".encode(errors="replace"), 0)

    def vectors_for_keys(self, keys: Iterable[str]) -> dict[str, Vector]:
        return self.store.vectors_for_keys(keys, self._identity.dimension)

    def add_vectors(self, vectors: Mapping[str, Vector]) -> None:
        self.store.add_vectors(vectors)

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.store.touch_file(path, size, mtime_ns)

    def replace_file(self, update: FileUpdate) -> tuple[list[int], list[int]]:
        rows: list[Row] = []  # parsed before the commit, between slices: added at once after it
        for start in range(0, len(update.chunks), INSERT_SLICE):
            if start and self._between is not None:
                self._between()
            part = update.chunks[start : start + INSERT_SLICE]
            rows.extend(Row.parse(item.terms) for item in part)
        removed, added = self.store.replace_file(update, self._between)
        self._mirror(removed, [], None)
        # The commit is in: the new chunks go into the mirrors a slice at a time, with
        # searches in between (which may find some of the new chunks, never an old one:
        # those were removed first, and the store no longer holds them).
        ids = np.asarray(added, dtype=np.int64)
        for start in range(0, len(added), INSERT_SLICE):
            if start and self._between is not None:
                self._between()
            end = start + INSERT_SLICE
            self.vectors.add(ids[start:end], update.chunk_vectors[start:end])
            for chunk_id, row in zip(added[start:end], rows[start:end], strict=True):
                self.keywords.add_row(chunk_id, row)
        self._unsaved += len(added)
        if self._unsaved >= SAVE_EVERY_CHUNKS:
            # A long batch (a first index of many files) saves its mirrors as it goes:
            # what they hold in memory becomes a memory-mapped base, and the memory
            # they held is freed, so a batch's memory does not grow with its files.
            self._save(self.vectors_path, self.vectors, self._between)
            self._save(self.keywords_path, self.keywords, self._between)
            self._unsaved = 0
        return removed, added

    def remove_files(self, paths: Iterable[str]) -> list[int]:
        removed = self.store.remove_files(paths)
        self._mirror(removed, [], None)
        return removed

    def _mirror(self, removed: list[int], added: list[int], vectors: FloatMatrix | None) -> None:
        """Mirror a committed store change in the in-memory indexes (the keyword index
        is given the added chunks' terms by :meth:`replace_file`)."""
        self.vectors.remove(removed)
        self.keywords.remove(removed)
        if added:
            assert vectors is not None
            self.vectors.add(np.asarray(added, dtype=np.int64), vectors)
        self._loaded_generation = self.store.generation

    def prune_vectors(self) -> int:
        return self.store.prune_vectors()

    def get_meta(self, key: str) -> str | None:
        return self.store.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.store.set_meta(key, value)

    def close(self) -> None:
        """Close the store; a compaction in progress is finished first (with the write
        lock; when another process holds it, its files are left for the next one)."""
        if self.compacting:
            try:
                fd = _open_lock(self.index_dir / LOCK_FILE)
            except OSError:
                fd = -1
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    try:
                        self._settle(wait=True)
                    finally:
                        fcntl.flock(fd, fcntl.LOCK_UN)
                except BlockingIOError:
                    pass
                finally:
                    os.close(fd)
        self.store.close()


SAVE_EVERY_CHUNKS = 5000  # chunks added in one batch before its mirrors are saved
LOCK_POLL = 0.02  # seconds between two tries of a write lock another process holds
LOCK_SAY_AFTER = 0.5  # a wait this long is said, once


def _steps(between: Callable[[], None] | None) -> Callable[[], None] | None:
    """``between`` as run between the steps of a write that holds the lock (slices of
    a big file, a mirror saved beside): one that raises (it was there to give up
    waiting for the lock) is not called again, and the write goes on."""
    if between is None:
        return None
    wanted = [between]

    def step() -> None:
        if not wanted:
            return
        try:
            wanted[0]()
        except Exception:
            wanted.clear()

    return step


def _holder(fd: int) -> str:
    """What the lock file says of the process holding it."""
    try:
        text = os.pread(fd, 300, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return " ".join(text.split()) or "its pid unknown"


def _command() -> str:
    if not sys.argv:
        return "citeline"
    name = os.path.basename(sys.argv[0])
    argv = ["citeline" if "citeline" in sys.argv[0] else name, *sys.argv[1:3]]
    return " ".join(argv)[:200]


def _no_space(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(exc)


def _generation_file(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _open_lock(path: Path) -> int:
    """The lock file, opened; anything else in its place (a folder, a FIFO, a link) is
    moved aside first."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(3):
        _clear_way(path)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError:  # swapped meanwhile (ELOOP, EISDIR): clear the way again
            continue
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)
    return os.open(path, flags, 0o644)  # the OSError, as it is, for the caller


def _clear_way(path: Path) -> None:
    """Move aside whatever is at ``path`` if it is not a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        _move_aside(path, f"{path} is not a regular file")


def _move_aside(path: Path, why: str | None, *, rebuild: bool = False) -> Path:
    """Rename ``path`` to ``<name>.damaged-<time>`` (never over anything) and say so
    once (``why``; None: part of a move already reported)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists() or target.is_symlink():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.rename(path, target)
    if why is not None:
        then = "; rebuilding the index from the documents" if rebuild else ""
        log.warning("%s; moved it aside to %s%s", why, target.name, then)
    return target
