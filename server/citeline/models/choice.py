"""Which bundled embedding model serves a folder, when its settings name none.

English folders keep all-MiniLM-L6-v2 (fast; the figures of docs/quality.md); a
folder whose text is in good part Chinese, Japanese or Korean gets
multilingual-e5-small, which understands those languages and matches questions
across languages (docs/quality.md, "Multilingual model").  What counts is the start
of each document's text (64 KB of a text file, the first pages of a PDF): the folder
needs at least :data:`MIN_CJK_CHARACTERS` CJK characters, and they must make
:data:`MIN_CJK_SHARE` of its text, a CJK character weighing as much as three Latin
letters (the rule of :func:`citeline.core.scripts.is_cjk`).  A mostly English folder
with a page in Chinese (Citeline's own samples: 9% CJK) keeps MiniLM, whose keyword
search serves that page; ``[embedding] model`` forces either model.

The decision is recorded in the index folder (:data:`CHOICE_FILE`) with what each
document was found to hold, keyed by its size and mtime: a later decision reads
only new or changed documents, and the model (and so every vector) changes only
when the decision does.  When the multilingual model is unavailable (package
missing, damaged, not the pinned release) the folder keeps MiniLM and the reason
says why.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeline.core.scripts import cjk_count
from citeline.core.walking import DocumentFilter
from citeline.models import ModelError

log = logging.getLogger(__name__)

CHOICE_FILE = "embedding-choice.json"
MIN_CJK_CHARACTERS = 200
MIN_CJK_SHARE = 0.15
TEXT_SAMPLE_BYTES = 64 * 1024
PDF_SAMPLE_PAGES = 4
_VERSION = 1
ENGLISH = "the documents are not in good part Chinese, Japanese or Korean"

MINILM = "all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"


@dataclass(frozen=True)
class ModelChoice:
    model: str  # MINILM or E5
    reason: str  # for people: why this model serves the folder

    @property
    def notable(self) -> bool:
        """Anything but the plain default: English documents, MiniLM."""
        return self.reason != ENGLISH


def choose_embedding_model(
    docs_root: Path, index_dir: Path, *, recorded: bool = False
) -> ModelChoice:
    """The bundled model for the documents under ``docs_root``, and why.

    Recorded in ``index_dir`` when that folder exists, else once it does
    (:func:`record_choice`): a folder never indexed is not given one by asking.
    With ``recorded``, a plain decision already recorded (English and MiniLM, or the
    multilingual model while it is available) is taken without reading the folder:
    a start on an indexed folder (at 25,001 files the walk and a ``stat`` per file
    cost 0.17 s of CPU); the caller decides again once it has seen files change."""
    if recorded:
        last = _recorded_decision(index_dir / CHOICE_FILE)
        if last is not None and (
            (last.model == MINILM and last.reason == ENGLISH)
            or (last.model == E5 and multilingual_unavailable() is None)
        ):
            return last
    record_path = index_dir / CHOICE_FILE
    record = _read_record(record_path)
    known: dict[str, Any] = record.get("files") or {}
    files: dict[str, list[int]] = {}  # rel -> [size, mtime_ns, cjk, latin]
    try:
        entries = list(DocumentFilter(docs_root, index_dir).entries())
    except OSError:
        entries = []
    for rel, entry in entries:
        try:
            stat = entry.stat()
        except OSError:
            continue
        old = known.get(rel)
        if isinstance(old, list) and old[:2] == [stat.st_size, stat.st_mtime_ns]:
            files[rel] = old
            continue
        cjk, latin = sample_counts(Path(entry.path))
        files[rel] = [stat.st_size, stat.st_mtime_ns, cjk, latin]
    choice = decide(files)
    if choice.model == E5:
        problem = multilingual_unavailable()
        if problem:
            log.warning("%s: %s", docs_root, problem)
            choice = ModelChoice(MINILM, f"{choice.reason}, but {problem}")
    decided = (files, choice.model, choice.reason)
    if decided != (known, record.get("model"), record.get("reason")):
        _unrecorded[str(record_path)] = (files, choice)
        record_choice(index_dir)
    return choice


# Scans not yet recorded because the index folder did not exist, by record path.
_unrecorded: dict[str, tuple[dict[str, list[int]], ModelChoice]] = {}


def record_choice(index_dir: Path) -> None:
    """Record this process's last decision for ``index_dir`` once that folder exists
    (the first ``citeline index`` creates it after the decision was made)."""
    record_path = index_dir / CHOICE_FILE
    pending = _unrecorded.get(str(record_path))
    if pending is not None and index_dir.is_dir():
        _write_record(record_path, *pending)
        del _unrecorded[str(record_path)]


def decide(files: dict[str, list[int]]) -> ModelChoice:
    """The model for documents with these counts (rel -> [size, mtime, cjk, latin])."""
    cjk = sum(f[2] for f in files.values())
    latin = sum(f[3] for f in files.values())
    share = 3 * cjk / (3 * cjk + latin) if cjk else 0.0
    if cjk >= MIN_CJK_CHARACTERS and share >= MIN_CJK_SHARE:
        example = max(sorted(files), key=lambda rel: files[rel][2])
        return ModelChoice(
            E5, f"{share:.0%} of the documents' text is Chinese, Japanese or Korean ({example}…)"
        )
    return ModelChoice(MINILM, ENGLISH)


def multilingual_unavailable() -> str | None:
    """Why multilingual-e5-small cannot be used here (one line), or None."""
    from citeline.models import e5

    try:
        source = e5.e5_source_file()
        if e5.source_sha256(source) != e5.SOURCE_SHA256:
            return (
                f"the multilingual model {source} is not the {e5.SOURCE_DISTRIBUTION}"
                f" {e5.SOURCE_VERSION} release (run '{e5.INSTALL}')"
            )
    except ModelError as exc:
        return str(exc)
    return None


def sample_counts(path: Path) -> tuple[int, int]:
    """(CJK characters, Latin letters) at the start of a document's text."""
    try:
        if path.suffix.lower() == ".pdf":
            text = _pdf_sample(path)
        else:
            with open(path, "rb") as handle:
                text = handle.read(TEXT_SAMPLE_BYTES).decode("utf-8", errors="ignore")
    except Exception:  # an unreadable document: indexing reports it
        return (0, 0)
    return (cjk_count(text), latin_count(text))


