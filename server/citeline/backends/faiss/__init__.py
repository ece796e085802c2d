"""The vector index on FAISS: ``kinds`` (flat, ivf-sq8, hnsw: which one a size calls
for, and a base written once and memory-mapped) and ``index`` (the
:class:`~citeline.core.vectors.VectorIndex`: a base plus a log of changes)."""

from citeline.backends.faiss.index import FaissVectorIndex, FaissVectorIndexType
from citeline.backends.faiss.kinds import CHOICES, wanted_kind

__all__ = ["CHOICES", "FaissVectorIndex", "FaissVectorIndexType", "wanted_kind"]
