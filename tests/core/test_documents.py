"""The values that flow: a hit's JSON and a chunk's section."""

from __future__ import annotations

from citeline.core.documents import Chunk, Hit


def test_a_hit_as_json_rounds_scores_and_names_its_place() -> None:
    chunk = Chunk("guide/a.md", "Guide", ("Guide", "Install"), "Run it.", 3, 5, None, 0)
    assert chunk.section == "Guide > Install"
    out = Hit(7, 1, 0.123456789, chunk, dense=0.5, keyword=None).to_json()
    assert out == {
        "rank": 1,
        "score": 0.123457,
        "dense": 0.5,
        "keyword": None,
        "rerank": None,
        "path": "guide/a.md",
        "title": "Guide",
        "section": "Guide > Install",
        "page": None,
        "start_line": 3,
        "end_line": 5,
        "text": "Run it.",
    }
