"""A file's new state for ``replace_file`` as the index tests write it: every field
but the path, the chunks and their vectors has a plain default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from citeline.core.embedding import FloatMatrix
from citeline.core.index import FileUpdate, NewChunk, Vector


def file_update(
    path: str,
    chunks: Sequence[NewChunk],
    vectors: FloatMatrix | None = None,
    *,
    new_vectors: Mapping[str, Vector] | None = None,
    dimension: int = 3,
    kind: str = "markdown",
    title: str = "T",
    content_hash: str = "h",
    size: int = 1,
    mtime_ns: int = 1,
    error: str | None = None,
    note: str | None = None,
) -> FileUpdate:
    """``chunks`` with one row of ``vectors`` each (none: no chunks, a zero-row matrix
    of ``dimension``); ``new_vectors`` defaults to every chunk's vector."""
    matrix = vectors if vectors is not None else np.zeros((0, dimension), np.float32)
    if new_vectors is None:
        new_vectors = {c.vector_key: v for c, v in zip(chunks, matrix, strict=True)}
    return FileUpdate(
        path=path,
        kind=kind,
        title=title,
        content_hash=content_hash,
        size=size,
        mtime_ns=mtime_ns,
        chunks=chunks,
        chunk_vectors=matrix,
        new_vectors=new_vectors,
        error=error,
        note=note,
    )