#: Every ASCII byte but the letters (ASCII ``isalpha`` is exactly A-Z and a-z).
_NOT_ASCII_LETTERS = bytes(b for b in range(128) if not chr(b).isalpha())


def latin_count(text: str) -> int:
    """The ASCII letters in ``text``, counted in C (a Python loop over every character
    of a 64 KB sample cost about 5 ms a file: minutes for a first index of 250,000)."""
    return len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTERS))


def _pdf_sample(path: Path) -> str:
    """The first pages' text, read by PyMuPDF in a child process: a PDF that crashes the
    parser (a 60,000-level outline) costs this sample, never the daemon."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PDF_SAMPLER, str(path), str(PDF_SAMPLE_PAGES)],
            capture_output=True,
            timeout=PDF_SAMPLE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", errors="ignore") if done.returncode == 0 else ""


PDF_SAMPLE_SECONDS = 30.0
_PDF_SAMPLER = """
import sys
from citeline.core.loaders.pdf import _fitz
with _fitz().open(sys.argv[1]) as document:
    pages = [document[i].get_text() for i in range(min(int(sys.argv[2]), len(document)))]
sys.stdout.write("\\n".join(pages))
"""


def recorded_choice(index_dir: Path) -> ModelChoice | None:
    """The choice last recorded in ``index_dir``, if any."""
    try:
        value = json.loads((index_dir / CHOICE_FILE).read_text("utf-8"))
        return ModelChoice(str(value["model"]), str(value["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


_FILES_KEY = ', "files": '


def _recorded_decision(path: Path) -> ModelChoice | None:
    """The decision of the record at ``path`` from its first bytes alone: the record
    is written decision first (:func:`_write_record`), and at 250,001 documents its
    per-file counts are 17 MB of JSON (0.35 s to parse)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16 * 1024).decode("utf-8", "ignore")
    except OSError:
        return None
    at = head.find(_FILES_KEY)  # a string in the record spells its quotes \"
    if at < 0:
        return None
    try:
        value = json.loads(head[:at] + "}")
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("version") != _VERSION:
        return None
    model, reason = value.get("model"), value.get("reason")
    if not isinstance(model, str) or not isinstance(reason, str):
        return None
    return ModelChoice(model, reason)


def _read_record(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(value, dict) or value.get("version") != _VERSION:
        return {}
    if not isinstance(value.get("files"), dict):
        return {}
    return value


def _write_record(path: Path, files: dict[str, list[int]], choice: ModelChoice) -> None:
    # the decision first, the counts last: _recorded_decision reads only the start
    payload = {"version": _VERSION, "model": choice.model, "reason": choice.reason, "files": files}
    with contextlib.suppress(OSError):
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)
