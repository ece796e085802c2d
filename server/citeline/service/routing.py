"""Which folder a request goes to, and one result list from several folders.

A request may name its folder; a search without one searches every folder and
merges the hits; an ask without one goes to the folder whose best passage
scores highest for the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from citeline.core.documents import Hit

F = TypeVar("F")


@dataclass(frozen=True)
class FolderHit(Generic[F]):
    folder: F
    hit: Hit
    # Is the folder's own copy of the hit's file the indexed one?  "same", "differs"
    # (a team index's reader whose clone is elsewhere) or "missing".
    local_copy: str = "same"


def merge_hits(per_folder: Sequence[tuple[F, Sequence[Hit]]], k: int) -> list[FolderHit[F]]:
    """The ``k`` best hits of several folders, best first, ranks counted anew.

    Folders' hits are ordered by score, or by the reranker's score when every hit
    has one (a reranker's scores compare across folders; fused ranks do not
    compare better, but are what there is).  One folder's hits keep their order.
    """
    hits = [FolderHit(folder, hit) for folder, found in per_folder for hit in found]
    if len(per_folder) <= 1:
        return hits
    reranked = all(h.hit.rerank is not None for h in hits)

    def score(h: FolderHit[F]) -> float:
        return h.hit.rerank if reranked and h.hit.rerank is not None else h.hit.score

    hits.sort(key=lambda h: -score(h))
    return [replace(h, hit=replace(h.hit, rank=rank)) for rank, h in enumerate(hits[:k], start=1)]


def best_folder(scored: Sequence[tuple[F, list[Hit]]]) -> F | None:
    """The folder whose best hit scores highest (the first of equals); None if none."""
    best: tuple[float, int, F] | None = None
    for i, (folder, hits) in enumerate(scored):
        score = hits[0].score if hits else float("-inf")
        if best is None or (score, -i) > (best[0], best[1]):
            best = (score, -i, folder)
    return best[2] if best is not None else None
