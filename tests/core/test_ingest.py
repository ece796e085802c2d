"""Incremental, chunk-level indexing with the real default embedding model."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pymupdf
import pytest

from citeline.app import ModelPool, Workspace, open_workspace
from citeline.core import ingest
from citeline.core.chunking import ChunkSettings
from citeline.settings import EmbeddingSettings, Settings
from conftest import CountingEmbedder, copy_samples


def paragraph(topic: str, n: int) -> str:
    return (
        f"Paragraph {n} explains {topic} in detail. It has a few sentences so that it "
        f"forms a chunk of its own. The {topic} behaviour number {n} is documented here."
    )


def long_markdown(topics: list[str]) -> str:
    parts = ["# Handbook", ""]
    for i, topic in enumerate(topics):
        parts += [
            f"## Section {i}: {topic}",
            "",
            paragraph(topic, i),
            "",
            paragraph(topic, i + 100),
            "",
        ]
    return "\n".join(parts)


TOPICS = [
    "backups",
    "proxies",
    "certificates",
    "logging",
    "upgrades",
    "caching",
    "permissions",
    "monitoring",
    "scheduling",
    "rollbacks",
]


def open_ws(docs: Path, embedder: CountingEmbedder, settings: Settings | None = None) -> Workspace:
    settings = settings or Settings()
    return open_workspace(docs, settings, ModelPool(embedders={settings.embedding: embedder}))


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "handbook.md").write_text(long_markdown(TOPICS))
    (root / "notes.txt").write_text(
        "Plain notes about the coffee machine.\n\nDescale it monthly.\n"
    )
    (root / "page.html").write_text(
        "<html><head><title>Ops page</title><script>var x=1;</script></head><body>"
        "<nav>Home | About</nav><h1>Ops</h1>\n<p>The pager rotation changes every Monday.</p>"
        "<footer>Copyright</footer></body></html>"
    )
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "The PDF says the vault key rotates quarterly.")
    doc.save(root / "manual.pdf")
    return root


def test_cold_then_no_change_then_one_paragraph_edit(
    docs: Path, embedder: CountingEmbedder
) -> None:
    ws = open_ws(docs, embedder)
    first = ws.update()
    assert first.errors == []
    assert first.files == 4 and first.chunks >= 12
    assert first.embedded == embedder.embedded == first.chunks
    assert first.reused == 0

    again = ws.update()
    assert again.embedded == 0 and again.files_changed == 0 and again.chunks == first.chunks
    assert embedder.embedded == first.embedded

    handbook = docs / "handbook.md"
    text = handbook.read_text()
    edited = text.replace(
        "Paragraph 4 explains upgrades", "Paragraph 4 explains zero-downtime upgrades"
    )
    assert edited != text
    handbook.write_text(edited)
    before = embedder.embedded
    third = ws.update()
    assert third.files_changed == 1
    assert third.embedded == embedder.embedded - before == 1  # only the edited chunk
    assert third.reused == third.chunks - 3 - 1  # every other handbook chunk was reused
    hits = ws.retriever.search("zero-downtime upgrades", k=1)
    assert hits[0].chunk.path == "handbook.md" and "zero-downtime" in hits[0].chunk.text
    ws.close()


def test_rename_embeds_nothing_and_delete_disappears(
    docs: Path, embedder: CountingEmbedder
) -> None:
    ws = open_ws(docs, embedder)
    ws.update()
    (docs / "guides").mkdir()
    shutil.move(docs / "handbook.md", docs / "guides" / "renamed.md")
    (docs / "notes.txt").rename(docs / "coffee.txt")  # title from file name: not embedded
    before = embedder.embedded
    report = ws.update()
    assert embedder.embedded == before and report.embedded == 0
    assert report.files_changed == 2 and report.files_removed == 2
    hit = ws.retriever.search("certificates behaviour", k=1)[0]
    assert hit.chunk.path == "guides/renamed.md"
    assert ws.retriever.search("descale the coffee machine", k=1)[0].chunk.path == "coffee.txt"

    (docs / "manual.pdf").unlink()
    report = ws.update()
    assert report.files_removed == 1 and report.removed == 1
    paths = {h.chunk.path for h in ws.retriever.search("vault key rotates quarterly", k=20)}
    assert "manual.pdf" not in paths
    assert len(ws.index.vectors) == report.chunks
    ws.close()


def test_touch_without_change_embeds_nothing(docs: Path, embedder: CountingEmbedder) -> None:
    ws = open_ws(docs, embedder)
    ws.update()
    (docs / "handbook.md").write_text((docs / "handbook.md").read_text())
    before = embedder.embedded
    report = ws.update()
    assert embedder.embedded == before and report.files_changed == 0
    ws.close()


def test_bad_files_are_errors_and_the_rest_indexes(docs: Path, embedder: CountingEmbedder) -> None:
    (docs / "binary.md").write_bytes(bytes(range(256)) * 50)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf\n")
    enc = pymupdf.open()
    enc.new_page().insert_text((72, 72), "secret")
    enc.save(docs / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="u")
    ws = open_ws(docs, embedder)
    report = ws.update()
    errors = dict(report.errors)
    assert set(errors) == {"binary.md", "broken.pdf", "locked.pdf"}
    assert all("\n" not in m and m for m in errors.values())
    assert "encrypted" in errors["locked.pdf"]
    assert report.files == 4
    # a fixed file clears its error
    (docs / "binary.md").write_text("# Fixed\n\nNow it is text.\n")
    report = ws.update()
    assert "binary.md" not in dict(report.errors) and report.files == 5
    ws.close()


def test_changing_chunking_rechunks_but_reuses_vectors(
    docs: Path, embedder: CountingEmbedder
) -> None:
    ws = open_ws(docs, embedder)
    cold = ws.update()
    ws.close()
    settings = Settings(chunking=ChunkSettings(max_cost=1000, overlap_cost=100))
    ws = open_ws(docs, embedder, settings)
    report = ws.update()
    assert report.files_changed == 4  # everything re-chunked
    assert report.embedded < cold.embedded // 2  # most chunks have the same text: reused
    ws.close()


def test_changing_the_model_reembeds_everything(docs: Path, embedder: CountingEmbedder) -> None:
    ws = open_ws(docs, embedder)
    cold = ws.update()
    ws.close()
    # a query/document prefix changes every vector: the index must not mix them
    prefixed = Settings(embedding=EmbeddingSettings(preset="e5"))
    from citeline.app import make_embedder

    other = CountingEmbedder(make_embedder(prefixed.embedding))
    ws = open_ws(docs, other, prefixed)
    report = ws.update()
    assert report.embedded == other.embedded == cold.chunks
    assert (ws.index.store.get_meta("embedder") or "").startswith(other.fingerprint)
    ws.close()


def test_samples_index_cleanly(tmp_path: Path, embedder: CountingEmbedder) -> None:
    docs = tmp_path / "samples"
    copy_samples(docs)
    ws = open_ws(docs, embedder)
    report = ws.update()
    assert report.errors == []
    assert report.files == len(
        [p for p in docs.rglob("*") if p.is_file() and ".citeline" not in p.parts]
    )
    hit = ws.retriever.search("What happens when a PDF is encrypted?", k=3)
    assert any(h.chunk.path in {"troubleshooting.md", "citeline-guide.pdf"} for h in hit)
    ws.close()


def test_names_that_are_not_utf8_are_indexed_and_found(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    (root / os.fsdecode(b"dossier-\xe9")).mkdir(parents=True)
    bad = os.fsdecode(b"bad\xff.md")
    (root / bad).write_text("# Quinces\n\nQuince jelly sets without added pectin.\n")
    (root / os.fsdecode(b"dossier-\xe9") / "inner.md").write_text("# Medlars\n\nBlet them.\n")
    (root / "ok.md").write_text("# Ok\n\nA plain name.\n")
    ws = open_ws(root, embedder)
    report = ws.update()
    assert report.errors == [] and report.files == 3
    hit = ws.search("quince jelly pectin", 1)[0]
    assert hit.chunk.path == bad and os.fsencode(root / hit.chunk.path) == os.fsencode(root) + (
        b"/bad\xff.md"
    )
    assert hit.chunk.title == "Quinces"
    assert ws.update().files_changed == 0  # found again under the same name: nothing to do
    assert ws.update([bad]).files_changed == 0
    (root / bad).unlink()
    assert ws.update().files_removed == 1
    ws.close()


def test_an_interrupted_run_keeps_what_it_embedded(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "big.md").write_text(long_markdown([f"topic{i}" for i in range(12)]))
    ws = open_ws(root, embedder)
    ws.ingestor.batch_chunks = 4  # one model call per 4 chunks, vectors kept after each
    calls = 0

    def stop_after_two_calls() -> bool:
        return embedder.embedded >= 8

    report = ws.update(cancelled=stop_after_two_calls)
    calls = embedder.embedded
    assert report.cancelled and report.files == 0 and calls == 8  # no file committed
    ws.close()
    ws = open_ws(root, embedder)  # the next run (another process, say)
    report = ws.update()
    assert not report.cancelled and report.files == 1
    assert report.embedded == report.chunks - 8  # the first 8 were kept
    assert embedder.embedded - calls == report.chunks - 8
    ws.close()


def test_a_run_cancelled_before_its_removals_removes_nothing(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nApples.\n")
    (root / "b.md").write_text("# B\n\nBananas.\n")
    ws = open_ws(root, embedder)
    assert ws.update().files == 2
    (root / "b.md").unlink()
    report = ws.update(cancelled=lambda: True)  # a pause or cancel before the removal
    assert report.cancelled and report.files == 2 and report.files_removed == 0
    report = ws.update()
    assert not report.cancelled and report.files == 1 and report.files_removed == 1
    ws.close()


def test_pdf_running_lines_are_left_out_with_a_note(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    doc = pymupdf.open()
    for number in range(1, 5):
        page = doc.new_page()
        page.insert_text((72, 40), "Field Guide - Draft")
        page.insert_text((72, 300), f"Body text of page {number} about lichens and mosses.")
        page.insert_text((72, 810), f"Page {number} of 4")
    doc.save(root / "guide.pdf")
    ws = open_ws(root, embedder)
    report = ws.update()
    assert report.errors == [] and report.files == 1
    ((path, note),) = report.notes
    assert path == "guide.pdf" and "left out 8 running header/footer line(s)" in note
    assert ws.status().to_json()["notes"] == [{"path": "guide.pdf", "message": note}]
    ws.close()


def test_between_runs_after_each_file_read_and_each_model_call(
    docs: Path, embedder: CountingEmbedder
) -> None:
    ws = open_ws(docs, embedder)
    ws.ingestor.embed_chunks = 2  # texts per model call, as the daemon sets it
    calls: list[int] = []  # texts embedded so far, at each call until the last commit
    saving: list[int] = []  # calls after it: while the saved indexes are written

    def progress(done: int, total: int, rel: str) -> None:
        if done == total:
            saving.append(0)

    def between() -> None:
        (saving if saving else calls).append(embedder.embedded)

    report = ws.update(between=between, progress=progress)
    assert report.embedded > 4 and saving
    files_read = report.files_changed
    # Before any embedding: 2 around the plan's file records, one after each file read
    # (and more while the PDF parser's process works, as many as its time takes).
    assert calls.count(0) >= 2 + files_read
    # Then one after each model call of 2 texts: ceil(embedded / 2) calls.
    assert [c for c in calls if c] == [*range(2, report.embedded, 2), report.embedded]


def test_a_whole_folder_plan_says_what_it_found_and_lets_other_work_in(
    docs: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = open_ws(docs, embedder)
    planned: list[int] = []
    report = ws.update(planned=planned.append)
    assert planned == [report.files_changed] and report.files_changed > 2
    monkeypatch.setattr(ingest, "PLAN_PAUSE_FILES", 1)
    between: list[int] = []
    with (docs / "notes.txt").open("a") as handle:
        handle.write("\nOne more line.\n")
    (docs / "page.html").unlink()
    ws.update(planned=planned.append, between=lambda: between.append(len(planned)))
    assert planned[-1] == 2  # one to read, one to remove
    assert between[:3] == [1, 1, 1]  # a pause after each file compared, before the count
    ws.close()


def test_an_edit_stems_only_its_new_chunks_and_keyword_search_sees_them(
    docs: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.core import keywords

    ws = open_ws(docs, embedder)
    ws.update()
    stemmed: list[str] = []
    real_terms = keywords.terms

    def counting_terms(text: str) -> list[str]:
        stemmed.append(text)
        return real_terms(text)

    monkeypatch.setattr(keywords, "terms", counting_terms)
    handbook = docs / "handbook.md"
    handbook.write_text(handbook.read_text().replace("explains upgrades", "explains wombats"))
    ws.update(["handbook.md"])
    assert len(stemmed) == 1 and "wombats" in stemmed[0]
    hits = ws.retriever.search("wombats", k=1, mode="keyword")
    assert "wombats" in hits[0].chunk.text
    ws.close()


def test_a_changed_loader_rereads_only_its_formats_files_and_embeds_only_new_texts(
    docs: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from citeline.core import loaders
    from citeline.core.documents import SourceDocument
    from citeline.core.loaders import text as text_loader

    ws = open_ws(docs, embedder)
    cold = ws.update()
    assert ws.index.get_meta(ingest.LOADERS_META) is not None  # the versions that read it
    assert ws.update().files_changed == 0
    # A new PDF loader (same output): the PDF alone is read and chunked again, and its
    # unchanged chunk texts keep their vectors.
    monkeypatch.setitem(loaders.LOADER_VERSIONS, "pdf", loaders.LOADER_VERSIONS["pdf"] + 1)
    before = embedder.embedded
    report = ws.update()
    assert report.files_changed == 1 and report.embedded == 0 and report.reused >= 1
    assert embedder.embedded == before
    assert ws.update().files_changed == 0  # recorded: not read again
    # A text loader that now reads more: only the text file is re-chunked, and only
    # its new chunk's text is embedded.
    original = text_loader.load_text

    def load_text(data: bytes, rel_path: str, name: str) -> SourceDocument:
        return original(data + b"\n\nThe grinder is cleaned every Friday.\n", rel_path, name)

    monkeypatch.setattr(text_loader, "load_text", load_text)
    assert ws.update().files_changed == 0  # the same version: nothing is read again
    monkeypatch.setitem(loaders.LOADER_VERSIONS, "text", loaders.LOADER_VERSIONS["text"] + 1)
    report = ws.update()
    assert report.files_changed == 1 and 1 <= report.embedded < cold.embedded
    hits = ws.search("When is the grinder cleaned?", 3)
    assert hits and hits[0].chunk.path == "notes.txt" and "Friday" in hits[0].chunk.text
    ws.close()
