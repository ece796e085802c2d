#!/usr/bin/env python3
"""Re-verify the manuals-en question set against its documents.

Checks, for questions-tune.jsonl and questions-report.jsonl:

* every line is a JSON object with "id", "question", "sources" and "answers";
  answerable rows have 1-3 answers, unanswerable rows have none and a
  "why_unanswerable" note;
* ids are unique across both files;
* every source path exists under docs/;
* every reference answer occurs in the visible text of at least one of its
  sources (lowercased, typographic quotes/dashes/ligatures folded, whitespace
  collapsed).  An answer found only after dropping all punctuation (the
  normalisation Citeline's own scorer uses) passes with a warning;
* every package (top-level folder of docs/) appears in both files;

and prints counts per file and per package.

Standard library only.  HTML is read with html.parser.  PDF text needs a
text extractor: PyMuPDF (the project's own dependency, so run this with
.venv/bin/python) or, failing that, the pdftotext command; without either the
PDF answers are reported as unchecked (exit status 0 unless --require-pdf).

Usage: python3 eval/manuals-en/check.py [--require-pdf]
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import unicodedata
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
FILES = ("questions-tune.jsonl", "questions-report.jsonl")

# characters that PDF and HTML renderings use where a user (or a reference
# answer) would type plain ASCII; mapped before NFKC (NFKC would turn the small
# tilde into a space plus a combining mark).
_FOLD = str.maketrans(
    {
        "\u2212": "-",  # minus sign (groff PDFs)
        "\u2010": "-",
        "\u2011": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u02dc": "~",  # small tilde (groff PDFs)
        "\u02c6": "^",
        "\u00a0": " ",
    }
)


def fold(text: str) -> str:
    """Lowercase, fold typographic characters and ligatures, collapse whitespace."""
    text = unicodedata.normalize("NFKC", text.translate(_FOLD))
    return re.sub(r"\s+", " ", text.lower())


def alnum(text: str) -> str:
    """Citeline's answer normalisation: lowercase letters and digits only."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


