"""Routing and merging: which folder, and one ranked list from several."""

from __future__ import annotations

from citeline.core.documents import Chunk, Hit
from citeline.service.routing import best_folder, merge_hits


def hit(rank: int, score: float, rerank: float | None = None) -> Hit:
    chunk = Chunk(f"{rank}.md", "T", (), "text", 1, 1, None, 0)
    return Hit(chunk_id=rank, rank=rank, score=score, chunk=chunk, rerank=rerank)


def test_one_folders_hits_keep_their_order_and_ranks() -> None:
    hits = [hit(1, 0.2), hit(2, 0.9)]  # a reranker's order need not follow the score
    merged = merge_hits([("a", hits)], k=1)
    assert [(m.folder, m.hit) for m in merged] == [("a", hits[0]), ("a", hits[1])]


def test_several_folders_merge_by_score_and_count_ranks_anew() -> None:
    merged = merge_hits([("a", [hit(1, 0.5), hit(2, 0.1)]), ("b", [hit(1, 0.7)])], k=2)
    assert [(m.folder, m.hit.score, m.hit.rank) for m in merged] == [("b", 0.7, 1), ("a", 0.5, 2)]


def test_reranker_scores_order_the_merge_when_every_hit_has_one() -> None:
    both = merge_hits([("a", [hit(1, 0.9, rerank=-2.0)]), ("b", [hit(1, 0.1, rerank=3.0)])], k=5)
    assert [m.folder for m in both] == ["b", "a"]
    partly = merge_hits([("a", [hit(1, 0.9, rerank=-2.0)]), ("b", [hit(1, 0.1)])], k=5)
    assert [m.folder for m in partly] == ["a", "b"]


def test_equal_scores_keep_the_folder_order() -> None:
    merged = merge_hits([("a", [hit(1, 0.5)]), ("b", [hit(1, 0.5)])], k=5)
    assert [m.folder for m in merged] == ["a", "b"]


def test_the_best_folder_has_the_best_first_hit() -> None:
    assert best_folder([("a", [hit(1, 0.3)]), ("b", [hit(1, 0.8)]), ("c", [])]) == "b"
    assert best_folder([("a", [hit(1, 0.5)]), ("b", [hit(1, 0.5)])]) == "a"  # first of equals
    assert best_folder([("a", []), ("b", [])]) == "a"
    assert best_folder([]) is None
