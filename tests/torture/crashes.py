"""kill -9 at random points of ``citeline index``, inside commits too, and churn.

Each round changes a few files (edit, create, delete, rename), starts ``citeline
index`` and kills it with SIGKILL: either inside the N-th write transaction (the
store's test-only pause before COMMIT, ``CITELINE_TEST_COMMIT_LOG``) or after a
random delay (model loading, walking, embedding, anywhere).  The store is then
checked: SQLite's integrity check passes; every file row is wholly one version of
that file (its content hash is one written to disk and every chunk carries that
version's marker); every chunk has its vector.  At the end a run completes and
the index equals a fresh index of the same files.  Used by
tests/torture/test_crashes.py and benchmarks/torture.py.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MARK = re.compile(r"mark-(f\d+)-v(\d+)")
WORDS = [
    "harbour",
    "tide",
    "lantern",
    "rope",
    "anchor",
    "gull",
    "shell",
    "reef",
    "current",
    "compass",
    "chart",
    "mast",
    "sail",
    "keel",
    "buoy",
    "signal",
    "storm",
    "fog",
    "dawn",
    "dusk",
    "beacon",
    "pier",
    "dock",
    "wave",
]


def _content(rng: random.Random, name: str, version: int) -> str:
    mark = f"mark-{name}-v{version}"
    paragraphs = []
    for p in range(rng.randrange(2, 6)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(30, 90)))
        paragraphs.append(f"{mark} paragraph {p}: {words}.")
    return f"# {name} version {version}\n\n" + "\n\n".join(paragraphs) + "\n"


@dataclass
class Corpus:
    """The documents folder and every version of every file ever written to it."""

    docs: Path
    rng: random.Random
    versions: dict[str, str] = field(default_factory=dict)  # sha256 -> "fN-vM"
    names: list[str] = field(default_factory=list)  # current names -> file stem
    counter: int = 0
    ops: int = 0

    def write(self, rel: str, name: str) -> None:
        self.counter += 1
        text = _content(self.rng, name, self.counter)
        data = text.encode()
        self.versions[hashlib.sha256(data).hexdigest()] = f"{name}-v{self.counter}"
        (self.docs / rel).write_bytes(data)

    def churn(self, operations: int) -> None:
        for _ in range(operations):
            self.ops += 1
            files = sorted(p.name for p in self.docs.glob("*.md"))
            roll = self.rng.random()
            if not files or (roll < 0.25 and len(files) < 15):
                name = f"f{self.counter + 1}"
                self.write(f"{name}.md", name)
            elif roll < 0.65:
                rel = self.rng.choice(files)
                self.write(rel, _stem(self.docs / rel))
            elif roll < 0.8 and len(files) > 3:
                (self.docs / self.rng.choice(files)).unlink()
            else:
                rel = self.rng.choice(files)
                target = f"r{self.counter}-{rel}"
                self.counter += 1
                (self.docs / rel).rename(self.docs / target)


def _stem(path: Path) -> str:
    match = MARK.search(path.read_text())
    assert match is not None
    return match.group(1)


def index_command(docs: Path) -> list[str]:
    return [sys.executable, "-m", "citeline.cli", "index", "--docs", str(docs)]


def check_store(docs: Path, versions: dict[str, str]) -> list[str]:
    """What is wrong with the folder's store (empty: consistent)."""
    path = docs / ".citeline" / "index.sqlite3"
    if not path.exists():
        return []  # killed before the store was made: nothing to be wrong
    problems: list[str] = []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            return [f"integrity: {integrity}"]
        rows = db.execute("SELECT id, path, content_hash, error FROM files").fetchall()
        for file_id, rel, content_hash, error in rows:
            version = versions.get(content_hash)
            if version is None:
                problems.append(f"{rel}: a content hash no version had")
                continue
            texts = [
                t for (t,) in db.execute("SELECT text FROM chunks WHERE file_id=?", (file_id,))
            ]
            if not texts and error is None:
                problems.append(f"{rel}: no chunks")
            for text in texts:
                marks = {f"{m.group(1)}-v{m.group(2)}" for m in MARK.finditer(text)}
                if marks and marks != {version}:
                    problems.append(f"{rel}: chunks of {marks} in a row of {version}")
        missing = db.execute(
            "SELECT count(*) FROM chunks WHERE vector_key NOT IN (SELECT key FROM vectors)"
        ).fetchone()[0]
        if missing:
            problems.append(f"{missing} chunks without a vector")
    finally:
        db.close()
    return problems


