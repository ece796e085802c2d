"""Simple in-memory implementations of the core's protocols, for the contract tests.

Each is the smallest honest implementation of its protocol (exact numpy search,
BM25 by FTS5's formula in plain Python, hashed bag-of-words vectors, a scripted
chat model, word-overlap reranking): the contract tests run them beside the real
backends, so a contract that only one implementation happens to meet shows up.
They are also the starting point for a new backend.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from citeline.core.embedding import FloatMatrix
from citeline.core.vectors import IdArray

WORD = re.compile(r"\w+")


class MemoryVectorIndex:
    """Exact cosine search over a dict of vectors; saved with numpy."""

    def __init__(self, dimension: int) -> None:
        self._dimension = dimension
        self._vectors: dict[int, FloatMatrix] = {}

    @classmethod
    def empty(cls, dimension: int) -> MemoryVectorIndex:
        return cls(dimension)

    @classmethod
    def load(cls, path: Path, dimension: int) -> MemoryVectorIndex:
        with open(path, "rb") as handle:  # OSError when missing
            try:
                data = np.load(handle)
                ids, vectors = data["ids"], data["vectors"]
            except (OSError, KeyError, EOFError) as exc:
                raise ValueError(f"unreadable vector index {path}: {exc}") from exc
        if vectors.shape[1:] != (dimension,):
            raise ValueError(f"vector index {path} has another dimension")
        index = cls(dimension)
        index.add(ids, vectors)
        return index

    @property
    def dimension(self) -> int:
        return self._dimension

    def __len__(self) -> int:
        return len(self._vectors)

    def add(self, ids: IdArray, vectors: FloatMatrix) -> None:
        for chunk_id, vector in zip(ids, vectors, strict=True):
            self._vectors[int(chunk_id)] = np.asarray(vector, dtype=np.float32)

    def remove(self, ids: Sequence[int]) -> None:
        for chunk_id in ids:
            self._vectors.pop(int(chunk_id), None)

    def search(self, query: FloatMatrix, k: int) -> list[tuple[int, float]]:
        scored = [(i, float(np.dot(v, query.reshape(-1)))) for i, v in self._vectors.items()]
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[: max(k, 0)]

    def similarity(self, query: FloatMatrix, ids: Sequence[int]) -> dict[int, float]:
        return {
            i: float(np.dot(self._vectors[i], query.reshape(-1))) for i in ids if i in self._vectors
        }

    def save(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as handle:
            ids = np.fromiter(self._vectors, dtype=np.int64, count=len(self._vectors))
            vectors = np.stack(list(self._vectors.values())) if self._vectors else None
            if vectors is None:
                vectors = np.zeros((0, self._dimension), np.float32)
            np.savez(handle, ids=ids, vectors=vectors)
        os.replace(tmp, path)


class MemoryKeywordIndex:
    """BM25 with SQLite FTS5's constants and formula, in plain Python."""

    K1 = 1.2
    B = 0.75

    def __init__(self) -> None:
        self._terms: dict[int, Counter[str]] = {}
        self._lengths: dict[int, int] = {}

    def add(self, chunk_id: int, terms: str) -> None:
        words = terms.split()
        self._terms[chunk_id] = Counter(words)
        self._lengths[chunk_id] = len(words)

    def remove(self, ids: Sequence[int]) -> None:
        for chunk_id in ids:
            self._terms.pop(chunk_id, None)
            self._lengths.pop(chunk_id, None)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        frequencies = {t: sum(1 for c in self._terms.values() if t in c) for t in terms}
        return len(self._terms), {t: n for t, n in frequencies.items() if n}

    def search(self, terms: Sequence[str], k: int) -> list[tuple[int, float]]:
        if not terms or k <= 0 or not self._terms:
            return []
        total, frequencies = self.document_frequencies(terms)
        average = sum(self._lengths.values()) / total
        scored = []
        for chunk_id, counts in self._terms.items():
            if not any(t in counts for t in terms):
                continue
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                n = frequencies.get(term, 0)
                idf = math.log((total - n + 0.5) / (n + 0.5))
                idf = idf if idf > 0 else 1e-6
                norm = self.K1 * (1 - self.B + self.B * self._lengths[chunk_id] / average)
                score += idf * tf * (self.K1 + 1) / (tf + norm)
            scored.append((chunk_id, score))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:k]


class HashingEmbedder:
    """Hashed bag-of-words vectors: equal words, equal directions."""

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension

    @property
    def name(self) -> str:
        return "hashing"

    @property
    def fingerprint(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _word(self, word: str) -> FloatMatrix:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self._dimension).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        out = np.zeros((len(texts), self._dimension), np.float32)
        for i, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                out[i] += self._word(word)
            out[i] /= float(np.linalg.norm(out[i])) or 1.0
        return out

    def embed_query(self, text: str) -> FloatMatrix:
        row: FloatMatrix = self.embed_documents([text])[0]
        return row

    def count_tokens(self, text: str) -> int:
        return len(WORD.findall(text))


class OverlapReranker:
    """Scores a passage by the share of the question's words it contains."""

    @property
    def name(self) -> str:
        return "overlap"

    def score(self, query: str, passages: Sequence[str]) -> FloatMatrix:
        wanted = set(WORD.findall(query.lower()))
        return np.array(
            [len(wanted & set(WORD.findall(p.lower()))) / max(len(wanted), 1) for p in passages],
            dtype=np.float32,
        )


class ScriptedGenerator:
    """Streams a fixed reply word by word; a token is a word."""

    def __init__(self, reply: str = "The index lives in the .citeline folder [1].") -> None:
        self.reply = reply

    @property
    def name(self) -> str:
        return "scripted"

    @property
    def context_size(self) -> int:
        return 2048

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def stream_chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        should_stop: Callable[[], bool],
    ) -> Iterator[str]:
        for i, word in enumerate(self.reply.split()[:max_tokens]):
            if should_stop():
                return
            yield word if i == 0 else " " + word
