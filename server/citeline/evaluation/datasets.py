"""Evaluation sets: BEIR folders, SQuAD-style JSON, and a user's own question file.

Each becomes an ``EvalSet``: documents (written out as files, so the normal
loading and chunking run on them) and queries with their relevant documents.

The question file is JSON Lines, one question per line::

    {"question": "Where is the index stored?", "sources": ["getting-started.md"],
     "answers": [".citeline"]}

``sources`` are paths relative to the documents folder (``manual.pdf#page=3``
is accepted; the page is ignored for ranking); ``answers`` (optional) are
reference answers an answer should contain.  A question with no sources is
expected to be refused.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from citeline.service.errors import ServiceError


class DatasetError(ServiceError):
    """An evaluation file is missing or malformed; one line for the user."""


@dataclass(frozen=True)
class EvalQuery:
    id: str
    text: str
    relevant: dict[str, int]  # document id -> graded relevance
    answers: tuple[str, ...] = ()


@dataclass
class EvalSet:
    name: str
    queries: list[EvalQuery]
    # document id -> (title, text); None when the documents are a user's folder
    documents: dict[str, tuple[str, str]] | None = None
    suffix: str = ".md"
    notes: list[str] = field(default_factory=list)

    def file_name(self, doc_id: str) -> str:
        return f"{doc_id}{self.suffix}"

    def doc_id(self, path: str) -> str:
        if self.documents is None:
            return path
        return path[: -len(self.suffix)] if path.endswith(self.suffix) else path


def _read_jsonl(path: Path) -> list[dict[str, object]]:
    try:
        lines = path.read_text("utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{number}: expected a JSON object")
        rows.append(row)
    return rows


def load_beir(folder: Path, split: str = "test") -> EvalSet:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for required in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not required.is_file():
            raise DatasetError(f"{required} not found (expected a BEIR folder)")
    documents: dict[str, tuple[str, str]] = {}
    for row in _read_jsonl(folder / "corpus.jsonl"):
        documents[str(row["_id"])] = (str(row.get("title") or ""), str(row.get("text") or ""))
    texts = {str(r["_id"]): str(r["text"]) for r in _read_jsonl(folder / "queries.jsonl")}
    relevant: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8") as handle:
        for fields in csv.reader(handle, delimiter="\t"):
            if not fields or fields[0] == "query-id":
                continue
            query_id, doc_id, score = fields[0], fields[1], int(fields[2])
            if doc_id in documents:
                relevant.setdefault(query_id, {})[doc_id] = score
    queries = [
        EvalQuery(qid, texts[qid], rel)
        for qid, rel in sorted(relevant.items(), key=lambda item: _natural(item[0]))
        if qid in texts
    ]
    return EvalSet(f"{folder.name}:{split}", queries, documents)


def _natural(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (0, value)


def load_squad(path: Path) -> EvalSet:
    """Each context paragraph is a document; each question's relevant document is its own."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read {path} as SQuAD JSON: {exc}") from exc
    documents: dict[str, tuple[str, str]] = {}
    queries: list[EvalQuery] = []
    for article_number, article in enumerate(data.get("data", [])):
        title = str(article.get("title") or "")
        for paragraph_number, paragraph in enumerate(article.get("paragraphs", [])):
            doc_id = str(paragraph.get("id") or f"a{article_number}p{paragraph_number}")
            documents[doc_id] = (title, str(paragraph["context"]))
            for qa in paragraph.get("qas", []):
                answers = tuple(dict.fromkeys(str(a["text"]) for a in qa.get("answers", [])))
                queries.append(EvalQuery(str(qa["id"]), str(qa["question"]), {doc_id: 1}, answers))
    if not documents:
        raise DatasetError(f"{path} has no paragraphs (expected SQuAD format)")
    # Contexts are plain text: Markdown syntax must not reinterpret them.
    return EvalSet(path.name, queries, documents, suffix=".txt")


def load_questions(path: Path) -> EvalSet:
    queries = []
    for number, row in enumerate(_read_jsonl(path), start=1):
        question = row.get("question")
        sources = row.get("sources", [])
        answers = row.get("answers", [])
        if not isinstance(answers, list):
            answers = [answers]
        if not isinstance(question, str) or not isinstance(sources, list):
            raise DatasetError(f'{path}:{number}: needs "question" (text) and "sources" (list)')
        relevant = {str(s).split("#", 1)[0]: 1 for s in sources}
        queries.append(
            EvalQuery(str(row.get("id", number)), question, relevant, tuple(map(str, answers)))
        )
    return EvalSet(path.name, queries)


def load(kind: str, path: Path, split: str = "test") -> EvalSet:
    """An evaluation set of ``kind`` ``beir``, ``squad`` or ``questions``."""
    if kind == "beir":
        return load_beir(path, split)
    if kind == "squad":
        return load_squad(path)
    return load_questions(path)
