#!/usr/bin/env python3
"""Re-verify the everyday question set against its documents.

Checks, for questions-tune.jsonl and questions-report.jsonl:

* every line is a JSON object with "id", "question", "lang" ("en" or "zh"),
  "kind" ("answerable", "unanswerable" or "off_topic"), "sources" and
  "answers"; answerable rows have 1-3 answers and a "cross_language" flag that
  is true exactly when the question's language differs from its documents';
  the other rows have no sources, no answers and a "why_unanswerable" note;
* "lang" matches the question (Chinese characters or not);
* ids are unique across both files;
* every source path exists under docs/ and belongs to the file's split (the
  split is by document: no report document is a source of a tune question);
* every reference answer occurs in the visible text of at least one of its
  sources (the folding of eval/manuals-en/check.py; found only after dropping
  punctuation, as Citeline's own scorer compares, passes with a warning);

and prints the counts by split, language, kind and cross-language.

Standard library only (PDF text through PyMuPDF or pdftotext, as in
eval/manuals-en/check.py, whose text helpers this reuses).

Usage: python3 eval/everyday/check.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
FILES = {"questions-tune.jsonl": "tune", "questions-report.jsonl": "report"}

# the split is by document folder: report documents are never seen in tuning
SPLIT = {
    "restic": "tune",
    "direnv": "tune",
    "maint-guide-zh-cn": "tune",
    "mkdocs": "report",
    "pipx": "report",
    "debian-faq": "report",
    "debian-reference-zh-cn": "report",
}
CHINESE_DOCS = {"maint-guide-zh-cn", "debian-reference-zh-cn"}
KINDS = ("answerable", "unanswerable", "off_topic")


def _manuals_check():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "manuals_en_check", HERE.parent / "manuals-en" / "check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_TEXT = _manuals_check()
fold, alnum, visible_text = _TEXT.fold, _TEXT.alnum, _TEXT.visible_text


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def main() -> int:
    errors: list[str] = []
    warnings: list[str] = []
    texts: dict[str, str | None] = {}
    seen: dict[str, str] = {}
    counts: Counter[tuple[str, str, str]] = Counter()
    cross: Counter[tuple[str, str]] = Counter()

    def text_of(rel: str) -> str | None:
        if rel not in texts:
            raw = visible_text(DOCS / rel)
            texts[rel] = None if raw is None else fold(raw)
        return texts[rel]

    for name, split in FILES.items():
        for number, line in enumerate((HERE / name).read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{name}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON ({exc})")
                continue
            qid, question = str(row.get("id", "")), str(row.get("question", ""))
            lang, kind = row.get("lang"), row.get("kind")
            sources, answers = row.get("sources"), row.get("answers")
            where = f"{where} ({qid})"
            if not qid or not question.strip():
                errors.append(f"{where}: needs id and question")
                continue
            if qid in seen:
                errors.append(f"{where}: id already used in {seen[qid]}")
            seen[qid] = where
            if lang != ("zh" if is_chinese(question) else "en"):
                errors.append(f"{where}: lang {lang!r} does not match the question")
            if kind not in KINDS:
                errors.append(f"{where}: kind must be one of {', '.join(KINDS)}")
                continue
            if not isinstance(sources, list) or not isinstance(answers, list):
                errors.append(f"{where}: sources and answers must be lists")
                continue
            counts[(split, str(lang), kind)] += 1
            if kind != "answerable":
                if sources or answers:
                    errors.append(f"{where}: {kind} question with sources or answers")
                if not str(row.get("why_unanswerable", "")).strip():
                    errors.append(f"{where}: {kind} question without why_unanswerable")
                continue
            if not sources or not 1 <= len(answers) <= 3:
                errors.append(f"{where}: needs sources and 1-3 answers")
                continue
            folders = {str(s).split("/", 1)[0] for s in sources}
            for folder in folders:
                if SPLIT.get(folder) != split:
                    errors.append(f"{where}: source folder {folder} is not in the {split} split")
            chinese_docs = folders <= CHINESE_DOCS
            if not chinese_docs and folders & CHINESE_DOCS:
                errors.append(f"{where}: sources mix Chinese and English documents")
            expected_cross = (lang == "zh") != chinese_docs
            if row.get("cross_language") is not expected_cross:
                errors.append(f"{where}: cross_language should be {expected_cross}")
            if expected_cross:
                cross[(split, str(lang))] += 1
            rels = []
            for source in sources:
                rel = str(source).split("#", 1)[0]
                if (DOCS / rel).is_file():
                    rels.append(rel)
                else:
                    errors.append(f"{where}: source {rel} does not exist under docs/")
            readable = [t for t in (text_of(rel) for rel in rels) if t is not None]
            if len(readable) < len(rels):
                errors.append(f"{where}: a source's text could not be extracted here")
            for answer in answers:
                if not isinstance(answer, str) or not alnum(answer):
                    errors.append(f"{where}: answer {answer!r} has no letters or digits")
                    continue
                if alnum(answer) in alnum(question):
                    warnings.append(f"{where}: answer {answer!r} is contained in the question")
                if any(fold(answer) in t for t in readable):
                    continue
                if any(alnum(answer) in alnum(t) for t in readable):
                    warnings.append(f"{where}: {answer!r} found only ignoring punctuation")
                    continue
                errors.append(f"{where}: answer {answer!r} not found in {', '.join(rels)}")

    print(f"{'split':7} {'lang':4} " + " ".join(f"{k:>12}" for k in KINDS) + "  cross-language")
    for split in FILES.values():
        for lang in ("en", "zh"):
            row_counts = " ".join(f"{counts[(split, lang, k)]:12}" for k in KINDS)
            print(f"{split:7} {lang:4} {row_counts}  {cross[(split, lang)]:14}")
    total = sum(counts.values())
    answerable = sum(v for (_, _, k), v in counts.items() if k == "answerable")
    print(f"total {total}: {answerable} answerable, {total - answerable} not")
    for message in warnings:
        print(f"warning: {message}")
    for message in errors:
        print(f"error: {message}")
    print("FAILED" if errors else "OK")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
