"""kill -9 of a process whose index is writing a new base (a compaction) beside its
edits.

A child process holds an embedded index of a few thousand chunks (synthetic vectors,
real FAISS, postings and SQLite) with the mirrors' log limits set low, and edits it
without pause: each edit replaces one file's chunks in its own ``writing()``, whose
save appends to the logs and, when they pass their share, starts a new base on a
thread of its own.
it is killed with SIGKILL at a random moment after the first one started, then the
parent opens the index and checks it: both mirrors hold exactly the store's chunks, and a
search finds the last edit the store committed.  Used by
tests/torture/test_compaction_crash.py.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DIMENSION = 64
START_FILES = 1500  # of CHUNKS chunks each
CHUNKS = 10
LOG_MIN = 100


def _open(folder: Path) -> Any:
    from citeline.backends.embedded import EmbeddedIndex
    from citeline.backends.faiss import FaissVectorIndexType
    from citeline.core.chunking import ChunkSettings
    from citeline.core.index import IndexIdentity

    identity = IndexIdentity("synthetic", "synthetic.gguf", DIMENSION, ChunkSettings())
    return EmbeddedIndex(folder, identity, FaissVectorIndexType())


def _update(path: str, version: int, rng: np.random.Generator) -> Any:
    from citeline.core.documents import Chunk
    from citeline.core.index import FileUpdate, NewChunk

    vectors = rng.standard_normal((CHUNKS, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = []
    for n in range(CHUNKS):
        text = f"{path} version v{version} part {n} word{rng.integers(50)}"
        chunks.append(NewChunk(Chunk(path, "T", (), text, 1, 1, None, 0), f"{version}-{n}", text))
    return FileUpdate(
        path=path,
        kind="markdown",
        title="T",
        content_hash=f"h{version}",
        size=1,
        mtime_ns=version,
        chunks=chunks,
        chunk_vectors=vectors,
        new_vectors={c.vector_key: v for c, v in zip(chunks, vectors, strict=True)},
    )


def child(folder: Path, share: float) -> None:
    """Edit the index at ``folder`` until killed.  The first new base written beside
    the edits is timed; SIGKILL comes ``share`` of that time after the next one begins
    (from a timer of the child's own, so the kill lands at that point of the write
    however busy the machine is, or, past 1, just after it, among the edits)."""
    from citeline.backends.faiss import index as faiss_index
    from citeline.backends.postings import index as postings_index

    faiss_index.LOG_MIN = postings_index.LOG_MIN = LOG_MIN
    took: list[float] = []

    def timed(write: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            if took:
                kill = threading.Timer(share * took[0], os.kill, (os.getpid(), signal.SIGKILL))
                kill.start()
            started = time.monotonic()
            written = write(*args, **kwargs)
            if kwargs.get("beside") and not took:
                took.append(time.monotonic() - started)
            return written

        return run

    for kind in (faiss_index.FaissVectorIndex, postings_index.PostingsKeywordIndex):
        kind._write_files = timed(kind._write_files)  # type: ignore[method-assign]
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    index = _open(folder)
    version = int(index.get_meta("torture-version") or 0)
    if version == 0:
        with index.writing():
            for n in range(START_FILES):
                version += 1
                index.replace_file(_update(f"f{n}.md", version, rng))
            index.set_meta("torture-version", str(version))
    while True:
        version += 1
        with index.writing():
            index.replace_file(_update(f"f{rng.integers(START_FILES)}.md", version, rng))
            index.set_meta("torture-version", str(version))


@dataclass
class CompactionCrashResult:
    rounds: int = 0
    killed_compacting: int = 0  # kills that left a new base's files its head did not name
    loaded_as_saved: int = 0  # opens that read the mirrors' files, not a rebuild
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "problems": self.problems[:10]}


def _unpublished(folder: Path) -> set[str]:
    """The mirrors' files of a token their head does not name: a new base being
    written, or written and not yet taken up, when the process died."""
    import json

    left = set()
    for name in ("vectors.faiss", "keywords.postings"):
        token = json.loads((folder / name).read_text())["token"]
        for path in folder.glob(f"{name}.*.*"):
            if path.name.split(".")[2] != token and not path.name.endswith(".json"):
                left.add(path.name)
    return left


def check(folder: Path) -> tuple[list[str], bool]:
    """What is wrong with the index at ``folder`` (empty: consistent), and whether its
    mirrors were loaded as saved (not rebuilt from the store)."""
    from citeline.backends.embedded import EmbeddedIndex
    from citeline.backends.faiss.index import _contents

    probe = EmbeddedIndex._saved_generation
    index = _open(folder)
    try:
        generation = index.store.generation
        saved = all(probe(path) == generation for path in (index.vectors_path, index.keywords_path))
        stored = {int(i) for ids, _ in index.store.iter_chunk_vectors(DIMENSION) for i in ids}
        dense = {int(i) for i in _contents(*index.vectors._snapshot())[0]}
        base, dead, added = index.keywords._snapshot()
        words = {int(i) for i in np.asarray(base.ids)[~dead]} | set(added)
        problems = []
        if dense != stored:
            problems.append(f"vectors: {len(dense ^ stored)} ids differ from the store's")
        if words != stored:
            problems.append(f"keywords: {len(words ^ stored)} ids differ from the store's")
        version = index.get_meta("torture-version")
        if not index.keyword_search([f"v{version}"], 50):
            problems.append(f"the last committed edit (v{version}) is not found")
        return problems, saved
    finally:
        index.close()


def run(work: Path, rounds: int, seed: int) -> CompactionCrashResult:
    rng = random.Random(seed)
    folder = work / "index"
    result = CompactionCrashResult()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1]), *sys.path])
    for _ in range(rounds):
        share = f"{rng.uniform(0.0, 1.2):.3f}"
        process = subprocess.run([sys.executable, __file__, str(folder), share], env=env)
        if process.returncode != -signal.SIGKILL:
            result.problems.append(f"the child exited {process.returncode}, not killed")
        result.rounds += 1
        result.killed_compacting += bool(_unpublished(folder))
        problems, saved = check(folder)
        result.loaded_as_saved += saved
        result.problems.extend(problems)
    return result


if __name__ == "__main__":
    child(Path(sys.argv[1]), float(sys.argv[2]))
