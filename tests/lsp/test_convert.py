"""Pure conversions: URIs, ranges, located hits, hover Markdown."""

from __future__ import annotations

from pathlib import Path

from citeline import wire
from citeline.lsp.convert import (
    answer_json,
    hover_markdown,
    line_range,
    link_target,
    located,
    md_escape,
    path_to_uri,
    uri_to_path,
)

ROOT = Path("/home/me/notes")


def hit(**extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "rank": 1,
        "score": 0.7,
        "path": "guide/getting started.md",
        "title": "Guide",
        "section": "Guide > Install",
        "page": None,
        "start_line": 40,
        "end_line": 47,
        "text": "Run   the installer.\nThen [restart].",
    }
    base.update(extra)
    return base


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


def test_located_text_hit() -> None:
    out = located(hit(), ROOT, "file:///home/me/notes")
    assert out["uri"] == "file:///home/me/notes/guide/getting%20started.md"
    assert out["range"] == line_range(40, 47)
    assert out["folder"] == "file:///home/me/notes"
    assert out["path"] == "guide/getting started.md"  # unchanged fields stay


def test_located_pdf_hit_names_the_page() -> None:
    out = located(hit(path="scan.pdf", page=4, start_line=None, end_line=None), ROOT, "f")
    assert out["uri"] == "file:///home/me/notes/scan.pdf#page=4"
    assert out["range"] == line_range(None, None)


def test_answer_json_locates_citations_and_hits() -> None:
    answer = {
        "question": "q",
        "answer": "a [1]",
        "citations": [{"n": 1, **hit()}],
        "hits": [hit(), hit(path="x.pdf", page=2, start_line=None, end_line=None)],
    }
    out = answer_json(answer, ROOT, "file:///home/me/notes")
    assert out["folder"] == "file:///home/me/notes"
    assert out["citations"][0]["range"]["start"]["line"] == 39
    assert out["hits"][1]["uri"].endswith("x.pdf#page=2")
    assert "uri" not in answer["citations"][0]  # the input is not modified
    assert out["citations"][0]["local_copy"] == "same"


def test_a_differing_local_copy_carries_the_passage_and_hover_does_not_jump() -> None:
    answer = {
        "question": "q",
        "answer": "a [1]",
        "citations": [{"n": 1, **hit()}],
        "hits": [{**hit(), "text": "Indexed passage."}],
    }
    path = hit()["path"]
    out = answer_json(answer, ROOT, "f", {path: "differs"}, {1: "Indexed passage."})
    (citation,) = out["citations"]
    assert citation["local_copy"] == "differs" and citation["text"] == "Indexed passage."
    assert out["hits"][0]["local_copy"] == "differs"
    shown = located({**hit(), "text": "Indexed passage."}, ROOT, "f", "missing")
    assert link_target(shown) == "file:///home/me/notes/guide/getting%20started.md"
    assert "(not in your copy of the documents)" in hover_markdown([shown])
    assert out["hits"][0]["local_copy_note"] == wire.LOCAL_COPY_NOTES[wire.LocalCopy.DIFFERS]
    assert "(your copy of this file differs from the indexed one)" in hover_markdown(out["hits"])


def test_answer_json_carries_the_texts_clients_show() -> None:
    answer = {"question": "q", "answer": "a", "citations": [], "hits": []}
    quoted = answer_json({**answer, "mode": "extractive"}, ROOT, "f")
    assert quoted["mode_label"] == "Quoted from your documents"
    assert quoted["fallback_note"] is None
    fell_back = answer_json(
        {**answer, "mode": "extractive", "fallback": "context", "model": "/m/qwen.gguf"}, ROOT, "f"
    )
    assert fell_back["fallback_note"] == wire.FALLBACK_NOTES[wire.Fallback.CONTEXT]
    generated = {**answer, "mode": "generative", "model": "/m/Qwen2.5-3B.gguf"}
    written = answer_json(generated, ROOT, "f")
    assert written["mode_label"] == "Written by Qwen2.5-3B, checked against sources"
    refused = answer_json({**answer, "mode": None, "refused": True}, ROOT, "f")
    assert refused["mode_label"] is None and refused["fallback_note"] is None


def test_hover_markdown_links_to_lines_and_pages() -> None:
    hits = [
        located(hit(), ROOT, "f"),
        located(
            hit(path="scan.pdf", page=4, start_line=None, end_line=None, section=""), ROOT, "f"
        ),
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
    text = hover_markdown([located(hit(), ROOT, "f")], markdown=False)
    assert text.startswith("guide/getting started.md:40 — Guide > Install\n")
    assert "**" not in text


def test_md_escape() -> None:
    assert md_escape("a*b_[c]#<d>|`e`") == "a\\*b\\_\\[c\\]\\#\\<d>\\|\\`e\\`"
    assert md_escape("> quoted > not") == "\\> quoted > not"
