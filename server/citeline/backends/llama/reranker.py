"""The :class:`~citeline.core.reranking.Reranker` on llama.cpp: a GGUF cross-encoder.

:class:`LlamaReranker` runs any GGUF that llama.cpp loads with rank pooling: BERT and
XLM-RoBERTa cross-encoders (bge-reranker, jina-reranker, ms-marco MiniLM) and
decoder rerankers that carry a ``rerank`` prompt template (Qwen3-Reranker).

How a (question, passage) pair becomes tokens:

* a model with a ``tokenizer.chat_template.rerank`` template: the template with
  ``{query}`` and ``{document}`` filled in;
* a BERT (WordPiece) model: ``[CLS] question [SEP] passage [SEP]``, the pair encoding
  of HF tokenizers.  llama.cpp's BERT graph adds the first segment's token-type
  embedding to every token, so the passage is read as segment A too;
* any other model: llama.cpp's own convention, ``BOS question EOS SEP passage EOS``
  with each special token only where the vocabulary asks for it.

Pairs longer than ``max_tokens`` lose the end of the passage, and a question that
needs more than half the budget loses its end too.  Use an instance from one thread at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from citeline.backends.llama.encoder import LlamaEncoder, LlamaModelError
from citeline.backends.llama.runtime import POOLING_NAMES, POOLING_RANK
from citeline.core.reranking import Scores

log = logging.getLogger(__name__)

#: Without ``max_tokens``, pairs are cut here (or at the model's training context if
#: smaller): a question and one chunk of the default size take about 300 tokens.
DEFAULT_PAIR_TOKENS = 512
_TEMPLATE_KEY = "tokenizer.chat_template.rerank"


class RerankError(LlamaModelError):
    """A reranker cannot be loaded or run; the message is one line."""


class LlamaReranker(LlamaEncoder):
    """A :class:`Reranker` running a GGUF reranker (rank pooling) with llama-cpp-python."""

    role = "reranker"
    error = RerankError

    def __init__(
        self,
        model_path: Path,
        *,
        max_tokens: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        super().__init__(
            model_path, max_tokens=max_tokens or DEFAULT_PAIR_TOKENS, n_threads=n_threads
        )
        vocab, llama_cpp = self._vocab, self._llama
        template = self._meta(_TEMPLATE_KEY)
        if template is not None and not _query_then_document(template):
            log.warning(
                "%s: ignoring a rerank template without {query} before {document}", self.name
            )
            template = None
        self._template = template
        self._bos = int(llama_cpp.llama_vocab_bos(vocab))
        self._eos = int(llama_cpp.llama_vocab_eos(vocab))
        self._sep = int(llama_cpp.llama_vocab_sep(vocab))
        if self._eos < 0:
            self._eos = self._sep
        self._add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
        self._add_eos = bool(llama_cpp.llama_vocab_get_add_eos(vocab))
        self._add_sep = bool(llama_cpp.llama_vocab_get_add_sep(vocab))
        if self._wordpiece and (self._bos < 0 or self._sep < 0):
            raise RerankError(f"{self.name}: BERT vocabulary lacks [CLS] or [SEP]")
        log.info(
            "loaded reranker %s: %s, n_ctx %d, max_tokens %d, threads %d",
            self.name,
            "template" if self._template else "pair encoding",
            self._n_ctx,
            self._max_tokens,
            self._n_threads,
        )

    def _check_pooling(
        self, pooling: int, arch: str, declared: str | None, causal: str | None
    ) -> None:
        if pooling != POOLING_RANK:
            raise RerankError(
                f"{self.name} is not a reranker: llama.cpp pools it as "
                f"'{POOLING_NAMES.get(pooling, pooling)}', a reranker needs 'rank'"
            )

    def _output_width(self) -> int:
        n_cls_out = getattr(self._llama, "llama_model_n_cls_out", None)
        width = int(n_cls_out(self._model)) if n_cls_out is not None else 1
        return max(width, 1)

    # ---------------------------------------------------------------- pairs

    def pair_tokens(self, query: str, passage: str) -> list[int]:
        """The ids the model reads for one (question, passage) pair, truncated."""
        if self._template:
            return self._template_tokens(query, passage)
        q = self._tokenize(query, add_special=False)
        d = self._tokenize(passage, add_special=False)
        if self._wordpiece:
            head, middle, tail = [self._bos], [self._sep], [self._sep]
        else:
            head = [self._bos] if self._add_bos and self._bos >= 0 else []
            eos = [self._eos] if self._add_eos and self._eos >= 0 else []
            middle = eos + ([self._sep] if self._add_sep and self._sep >= 0 else [])
            tail = eos
        return self._fit(head, q, middle, d, tail)

    def _template_tokens(self, query: str, passage: str) -> list[int]:
        before_query, _, rest = (self._template or "").partition("{query}")
        between, _, after = rest.partition("{document}")
        return self._fit(
            self._special_text(before_query),
            self._tokenize(query, add_special=False),
            self._special_text(between),
            self._tokenize(passage, add_special=False),
            self._special_text(after),
        )

    def _special_text(self, text: str) -> list[int]:
        return self._tokenize(text, add_special=False) if text else []

    def _fit(
        self, head: list[int], q: list[int], middle: list[int], d: list[int], tail: list[int]
    ) -> list[int]:
        """head + q + middle + d + tail in at most ``max_tokens``.

        The passage is cut first; the question only when it needs more than half.
        """
        room = self._max_tokens - len(head) - len(middle) - len(tail)
        if len(q) + len(d) > room:
            q = q[: max(room - len(d), room // 2, 1)]
        d = d[: max(room - len(q), 0)]
        return [*head, *q, *middle, *d, *tail]

    # ---------------------------------------------------------------- scoring

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        """float32 (len(passages),): the model's relevance score for each passage."""
        if not passages:
            return np.empty(0, dtype=np.float32)
        rows = self._encode([self.pair_tokens(query, passage) for passage in passages])
        scores: Scores = rows[:, 0].copy()
        return scores

    def __repr__(self) -> str:
        return f"LlamaReranker({self.name!r})"


def _query_then_document(template: str) -> bool:
    query, document = template.find("{query}"), template.find("{document}")
    return 0 <= query < document
