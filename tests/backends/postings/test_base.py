"""The postings base: terms parsed as FTS5 folds them, postings grouped by term in id
order, written and memory-mapped."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from citeline.backends.postings import base as bases
from citeline.backends.postings.base import Row, term_hash
from keyword_reference import corpus_terms

ARRAYS = ("ids", "lengths", "hashes", "starts", "rows", "tfs")


def test_a_row_counts_folded_terms_once() -> None:
    row = Row.parse("café cafe tea cafe")
    assert row.length == 4
    assert dict(zip(row.hashes.tolist(), row.tfs.tolist(), strict=True)) == {
        term_hash("cafe"): 3,
        term_hash("tea"): 1,
    }
    assert Row.parse("").length == 0 and len(Row.parse("").hashes) == 0
    assert Row.parse(" ".join(["x"] * 70_000)).tfs.tolist() == [bases.TF_MAX]


def test_postings_are_grouped_by_term_in_id_order_and_survive_a_round_trip(
    tmp_path: Path,
) -> None:
    rows = {30: Row.parse("b a a"), 10: Row.parse("a"), 20: Row.parse("c b")}
    built = bases.build(
        list(rows),
        [r.length for r in rows.values()],
        [len(r.hashes) for r in rows.values()],
        np.concatenate([r.hashes for r in rows.values()]),
        np.concatenate([r.tfs for r in rows.values()]),
    )
    bases.write(built, tmp_path, "p")
    for base in (built, bases.read(tmp_path, "p")):
        assert base.ids.tolist() == [10, 20, 30] and base.lengths.tolist() == [1, 2, 3]
        positions, tfs = base.postings(term_hash("a"))
        assert positions.tolist() == [0, 2] and tfs.tolist() == [1, 2]
        assert base.postings(term_hash("b"))[0].tolist() == [1, 2]
        assert len(base.postings(term_hash("absent"))[0]) == 0
        assert base.positions(np.asarray([20, 25, 99], dtype=np.int64)).tolist() == [1, -1, -1]
    assert len(bases.empty()) == 0 and len(bases.empty().postings(term_hash("a"))[0]) == 0


def _built_at_once(rows: dict[int, Row]) -> bases.Base:
    return bases.build(
        list(rows),
        [r.length for r in rows.values()],
        [len(r.hashes) for r in rows.values()],
        np.concatenate([np.zeros(0, np.uint64), *(r.hashes for r in rows.values())]),
        np.concatenate([np.zeros(0, np.uint16), *(r.tfs for r in rows.values())]),
    )


@pytest.mark.parametrize("block", [1, 700, bases.MERGE_BLOCK])
def test_a_base_merged_a_block_at_a_time_equals_the_one_built_at_once(
    tmp_path: Path, block: int
) -> None:
    """On the real corpora's chunks: a base of 60 % of them, a tenth of those removed
    (some added again), the rest added, ids interleaved; merged into files a range of
    terms at a time, it is the base built at once of the live rows, array for array."""
    corpus = [Row.parse(terms) for terms in corpus_terms()]
    rng = random.Random(3)
    ids = rng.sample(range(1, 10 * len(corpus)), len(corpus))
    split = 6 * len(corpus) // 10
    old = dict(zip(ids[:split], corpus[:split], strict=True))
    base = _built_at_once(old)
    gone = set(rng.sample(sorted(old), len(old) // 10))
    dead = np.isin(base.ids, np.fromiter(gone, np.int64))
    added = dict(zip(ids[split:], corpus[split:], strict=True))
    for again in sorted(gone)[:20]:  # removed, then added with new terms
        added[again] = corpus[rng.randrange(len(corpus))]
    live = {i: r for i, r in old.items() if i not in gone} | added
    assert bases.write_merged(base, dead, added, tmp_path, "m", block=block) == len(live)
    merged, want = bases.read(tmp_path, "m"), _built_at_once(live)
    for name in ARRAYS:
        got, expected = getattr(merged, name), getattr(want, name)
        assert got.dtype == expected.dtype, name
        assert np.array_equal(got, expected), name
    assert len(merged.hashes) > 5000 and len(merged.rows) > 100_000  # a real vocabulary


def test_a_merge_of_nothing_but_added_rows_or_of_nothing_left(tmp_path: Path) -> None:
    rows = {i + 1: Row.parse(t) for i, t in enumerate(corpus_terms()[:300])}
    assert bases.write_merged(bases.empty(), np.zeros(0, bool), rows, tmp_path, "a") == 300
    first = bases.read(tmp_path, "a")
    want = _built_at_once(rows)
    assert all(np.array_equal(getattr(first, n), getattr(want, n)) for n in ARRAYS)
    everything_dead = np.ones(len(first), dtype=bool)
    assert bases.write_merged(first, everything_dead, {}, tmp_path, "b") == 0
    assert not list(tmp_path.glob("b.*"))
