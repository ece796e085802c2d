"""The :class:`~citeline.core.embedding.Embedder` on llama.cpp: any GGUF embedding model.

The shared machinery (loading, HF-exact tokenization, packing sequences into
decodes) is :class:`~citeline.backends.llama.encoder.LlamaEncoder`.

Threading: a ``LlamaEmbedder`` must only be used from one thread at a time.  It takes
no locks; callers that embed from several threads must serialise access themselves or
use one embedder per thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citeline.backends.llama.encoder import LlamaEncoder, LlamaModelError
from citeline.backends.llama.runtime import POOLING_NAMES, POOLING_RANK, file_identity
from citeline.core.embedding import FloatMatrix

logger = logging.getLogger(__name__)

_FINGERPRINT_VERSION = 1


class EmbeddingError(LlamaModelError):
    """An embedding model cannot be loaded or run; the message is one line."""


class LlamaEmbedder(LlamaEncoder):
    """An :class:`Embedder` running a GGUF embedding model with llama-cpp-python.

    ``max_tokens`` caps every text (after the prefix, including special tokens such as
    BERT's [CLS]/[SEP]); longer texts are truncated before embedding, keeping the
    trailing SEP/EOS token when the tokenizer adds one.  The default is the model's
    training context (at most 8192).  For all-MiniLM-L6-v2 pass 256 to mirror
    sentence-transformers.  Packing options are those of :class:`LlamaEncoder`.

    Pooling follows the model: MEAN, CLS or LAST as llama.cpp implements them; a model
    whose pooling is NONE is mean-pooled over its token embeddings here.  Rows are
    L2-normalised.  Use an instance from one thread at a time; call :meth:`close` (or
    use it as a context manager) to free the model early.
    """

    role = "embedding model"
    error = EmbeddingError
    # all-MiniLM-L6-v2 on two lanes: 4,308-4,336 -> 4,860-4,922 tokens/s, vectors equal
    # to cosine 0.9999998 (docs/performance.md, section 5).  The reranker stays exact.
    fused_attention = True

    def __init__(
        self,
        model_path: Path,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        max_tokens: int | None = None,
        n_threads: int | None = None,
        max_sequences_per_decode: int | None = None,
        decode_token_budget: int | None = None,
    ) -> None:
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        super().__init__(
            model_path,
            max_tokens=max_tokens,
            n_threads=n_threads,
            max_sequences_per_decode=max_sequences_per_decode,
            decode_token_budget=decode_token_budget,
        )
        # Which special tokens does the tokenizer add around a text?
        with_special = self._tokenize("a", add_special=True)
        without = self._tokenize("a", add_special=False)
        self._n_special = max(len(with_special) - len(without), 0)
        self._keep_last = bool(without) and with_special[-len(without) :] != without
        self._fingerprint = self._compute_fingerprint()
        logger.info(
            "loaded embedding model %s: dim %d, pooling %s, n_ctx %d, max_tokens %d, threads %d",
            self.name,
            self._width,
            POOLING_NAMES[self._pooling],
            self._n_ctx,
            self._max_tokens,
            self._n_threads,
        )

    def _check_pooling(
        self, pooling: int, arch: str, declared: str | None, causal: str | None
    ) -> None:
        if declared is None and causal != "false":
            raise EmbeddingError(
                f"{self.name} is not an embedding model "
                f"({arch} with causal attention and no pooling type)"
            )
        if pooling == POOLING_RANK:
            raise EmbeddingError(
                f"{self.name} is a reranker (rank pooling), not an embedding model"
            )

    def _output_width(self) -> int:
        llama_cpp = self._llama
        n_embd_out = getattr(llama_cpp, "llama_model_n_embd_out", llama_cpp.llama_model_n_embd)
        return int(n_embd_out(self._model))

    def _compute_fingerprint(self) -> str:
        payload = {
            "v": _FINGERPRINT_VERSION,
            "model": file_identity(self._path),
            "query_prefix": self._query_prefix,
            "document_prefix": self._document_prefix,
            "max_tokens": self._max_tokens,
            "pooling": POOLING_NAMES[self._pooling],
            "dimension": self._width,
            "normalised": True,
            "wordpiece_compat": 2 if self._wordpiece else 0,
        }
        blob = json.dumps(payload, sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:32]

    # ---------------------------------------------------------------- properties

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return self._width

    @property
    def document_token_budget(self) -> int:
        """``count_tokens`` a document may reach before its embedding is truncated."""
        prefix = self.count_tokens(self._document_prefix) if self._document_prefix else 0
        return max(self._max_tokens - self._n_special - prefix, 1)

    @property
    def pooling(self) -> str:
        """The pooling applied: ``mean``, ``cls``, ``last`` or ``none`` (mean here)."""
        return POOLING_NAMES[self._pooling]

    # ---------------------------------------------------------------- tokens

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` occupies, excluding special tokens and the prefixes.

        A document embeds without truncation when this is at most
        :attr:`document_token_budget`.
        """
        if not text:
            return 0
        return len(self._tokenize(text, add_special=False))

    def tokenize(self, text: str) -> list[int]:
        """The ids the model sees for ``text`` (special tokens added, not truncated)."""
        return self._tokenize(text, add_special=True)

    def _prepare(self, text: str) -> list[int]:
        tokens = self._tokenize(text, add_special=True)
        if len(tokens) > self._max_tokens:
            if self._keep_last:
                tokens = [*tokens[: self._max_tokens - 1], tokens[-1]]
            else:
                tokens = tokens[: self._max_tokens]
        return tokens

    # ---------------------------------------------------------------- embedding

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        """float32 (len(texts), dimension), L2-normalised rows, document prefix applied."""
        return self._embed([self._document_prefix + text for text in texts])

    def embed_query(self, text: str) -> FloatMatrix:
        """float32 (dimension,), L2-normalised, query prefix applied."""
        row: FloatMatrix = self._embed([self._query_prefix + text])[0]
        return row

    def _embed(self, texts: Sequence[str]) -> FloatMatrix:
        out = self._encode([self._prepare(text) for text in texts])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, np.maximum(norms, np.float32(1e-12)), out=out)
        return out

    # ---------------------------------------------------------------- lifetime

    def __enter__(self) -> LlamaEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LlamaEmbedder({self.name!r}, dimension={getattr(self, '_width', '?')})"
