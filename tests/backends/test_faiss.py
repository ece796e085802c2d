"""FAISS as the vector index (the contract is tests/contracts/test_vector_index.py):
what is particular to it."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from citeline.backends.faiss import FaissVectorIndex


def test_it_is_an_id_mapped_exact_inner_product_index(tmp_path: Path) -> None:
    index = FaissVectorIndex.empty(4)
    vectors = np.eye(4, dtype=np.float32)
    index.add(np.array([7, 8, 9, 10], dtype=np.int64), vectors)
    index.remove([8])
    index.save(tmp_path / "v.faiss")
    raw = faiss.read_index(str(tmp_path / "v.faiss"))
    assert isinstance(raw, faiss.IndexIDMap2) and raw.ntotal == 3
    assert set(faiss.vector_to_array(raw.id_map).tolist()) == {7, 9, 10}
    assert index.search(vectors[0], 1) == [(7, 1.0)]  # exact: the same vector scores 1
