"""The team keyword index's packed lists in numpy: each posting's BM25 share computed
as the exhaustive SQL computes it, every posting of a query summed (:func:`rank_all`),
and a top-k search over lists read best first (:func:`candidates`, :func:`rank_some`).

A term's packed list holds its postings best first: by *impact*, the share before the
IDF at the reference average length ``A₀`` (``keyword_stats.impact_average``).  A
search reads each term's first postings; every posting left unread in a term's list
has a share at most ``w · impact(last read) · max(1, A/A₀)`` (``w``: the term's IDF
times its repeats in the query; a longer average only shrinks the length's part of the
denominator, by at most ``A₀/A``).  With ``R`` the sum of those bounds over the terms,
a chunk never met scores at most ``R``, and a chunk met at most its partial sum plus
the bounds of the terms it was not met in.  Once ``R`` is below the k-th best partial
sum (a lower bound of the k-th best score), only the chunks whose bound reaches it can
be among the best k; their missing postings are looked up by key and they are scored
exactly, each share added in the query's order as :func:`rank_all` adds them, so the
ids, order and scores are the full sum's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citeline.core.keywords import K1, B

# A term's postings: chunk ids, frequencies and chunk lengths, in the same order.
Lists = tuple[np.ndarray, np.ndarray, np.ndarray]

SLACK = 1e-6  # a bound's margin for the float rounding of impacts
FLOOR_SLACK = 1e-9  # the k-th best partial sum's, for sums rounded in another order
NO_IDS = np.zeros(0, np.int64)


def shares(idf: float, tf: np.ndarray, length: np.ndarray, average: float) -> np.ndarray:
    """Each posting's BM25 share, the operations in the exhaustive SQL's order
    (``idf·tf·(k1+1) / (tf + k1·((1−b) + b·len/avg))``): the same bits."""
    tf = tf.astype(np.float64)
    denominator = B * length.astype(np.float64)
    denominator /= average
    denominator += 1 - B
    denominator *= K1
    denominator += tf
    share = idf * tf
    share *= K1 + 1
    share /= denominator
    return share


def least_kth(scores: np.ndarray, at: list[np.ndarray], k: int) -> float:
    """A score the k-th best reaches: the k-th best among the chunks of the shortest
    lists (distinct, at least 4k of them when there are), so that only the chunks at
    or above it are ranked; 0 when those hold fewer than k chunks."""
    order = sorted(range(len(at)), key=lambda i: len(at[i]))
    picked: list[np.ndarray] = []
    held = 0
    for i in order:
        picked.append(at[i])
        held += len(at[i])
        if held >= 4 * k:
            break
    some = np.unique(np.concatenate(picked)) if picked else np.zeros(0, np.int64)
    some = some[scores[some] > 0]
    if len(some) < k:
        return 0.0
    return float(np.partition(scores[some], len(some) - k)[len(some) - k])


def rank_all(
    terms: Sequence[str],
    idfs: Sequence[float],
    lists: dict[str, Lists],
    removed: np.ndarray,
    average: float,
    k: int,
) -> list[tuple[int, float]]:
    """The best ``k`` of every posting in ``lists`` (each term's whole list, its
    postings in any order), the chunks ``removed`` left out; ``terms`` in the query's
    order, repeats kept, with their IDFs."""
    held = sum(len(ids) for ids, _, _ in lists.values())
    if not held:
        return []
    top = max(int(ids.max()) for ids, _, _ in lists.values() if len(ids))
    dense = top < 8 * held + 4096  # a score slot per id, else per id met
    ids_of = None
    if not dense:
        ids_of = np.unique(np.concatenate([ids for ids, _, _ in lists.values()]))
    at: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for term, idf in zip(terms, idfs, strict=True):
        ids, tf, length = lists[term]
        at.append(ids.astype(np.int64) if ids_of is None else np.searchsorted(ids_of, ids))
        weights.append(shares(idf, tf, length, average))
    # One pass in the query's order: a chunk's shares are added as the SQL sum adds them.
    scores = np.bincount(
        np.concatenate(at),
        weights=np.concatenate(weights),
        minlength=top + 1 if ids_of is None else len(ids_of),
    )
    if ids_of is None:
        scores[removed[removed <= top]] = 0.0
    else:
        slot = np.searchsorted(ids_of, removed)
        inside = slot < len(ids_of)
        slot, kept = slot[inside], removed[inside]
        scores[slot[ids_of[slot] == kept]] = 0.0
    met = np.flatnonzero(scores >= least_kth(scores, at, k))
    met = met[scores[met] > 0]
    if len(met) > k:
        kth = np.partition(scores[met], len(met) - k)[len(met) - k]
        met = met[scores[met] >= kth]
    chunk_ids = met if ids_of is None else ids_of[met]
    order = np.lexsort((chunk_ids, -scores[met]))[:k]
    return [(int(chunk_ids[i]), float(scores[met[i]])) for i in order]


@dataclass
class Read:
    """What a top-k search read of one term's packed list: its first postings (best
    first) of ``size``."""

    ids: np.ndarray
    tfs: np.ndarray
    lengths: np.ndarray
    size: int

    @property
    def whole(self) -> bool:
        return len(self.ids) >= self.size

    def bound(self, weight: float, reference: float, stretch: float) -> float:
        """The largest share a posting left unread may have (0: none left)."""
        if self.whole:
            return 0.0
        last = shares(1.0, self.tfs[-1:], self.lengths[-1:], reference)
        return weight * stretch * float(last[0]) * (1 + SLACK)


@dataclass(frozen=True)
class Candidates:
    """The chunks that may be among the best k (sorted ids) and, per term, the ids of
    those whose posting of the term is still unread, if they have one."""

    ids: np.ndarray
    probes: dict[str, np.ndarray]

    @property
    def probe_count(self) -> int:
        return sum(len(v) for v in self.probes.values())


def candidates(
    weights: dict[str, float],
    reads: dict[str, Read],
    added: dict[str, Lists],
    removed: np.ndarray,
    average: float,
    reference: float,
    k: int,
) -> Candidates | None:
    """The chunks that can still be among the best ``k`` (the module's docstring), or
    None while a chunk never met may be.  ``weights``: each distinct term's IDF times
    its repeats; ``added``: the whole postings of the chunks added since the lists were
    packed (met completely when met); ``removed``: chunks left out."""
    stretch = max(1.0, average / reference)
    bounds = {t: reads[t].bound(w, reference, stretch) for t, w in weights.items()}
    unread = sum(bounds.values())
    pieces = [reads[t].ids for t in weights] + [added[t][0] for t in weights]
    ids = np.unique(np.concatenate(pieces)) if pieces else NO_IDS
    if len(ids) < k:
        return None
    partial = np.zeros(len(ids))
    seen_bounds = np.zeros(len(ids))
    seen: dict[str, np.ndarray] = {}
    complete = np.zeros(len(ids), bool)
    for t, w in weights.items():
        read = reads[t]
        slots = np.searchsorted(ids, read.ids)
        partial += np.bincount(
            slots, weights=shares(w, read.tfs, read.lengths, average), minlength=len(ids)
        )
        seen_bounds[slots] += bounds[t]
        seen[t] = slots
        more_ids, more_tfs, more_lengths = added[t]
        if len(more_ids):
            slots = np.searchsorted(ids, more_ids)
            partial += np.bincount(
                slots, weights=shares(w, more_tfs, more_lengths, average), minlength=len(ids)
            )
            complete[slots] = True  # an added chunk has no posting left unread
    gone = np.isin(ids, removed)
    partial[gone] = 0.0
    live = partial[~gone]
    if len(live) < k:
        return None
    floor = float(np.partition(live, len(live) - k)[len(live) - k]) * (1 - FLOOR_SLACK)
    if floor <= 0 or unread >= floor:
        return None
    upper = partial + np.where(complete, 0.0, unread - seen_bounds)
    keep = (upper >= floor) & ~gone
    probes: dict[str, np.ndarray] = {}
    for t in weights:
        if bounds[t] > 0:
            missing = keep & ~complete
            missing[seen[t]] = False
            probes[t] = ids[missing]
    return Candidates(ids[keep], probes)


def rank_some(
    terms: Sequence[str],
    idfs: Sequence[float],
    chosen: Candidates,
    reads: dict[str, Read],
    added: dict[str, Lists],
    found: dict[str, Lists],
    average: float,
    k: int,
) -> list[tuple[int, float]]:
    """The best ``k`` of the candidates, scored exactly: each term's postings of them
    from what was read, the added chunks' and those ``found`` by key, their shares
    added in the query's order (``terms``, repeats kept) as :func:`rank_all` adds them."""
    ids = chosen.ids
    if not len(ids):
        return []
    gathered: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for t in dict.fromkeys(terms):
        parts = [
            (reads[t].ids, reads[t].tfs, reads[t].lengths),
            added[t],
            found.get(t, (NO_IDS, NO_IDS, NO_IDS)),
        ]
        slots_parts, tf_parts, length_parts = [], [], []
        for part_ids, part_tfs, part_lengths in parts:
            if not len(part_ids):
                continue
            slot = np.searchsorted(ids, part_ids)
            slot[slot >= len(ids)] = 0
            hit = ids[slot] == part_ids
            slots_parts.append(slot[hit])
            tf_parts.append(np.asarray(part_tfs)[hit])
            length_parts.append(np.asarray(part_lengths)[hit])
        if slots_parts:
            gathered[t] = (
                np.concatenate(slots_parts),
                np.stack([np.concatenate(tf_parts), np.concatenate(length_parts)]),
            )
    at: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for t, idf in zip(terms, idfs, strict=True):
        if t in gathered:
            slots, values = gathered[t]
            at.append(slots)
            weights.append(shares(idf, values[0], values[1], average))
    if not at:
        return []
    scores = np.bincount(np.concatenate(at), weights=np.concatenate(weights), minlength=len(ids))
    met = np.flatnonzero(scores > 0)
    order = np.lexsort((ids[met], -scores[met]))[:k]
    return [(int(ids[met[i]]), float(scores[met[i]])) for i in order]