class _Visible(HTMLParser):
    SKIP = frozenset({"script", "style", "template", "noscript"})
    BLOCK = frozenset(
        {"p", "div", "br", "li", "tr", "td", "th", "dt", "dd", "pre", "table", "title"}
        | {f"h{i}" for i in range(1, 7)}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def _pdf_text(path: Path) -> str | None:
    try:
        import pymupdf  # type: ignore[import-not-found]
    except ImportError:
        try:
            import fitz as pymupdf  # type: ignore[import-not-found,no-redef]
        except ImportError:
            pymupdf = None
    if pymupdf is not None:
        with pymupdf.open(path) as doc:
            return "\n".join(page.get_text() for page in doc)
    if shutil.which("pdftotext"):
        run = subprocess.run(
            ["pdftotext", "-enc", "UTF-8", str(path), "-"],
            capture_output=True,
            check=True,
        )
        return run.stdout.decode("utf-8", "replace")
    return None


def visible_text(path: Path) -> str | None:
    """The text a reader sees; None when it cannot be extracted here."""
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm", ".xhtml"):
        parser = _Visible()
        parser.feed(path.read_text(encoding="utf-8", errors="replace"))
        parser.close()
        return "".join(parser.parts)
    if suffix == ".pdf":
        return _pdf_text(path)
    return path.read_text(encoding="utf-8", errors="replace")


def main(argv: list[str]) -> int:
    require_pdf = "--require-pdf" in argv
    errors: list[str] = []
    warnings: list[str] = []
    unchecked = 0
    texts: dict[str, str | None] = {}

    def text_of(rel: str) -> str | None:
        if rel not in texts:
            raw = visible_text(DOCS / rel)
            texts[rel] = None if raw is None else fold(raw)
        return texts[rel]

    packages = sorted(p.name for p in DOCS.iterdir() if p.is_dir())
    seen_ids: dict[str, str] = {}
    per_file: dict[str, Counter[str]] = {}
    per_package: dict[str, dict[str, Counter[str]]] = {}

    for name in FILES:
        counts: Counter[str] = Counter()
        pkg_counts: dict[str, Counter[str]] = {p: Counter() for p in packages}
        per_file[name] = counts
        per_package[name] = pkg_counts
        lines = (HERE / name).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            where = f"{name}:{number}"
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON ({exc})")
                continue
            qid, question = row.get("id"), row.get("question")
            sources, answers = row.get("sources"), row.get("answers")
            if not isinstance(qid, str) or not qid:
                errors.append(f"{where}: missing id")
                continue
            where = f"{name}:{number} ({qid})"
            if qid in seen_ids:
                errors.append(f"{where}: id already used in {seen_ids[qid]}")
            seen_ids[qid] = where
            if not isinstance(question, str) or not question.strip():
                errors.append(f"{where}: missing question")
            if not isinstance(sources, list) or not isinstance(answers, list):
                errors.append(f"{where}: sources and answers must be lists")
                continue
            package = qid.rsplit("-", 1)[0]
            folder = {"debian": "debian-reference"}.get(package, package)
            if folder not in pkg_counts:
                warnings.append(f"{where}: id prefix {package!r} matches no folder in docs/")
            if not sources:
                counts["unanswerable"] += 1
                if answers:
                    errors.append(f"{where}: unanswerable question with answers")
                if not str(row.get("why_unanswerable", "")).strip():
                    errors.append(f"{where}: unanswerable question without why_unanswerable")
                if folder in pkg_counts:
                    pkg_counts[folder]["unanswerable"] += 1
                continue
            counts["answerable"] += 1
            if not 1 <= len(answers) <= 3:
                errors.append(f"{where}: needs 1-3 answers, has {len(answers)}")
            if folder in pkg_counts:
                pkg_counts[folder]["answerable"] += 1
            rels = []
            for source in sources:
                rel = str(source).split("#", 1)[0]
                if not (DOCS / rel).is_file():
                    errors.append(f"{where}: source {rel} does not exist under docs/")
                else:
                    rels.append(rel)
            for answer in answers:
                if not isinstance(answer, str) or not alnum(answer):
                    errors.append(f"{where}: answer {answer!r} has no letters or digits")
                    continue
                if alnum(answer) in alnum(str(question)):
                    warnings.append(f"{where}: answer {answer!r} is contained in the question")
                extracted = [(rel, text_of(rel)) for rel in rels]
                readable = [(rel, t) for rel, t in extracted if t is not None]
                if any(fold(answer) in t for _, t in readable):
                    continue
                if any(alnum(answer) in alnum(t) for _, t in readable):
                    warnings.append(f"{where}: {answer!r} found only ignoring punctuation")
                    continue
                if len(readable) < len(extracted):
                    unchecked += 1
                    warnings.append(f"{where}: {answer!r} not checked (no PDF text extractor)")
                    continue
                errors.append(f"{where}: answer {answer!r} not found in {', '.join(rels)}")

    for name in FILES:
        missing = [p for p, c in per_package[name].items() if not c["answerable"]]
        if missing:
            errors.append(f"{name}: no answerable question for {', '.join(missing)}")

    files = [p for p in DOCS.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    print(f"docs/: {len(files)} files, {size / 1e6:.2f} MB, packages: {', '.join(packages)}")
    for name in FILES:
        c = per_file[name]
        print(f"{name}: {c['answerable']} answerable, {c['unanswerable']} unanswerable")
        for package, pc in per_package[name].items():
            print(f"  {package:18} {pc['answerable']:3} answerable {pc['unanswerable']:3} unanswerable")
    for message in warnings:
        print(f"warning: {message}")
    for message in errors:
        print(f"error: {message}")
    if unchecked and require_pdf:
        print(f"error: {unchecked} answers in PDF sources could not be checked")
        return 1
    print("FAILED" if errors else "OK")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
