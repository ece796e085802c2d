"""Ranking metrics over document ids: Hit@k, Recall@k, MRR@k, nDCG@k.

``ranked`` is a list of distinct document ids, best first; ``relevant`` maps the
relevant ids to their graded relevance (BEIR qrels scores; 1 when ungraded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence


def hit_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    return 1.0 if any(d in relevant for d in ranked[:k]) else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = [d for d, grade in relevant.items() if grade > 0]
    if not wanted:
        return 0.0
    return sum(1 for d in ranked[:k] if relevant.get(d, 0) > 0) / len(wanted)


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for position, doc in enumerate(ranked[:k], start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / position
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    """nDCG with linear gains (as BEIR's pytrec_eval computes it)."""
    dcg = sum(
        relevant.get(doc, 0) / math.log2(position + 1)
        for position, doc in enumerate(ranked[:k], start=1)
    )
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(position + 1) for position, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg else 0.0


Metric = Callable[[Sequence[str], Mapping[str, int]], float]

METRICS: dict[str, Metric] = {
    "ndcg@10": lambda r, rel: ndcg_at(r, rel, 10),
    "recall@5": lambda r, rel: recall_at(r, rel, 5),
    "recall@10": lambda r, rel: recall_at(r, rel, 10),
    "mrr@10": lambda r, rel: mrr_at(r, rel, 10),
    "hit@1": lambda r, rel: hit_at(r, rel, 1),
    "hit@5": lambda r, rel: hit_at(r, rel, 5),
    "hit@10": lambda r, rel: hit_at(r, rel, 10),
}


def average(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    if not rows:
        return {name: 0.0 for name in METRICS}
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]}