def snapshot(docs: Path) -> dict[str, tuple[str, list[str]]]:
    """path -> (content hash, chunk texts in order): what an index holds."""
    db = sqlite3.connect(f"file:{docs / '.citeline' / 'index.sqlite3'}?mode=ro", uri=True)
    try:
        out: dict[str, tuple[str, list[str]]] = {}
        for file_id, rel, content_hash in db.execute("SELECT id, path, content_hash FROM files"):
            texts = db.execute(
                "SELECT text FROM chunks WHERE file_id=? ORDER BY ordinal", (file_id,)
            ).fetchall()
            out[str(rel)] = (content_hash, [t for (t,) in texts])
        return out
    finally:
        db.close()


def _new_corpus(work: Path, rng: random.Random) -> tuple[Path, Corpus]:
    """An empty documents folder ``work/docs`` (emptied if it was there) and its corpus."""
    docs = work / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    return docs, Corpus(docs, rng)


@dataclass
class CrashResult:
    rounds: int = 0
    consistent: int = 0
    kills: int = 0
    kills_in_commit: int = 0
    finished_before_kill: int = 0
    churn_ops: int = 0
    lost_files: int = 0
    stale_files: int = 0
    equal_to_fresh: bool = False
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "problems": self.problems[:10]}


def _kill_round(docs: Path, work: Path, rng: random.Random, result: CrashResult) -> None:
    log = work / "commits.log"
    log.write_text("")
    env = dict(os.environ)
    env["CITELINE_TEST_COMMIT_LOG"] = str(log)
    env["CITELINE_TEST_COMMIT_PAUSE"] = f"{rng.uniform(0.02, 0.1):.3f}"
    in_commit = rng.random() < 0.6
    target = rng.randrange(1, 5)
    delay = rng.uniform(0.1, 3.0)
    with open(work / "index.log", "ab") as err:
        process = subprocess.Popen(
            index_command(docs), stdout=subprocess.DEVNULL, stderr=err, env=env
        )
    started = time.monotonic()
    killed_in_commit = False
    while process.poll() is None:
        if in_commit:
            lines = log.read_text().split("\n")
            begun = [ln for ln in lines if ln.startswith(f"begin {target} ")]
            if begun and not any(ln.startswith(f"end {target} ") for ln in lines):
                process.send_signal(signal.SIGKILL)
                killed_in_commit = True
                break
        elif time.monotonic() - started >= delay:
            process.send_signal(signal.SIGKILL)
            break
        if time.monotonic() - started > 120:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    code = process.wait()
    if code == -signal.SIGKILL:
        result.kills += 1
        result.kills_in_commit += killed_in_commit
    else:
        result.finished_before_kill += 1
        if code != 0:
            result.problems.append(f"index exited {code} without a kill")


def run(
    work: Path, *, rounds: int, seed: int, churn_per_round: int = 3, check_fresh: bool = True
) -> CrashResult:
    """``rounds`` kill -9 rounds over a churning folder in ``work``; see the module."""
    rng = random.Random(seed)
    docs, corpus = _new_corpus(work, rng)
    corpus.churn(8)
    result = CrashResult()
    for _ in range(rounds):
        corpus.churn(rng.randrange(1, churn_per_round + 1))
        _kill_round(docs, work, rng, result)
        result.rounds += 1
        problems = check_store(docs, corpus.versions)
        if problems:
            result.problems.extend(problems)
        else:
            result.consistent += 1
    result.churn_ops = corpus.ops
    finished = subprocess.run(index_command(docs), capture_output=True, timeout=600)
    if finished.returncode != 0:
        result.problems.append(f"the last run exited {finished.returncode}")
        return result
    result.lost_files, result.stale_files, result.equal_to_fresh = _against_disk(
        docs, work / "fresh" if check_fresh else None, timeout=600
    )
    return result


