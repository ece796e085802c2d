"""The postings base: terms parsed as FTS5 folds them, postings grouped by term in id
order, written and memory-mapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from citeline.backends.postings import base as bases
from citeline.backends.postings.base import Row, term_hash


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
