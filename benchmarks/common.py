"""Helpers shared by the benchmark scripts: corpora and memory figures."""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from citeline.service.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
SHARED_SCIFACT = REPO.parent / "shared" / "eval" / "scifact" / "corpus.jsonl"
FIXTURE_SCIFACT = REPO / "tests" / "fixtures" / "eval" / "scifact-slice" / "corpus.jsonl"


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scientific_abstracts(limit: int) -> list[tuple[str, str]]:
    """(title, abstract) pairs: BEIR SciFact when ../shared has it, else the test slice."""
    source = SHARED_SCIFACT if SHARED_SCIFACT.is_file() else FIXTURE_SCIFACT
    rows = []
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows.append((str(row.get("title") or ""), str(row["text"])))
            if len(rows) >= limit:
                break
    return rows


def write_corpus(folder: Path, abstracts: list[tuple[str, str]], per_file: int = 8) -> Path:
    """Markdown files of several abstracts each (one section per abstract), plus the samples."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for start in range(0, len(abstracts), per_file):
        sections = [
            f"## {title}\n\n{text}\n" for title, text in abstracts[start : start + per_file]
        ]
        (folder / f"papers-{start // per_file:04}.md").write_text(
            f"# Reading notes {start // per_file}\n\n" + "\n".join(sections)
        )
    shutil.copytree(REPO / "samples", folder / "samples")
    return folder


def abstract_pieces(limit: int = 1_000_000, words: int = 120) -> list[str]:
    """SciFact's titles and abstracts cut at sentence ends into pieces of at most about
    ``words`` words: chunk-sized real text."""
    pieces = []
    for title, text in scientific_abstracts(limit):
        piece: list[str] = title.split()
        for sentence in text.split(". "):
            if piece and len(piece) + len(sentence.split()) > words:
                pieces.append(" ".join(piece))
                piece = []
            piece.extend(f"{sentence.rstrip('.')}.".split())
        if piece:
            pieces.append(" ".join(piece))
    return pieces


def synthetic_texts(pieces: list[str], size: int, seed: int = 1) -> Iterator[str]:
    """``size`` chunk texts, each a random piece with a fifth of its words dropped (so a
    million chunks hold about 80 near-copies of each piece, as a big corpus of
    revisions and duplicates would)."""
    rng = random.Random(seed)
    for _ in range(size):
        words = pieces[rng.randrange(len(pieces))].split()
        yield " ".join(w for w in words if rng.random() > 0.2) or words[0]


def synthetic_terms(pieces: list[str], size: int, seed: int = 1) -> Iterator[str]:
    """The keyword terms of ``size`` chunks as :func:`synthetic_texts` makes them, a fifth
    of each piece's terms dropped rather than of its words (each piece stemmed once)."""
    from citeline.core.keywords import terms

    rng = random.Random(seed)
    stemmed = [terms(piece) or ["empty"] for piece in pieces]
    for _ in range(size):
        words = stemmed[rng.randrange(len(stemmed))]
        yield " ".join(w for w in words if rng.random() > 0.2) or words[0]


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, as `uptime` prints them."""
    return [round(x, 2) for x in os.getloadavg()]


def extractive_workspace(docs: Path) -> Workspace:
    """The folder's workspace, indexed, answering extractively with the ask log off:
    how the answer benchmarks ask a question set."""
    import dataclasses

    from citeline.app import ModelPool, open_workspace
    from citeline.core.answering.settings import EXTRACTIVE
    from citeline.settings import load_settings

    settings, _ = load_settings(docs)
    workspace = open_workspace(docs, settings, ModelPool())
    workspace.update()
    workspace.settings = dataclasses.replace(
        settings,
        answer=dataclasses.replace(settings.answer, mode=EXTRACTIVE),
        records=dataclasses.replace(settings.records, asks=False),
    )
    return workspace


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` external processes, each spinning on one core (``--busy N``).

    Each starts in a session of its own, as a program started from another terminal
    does: where the kernel groups tasks by session for fairness (``autogroup``, on by
    default on desktop distributions), it competes as another program, not as one more
    thread of the benchmark's.
    """
    # ``while True: pass`` that stops when its parent is gone (a benchmark killed
    # without its ``finally``): a session of its own outlives it otherwise.
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
    spinners = [
        subprocess.Popen([sys.executable, "-c", spin], start_new_session=True) for _ in range(count)
    ]
    try:
        time.sleep(0.5 if count else 0.0)  # let the scheduler see them
        yield
    finally:
        for process in spinners:
            process.kill()
            process.wait()


def other_busy_cores(window: float) -> float:
    """Cores kept busy by other processes over ``window`` seconds (from /proc/stat)."""

    def sample() -> tuple[int, int, int]:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
        with open("/proc/self/stat") as handle:
            own = handle.read().rsplit(")", 1)[1].split()
        return sum(fields[:8]), fields[3] + fields[4], int(own[11]) + int(own[12])

    total0, idle0, own0 = sample()
    time.sleep(window)
    total1, idle1, own1 = sample()
    elapsed = total1 - total0
    if elapsed <= 0:
        return 0.0
    busy = (elapsed - (idle1 - idle0)) - (own1 - own0)
    return round(max(busy, 0) / elapsed * (os.cpu_count() or 1), 2)


def others_now() -> dict[str, object]:
    """What other processes ask of the CPU now: busy cores over half a second, and
    their runnable tasks as the embedder reads them before a batch (``cpu_free``)."""
    from citeline.backends.llama.cpu_free import FreeCpu

    return {"busy_cores": other_busy_cores(0.5), "runnable": FreeCpu().others()}
