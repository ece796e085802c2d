"""Pure conversions of the core's typed values into the wire's: URIs, ranges, located
hits, status, hover Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from citeline import wire
from citeline.core.answering.results import (
    Answer,
    AnswerMode,
    Citation,
    Evidence,
    Fallback,
    citation_for,
)
from citeline.core.documents import Chunk, Hit
from citeline.core.ingest import IngestReport
from citeline.lsp import convert
from citeline.lsp.convert import (
    hover_markdown,
    line_range,
    link_target,
    md_escape,
    path_to_uri,
    uri_to_path,
)
from citeline.service.history import HistoryEntry, RecordedAnswer
from citeline.service.selection import Unserved
from citeline.service.status import FolderStatus, ModelNames

ROOT = Path("/home/me/notes")


def chunk(**extra: Any) -> Chunk:
    base: dict[str, Any] = {
        "path": "guide/getting started.md",
        "title": "Guide",
        "heading_path": ("Guide", "Install"),
        "text": "Run   the installer.\nThen [restart].",
        "start_line": 40,
        "end_line": 47,
        "page": None,
        "ordinal": 0,
    }
    base.update(extra)
    return Chunk(**base)


PDF = {"path": "scan.pdf", "page": 4, "start_line": None, "end_line": None}


def hit(**extra: Any) -> Hit:
    return Hit(1, 1, 0.7, chunk(**extra), dense=0.61234567)


def citation(h: Hit, n: int = 1) -> Citation:
    return citation_for(Evidence(n, h), cited=True)


def an_answer(**extra: Any) -> Answer:
    h = hit()
    pdf = hit(**PDF)
    base: dict[str, Any] = {
        "question": "q",
        "language": "en",
        "text": "a [1]",
        "refused": False,
        "generator_called": False,
        "citations": [citation(h)],
        "hits": [h, pdf],
        "evidence": [Evidence(1, h)],
        "mode": AnswerMode.EXTRACTIVE,
    }
    base.update(extra)
    return Answer(**base)


def test_uris_round_trip_with_spaces_and_non_ascii() -> None:
    path = Path("/home/me/notes/常见 问题.md")
    uri = path_to_uri(path)
    assert uri == "file:///home/me/notes/%E5%B8%B8%E8%A7%81%20%E9%97%AE%E9%A2%98.md"
    assert uri_to_path(uri) == path
    assert uri_to_path(uri + "#page=3") == path
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("file://otherhost/x") is None


def test_line_ranges_cover_whole_lines_zero_based() -> None:
    assert line_range(40, 47) == {
        "start": {"line": 39, "character": 0},
        "end": {"line": 47, "character": 0},
    }
    assert line_range(1, 1) == {
        "start": {"line": 0, "character": 0},
        "end": {"line": 1, "character": 0},
    }
    assert line_range(None, None)["end"] == {"line": 0, "character": 0}


def test_a_located_text_hit() -> None:
    out = convert.hit(hit(), ROOT, "file:///home/me/notes")
    assert out["uri"] == "file:///home/me/notes/guide/getting%20started.md"
    assert out["range"] == line_range(40, 47)
    assert out["folder"] == "file:///home/me/notes"
    assert out["path"] == "guide/getting started.md"
    assert out["section"] == "Guide > Install"
    assert out["dense"] == 0.612346  # as every JSON output rounds it
    assert out["local_copy"] == "same" and out["local_copy_note"] is None


def test_a_located_pdf_hit_names_the_page() -> None:
    out = convert.hit(hit(**PDF), ROOT, "f")
    assert out["uri"] == "file:///home/me/notes/scan.pdf#page=4"
    assert out["range"] == line_range(None, None)


def test_an_answer_locates_citations_and_hits() -> None:
    out = convert.answer(an_answer(), ROOT, "file:///home/me/notes")
    assert set(out) == set(wire.Answer.__required_keys__ | wire.Answer.__optional_keys__)
    assert out["folder"] == "file:///home/me/notes"
    assert out["citations"][0]["range"]["start"]["line"] == 39
    assert out["hits"][1]["uri"].endswith("scan.pdf#page=4")
    assert out["citations"][0]["local_copy"] == "same"
    assert "text" not in out["citations"][0]  # the local copy is the indexed one
    assert out["grade"] == "answer" and out["grade_label"] == "Answer"


def test_the_wire_answer_agrees_with_the_command_lines_json() -> None:
    # ``citeline ask --json`` prints Answer.to_json(); the wire carries the same values
    a = an_answer(confidence=0.123456, timings={"search": 0.0123456, "generate": None})
    mine = a.to_json()
    out: dict[str, Any] = dict(convert.answer(a, ROOT, "f"))
    for key in ("citations", "hits"):
        for printed, sent in zip(mine.pop(key), out.pop(key), strict=True):
            assert {k: sent[k] for k in printed} == printed
    assert {k: out[k] for k in mine} == mine


def test_status_reports_and_history_agree_with_the_command_lines_json() -> None:
    status = FolderStatus(ROOT, "i", message="m", errors=(("a.pdf", "no text"),), last_update=0.0)
    sent: dict[str, Any] = dict(convert.folder_status(status))
    assert sent.pop("uri") == "file:///home/me/notes"
    assert sent == status.to_json()
    report = IngestReport(files=2, seconds=1.23456, notes=[("b.md", "x")])
    sent = dict(convert.reindex_report(ROOT, report))
    assert sent.pop("uri") == "file:///home/me/notes" and sent == report.to_json()
    models = ModelNames("e.gguf", "g.gguf", None, "the folder's language")
    assert convert.folder_status(FolderStatus(ROOT, "i", models=models))["models"] == {
        "embedding": "e.gguf",
        "embedding_reason": "the folder's language",
        "generation": "g.gguf",
        "reranking": None,
    }
    unserved = Unserved(ROOT, "why")
    assert convert.unserved(unserved) == {"uri": "file:///home/me/notes", **unserved.to_json()}
    entry = HistoryEntry("1", "t", ROOT, "q", "answer", "Answer", "extractive", "p", 2)
    assert convert.history_item(entry) == {**entry.to_json(), "folder": "file:///home/me/notes"}


def test_a_differing_local_copy_carries_the_passage_and_hover_does_not_jump() -> None:
    path = hit().chunk.path
    out = convert.answer(an_answer(), ROOT, "f", {path: "differs"}, {1: "Indexed passage."})
    (cited,) = out["citations"]
    assert cited["local_copy"] == "differs" and cited["text"] == "Indexed passage."
    assert out["hits"][0]["local_copy"] == "differs"
    shown = convert.hit(hit(), ROOT, "f", "missing")
    assert link_target(shown) == "file:///home/me/notes/guide/getting%20started.md"
    assert "(not in your copy of the documents)" in hover_markdown([shown])
    assert out["hits"][0]["local_copy_note"] == wire.LOCAL_COPY_NOTES[wire.LocalCopy.DIFFERS]
    assert "(your copy of this file differs from the indexed one)" in hover_markdown(out["hits"])


def test_the_answer_carries_the_texts_clients_show() -> None:
    quoted = convert.answer(an_answer(), ROOT, "f")
    assert quoted["mode_label"] == "Quoted from your documents"
    assert quoted["fallback_note"] is None
    fell_back = convert.answer(
        an_answer(fallback=Fallback.CONTEXT, model="/m/qwen.gguf"), ROOT, "f"
    )
    assert fell_back["fallback_note"] == wire.FALLBACK_NOTES[wire.Fallback.CONTEXT]
    written = convert.answer(
        an_answer(mode=AnswerMode.GENERATIVE, model="/m/Qwen2.5-3B.gguf"), ROOT, "f"
    )
    assert written["mode_label"] == "Written by Qwen2.5-3B, checked against sources"
    refused = convert.answer(an_answer(mode=None, refused=True, citations=[], hits=[]), ROOT, "f")
    assert refused["mode_label"] is None and refused["fallback_note"] is None


def test_a_recorded_answer_is_located_as_a_new_one() -> None:
    a = an_answer()
    recorded = RecordedAnswer("1", "t", ROOT, a.to_json(), {1: "Indexed."}, {})
    entry = convert.recorded_answer(recorded)
    new = convert.answer(a, ROOT, "file:///home/me/notes")
    assert entry["citations"][0]["uri"] == new["citations"][0]["uri"]
    assert entry["hits"] == new["hits"]
    assert entry["mode_label"] == new["mode_label"] and entry["stale"] is False
    assert entry["citations"][0]["changed"] is False


def test_hover_markdown_links_to_lines_and_pages() -> None:
    hits = [
        convert.hit(hit(), ROOT, "f"),
        convert.hit(hit(**PDF, heading_path=()), ROOT, "f"),
    ]
    text = hover_markdown(hits)
    first, second = text.split("\n\n---\n\n")
    assert first.startswith(
        "**[guide/getting started.md:40](file:///home/me/notes/guide/getting%20started.md#L40)**"
        " — Guide > Install"
    )
    assert "> Run the installer. Then \\[restart\\]." in first
    assert second.startswith("**[scan.pdf, page 4](file:///home/me/notes/scan.pdf#page=4)**\n")


def test_hover_plaintext_for_clients_without_markdown() -> None:
    text = hover_markdown([convert.hit(hit(), ROOT, "f")], markdown=False)
    assert text.startswith("guide/getting started.md:40 — Guide > Install\n")
    assert "**" not in text


def test_md_escape() -> None:
    assert md_escape("a*b_[c]#<d>|`e`") == "a\\*b\\_\\[c\\]\\#\\<d>\\|\\`e\\`"
    assert md_escape("> quoted > not") == "\\> quoted > not"