def _against_disk(docs: Path, fresh: Path | None, *, timeout: int) -> tuple[int, int, bool]:
    """Files on disk the index of ``docs`` lacks, files it holds stale or gone, and
    whether an index made from scratch of a copy at ``fresh`` (None: not made) holds
    exactly the same."""
    held = snapshot(docs)
    on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in docs.glob("*.md")}
    lost = len([p for p in on_disk if p not in held])
    stale = len([p for p, h in held.items() if p not in on_disk or on_disk[p] != h[0]])
    if fresh is None:
        return lost, stale, False
    if fresh.exists():
        shutil.rmtree(fresh)
    shutil.copytree(docs, fresh, ignore=shutil.ignore_patterns(".citeline"))
    done = subprocess.run(index_command(fresh), capture_output=True, timeout=timeout)
    return lost, stale, done.returncode == 0 and snapshot(fresh) == held


@dataclass
class FirstIndexResult:
    files: int = 0
    killed_in_commit: int = 0  # the commit the kill came in (0: none)
    committed_before_kill: int = 0  # files the store held when the kill came
    consistent: bool = False
    lost_files: int = -1
    stale_files: int = -1
    equal_to_fresh: bool = False
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "problems": self.problems[:20]}


def first_index(work: Path, *, files: int, seed: int) -> FirstIndexResult:
    """A first index of ``files`` tiny notes killed with SIGKILL inside a commit about
    halfway through, then run again to the end: the store is consistent after the kill,
    and the finished index holds every file and equals a fresh index of the same files."""
    rng = random.Random(seed)
    docs, corpus = _new_corpus(work, rng)
    for n in range(files):
        corpus.write(f"f{n}.md", f"f{n}")
    result = FirstIndexResult(files=files)
    log = work / "first-commits.log"
    log.write_text("")
    env = dict(os.environ)
    env["CITELINE_TEST_COMMIT_LOG"] = str(log)
    env["CITELINE_TEST_COMMIT_PAUSE"] = "0.03"
    target = max(2, files // 2)  # file commits and model calls' commits both count
    with open(work / "first-index.log", "ab") as err:
        process = subprocess.Popen(
            index_command(docs), stdout=subprocess.DEVNULL, stderr=err, env=env
        )
    started = time.monotonic()
    while process.poll() is None:
        lines = log.read_text().split()
        # the last line a "begin N" (N at least the target): inside the N-th commit
        last = lines[-2:] if len(lines) >= 3 and lines[-3] == "begin" else []
        if last and int(last[0]) >= target:
            process.send_signal(signal.SIGKILL)
            result.killed_in_commit = int(last[0])
            break
        if time.monotonic() - started > 600:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    code = process.wait()
    if code != -signal.SIGKILL or not result.killed_in_commit:
        result.problems.append(f"the first index was not killed inside a commit (exit {code})")
    result.committed_before_kill = len(snapshot(docs)) if (docs / ".citeline").exists() else 0
    problems = check_store(docs, corpus.versions)
    result.problems.extend(problems)
    result.consistent = not problems
    finished = subprocess.run(index_command(docs), capture_output=True, timeout=900)
    if finished.returncode != 0:
        result.problems.append(f"the run after the kill exited {finished.returncode}")
        return result
    result.lost_files, result.stale_files, result.equal_to_fresh = _against_disk(
        docs, work / "first-fresh", timeout=900
    )
    return result
