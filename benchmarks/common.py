"""Helpers shared by the benchmark scripts: corpora and memory figures."""

from __future__ import annotations

import json
import resource
import shutil
from pathlib import Path

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
