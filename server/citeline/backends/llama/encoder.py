"""Running a GGUF encoder (an embedding model or a reranker) with llama-cpp-python.

:class:`LlamaEncoder` owns what both kinds share: loading the model file, a context
sized for the model, tokenization that matches the model's own (HF) tokenizer, and
packing several sequences into one ``llama_decode`` call with distinct sequence ids.
llama.cpp evaluates a packed batch with per-sequence attention masks, so packing
changes speed, not results (see :data:`DEFAULT_DECODE_TOKEN_BUDGET`).  Each sequence
yields one pooled row: a vector for an embedding model, a relevance score for a
reranker (rank pooling).

Decodes run on one-thread contexts, *lanes* (``lanes.py``): a call with several
decodes spreads them over as many lanes as the model's share of the cores.

Threading: an encoder (its llama.cpp model, contexts and batch buffers) must only be
used from one thread at a time; its lanes' threads live only inside a call.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import numpy as np

from citeline.backends.llama import runtime
from citeline.backends.llama.batch import (
    DEFAULT_DECODE_TOKEN_BUDGET,
    PackedBatch,
    decode_shape,
    pack_decodes,
)
from citeline.backends.llama.cpu_free import BEYOND, FreeCpu, lanes_for
from citeline.backends.llama.cpu_share import CPU, ThreadLimit
from citeline.backends.llama.lanes import Lane, Lanes
from citeline.backends.llama.runtime import POOLING_NAMES, POOLING_NONE
from citeline.backends.llama.tokenizer import Tokenizer
from citeline.core.embedding import FloatMatrix
from citeline.core.errors import BackendError

logger = logging.getLogger(__name__)

#: Without a caller-supplied ``max_tokens``, sequences are cut at the model's training
#: context, but never at more than this (decoder models train on 32k+ contexts).
DEFAULT_MAX_TOKENS_CAP = 8192


class LlamaModelError(BackendError):
    """A GGUF encoder cannot be loaded or run; the message is one line."""


class LlamaEncoder:
    """A GGUF encoder model on llama-cpp-python's low-level API.

    Subclasses say what they are (:attr:`role`, :attr:`error`), which pooling they
    accept (:meth:`_check_pooling`) and how wide each pooled row is
    (:meth:`_output_width`); :meth:`_encode` turns token lists into rows.

    ``max_tokens`` caps every sequence (special tokens included); the default is the
    model's training context, at most :data:`DEFAULT_MAX_TOKENS_CAP`.  Sequences are
    packed into shared decodes while their tokens total at most
    ``decode_token_budget`` (default :data:`DEFAULT_DECODE_TOKEN_BUDGET`, capped at the
    context size) and ``max_sequences_per_decode`` (default: no limit beyond what
    llama.cpp allows); both exist for benchmarking packing strategies.
    """

    role = "model"
    error: type[LlamaModelError] = LlamaModelError
    #: llama.cpp's fused ("flash") attention, which keeps K and V in F16: faster, a
    #: little less exact (a subclass that needs exact scores leaves it off).
    fused_attention = False

    def __init__(
        self,
        model_path: Path,
        *,
        max_tokens: int | None = None,
        n_threads: int | None = None,
        max_sequences_per_decode: int | None = None,
        decode_token_budget: int | None = None,
    ) -> None:
        self._path = Path(model_path)
        self._model: Any = None
        self._lanes: Lanes[list[int]] | None = None
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, not {max_tokens}")
        if max_sequences_per_decode is not None and max_sequences_per_decode < 1:
            raise ValueError("max_sequences_per_decode must be positive")
        if decode_token_budget is not None and decode_token_budget < 1:
            raise ValueError("decode_token_budget must be positive")
        self._decode_token_budget = decode_token_budget

        llama_cpp = runtime.import_llama_cpp(self.error, f"{self.role} {self._path.name}")
        self._llama: Any = llama_cpp
        runtime.check_gguf_file(self._path, self.role, self.error)
        runtime.prepare_llama(llama_cpp)
        self._model = self._load_model()
        try:
            self._setup(max_tokens, n_threads, max_sequences_per_decode)
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- what subclasses say

    def _check_pooling(
        self, pooling: int, arch: str, declared: str | None, causal: str | None
    ) -> None:
        """Raise :attr:`error` when the model's pooling does not suit this encoder."""

    def _output_width(self) -> int:
        """Floats in each sequence's pooled row."""
        raise NotImplementedError

    # ---------------------------------------------------------------- loading

    def _load_model(self) -> Any:
        llama_cpp = self._llama
        params = llama_cpp.llama_model_default_params()
        if hasattr(params, "use_extra_bufts"):
            # Weight repacking buffers select AMX kernels on CPUs that advertise AMX;
            # on some of those machines they fault (SIGILL).  Plain buffers are safe.
            params.use_extra_bufts = False
        # Accent stripping for BERT (WPM) tokenizers happens in wordpiece_compatible, the
        # way HF does it; llama.cpp's version also deletes spacing marks.  The key only
        # affects WPM tokenizers.
        overrides = (llama_cpp.llama_model_kv_override * 2)()
        overrides[0].key = b"tokenizer.ggml.normalizer.strip_accents"
        overrides[0].tag = llama_cpp.LLAMA_KV_OVERRIDE_TYPE_BOOL
        overrides[0].value.val_bool = False
        overrides[1].key = b""
        params.kv_overrides = overrides
        runtime.clear_log()
        model = llama_cpp.llama_model_load_from_file(str(self._path).encode("utf-8"), params)
        if not model:
            raise self.error(f"cannot load {self.role} {self._path}: {runtime.last_message()}")
        return model

    def _meta(self, key: str) -> str | None:
        return runtime.model_meta(self._llama, self._model, key)

    def _setup(
        self,
        max_tokens: int | None,
        n_threads: int | None,
        max_sequences_per_decode: int | None,
    ) -> None:
        llama_cpp = self._llama
        model = self._model
        name = self._path.name

        arch = self._meta("general.architecture") or "unknown"
        declared_pooling = self._meta(f"{arch}.pooling_type")
        causal = self._meta(f"{arch}.attention.causal")

        n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(model))
        if n_ctx_train <= 0:
            raise self.error(f"{name} declares no training context length")
        if max_tokens is None:
            max_tokens = min(n_ctx_train, DEFAULT_MAX_TOKENS_CAP)
        elif max_tokens > n_ctx_train:
            logger.warning(
                "%s: max_tokens %d exceeds the training context %d; using %d",
                name,
                max_tokens,
                n_ctx_train,
                n_ctx_train,
            )
            max_tokens = n_ctx_train
        budget = self._decode_token_budget or DEFAULT_DECODE_TOKEN_BUDGET
        n_ctx, n_seq_max = decode_shape(
            max_tokens, n_ctx_train, int(llama_cpp.llama_max_parallel_sequences()), budget
        )
        self._max_group = n_seq_max
        if max_sequences_per_decode is not None:
            self._max_group = min(n_seq_max, max_sequences_per_decode)
        threads = n_threads if n_threads and n_threads > 0 else runtime.available_cpus()
        self._n_ctx = n_ctx
        self._n_seq_max = n_seq_max
        self._lanes = Lanes(self._new_lane(), self._new_lane)
        ctx = self._lanes.first.ctx

        pooling = int(llama_cpp.llama_pooling_type(ctx))
        if pooling not in POOLING_NAMES:
            raise self.error(f"{name} uses unknown pooling type {pooling}")
        self._check_pooling(pooling, arch, declared_pooling, causal)
        self._pooling = pooling
        width = self._output_width()
        if width <= 0:
            raise self.error(f"{name} reports output size {width}")
        self._width = width
        self._budget = min(budget, n_ctx)
        self._max_tokens = max_tokens
        self._n_threads = threads
        # the model's share of the cores is the number of lanes a call may use
        self._thread_limit = ThreadLimit(self, threads, lambda n: None)
        # ... and, per batch, the cores other processes leave free (cpu_free.py)
        self._free_cpu = FreeCpu()
        self._cores = runtime.available_cpus()
        self._lanes_beyond = BEYOND  # benchmarks/ingest.py --lanes-beyond compares others
        self._last_lanes = 1

        self._tokenizer = Tokenizer(llama_cpp, model)
        self._vocab = self._tokenizer.vocab
        self._wordpiece = self._tokenizer.wordpiece

    def _new_lane(self) -> Lane:
        """A one-thread context of the model, with its own batch buffers."""
        llama_cpp = self._llama
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = self._n_ctx
        params.n_batch = self._n_ctx
        params.n_ubatch = self._n_ctx
        params.n_seq_max = self._n_seq_max
        params.n_threads = 1
        params.n_threads_batch = 1
        params.embeddings = True
        params.kv_unified = True
        params.no_perf = True
        params.flash_attn_type = (
            llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if self.fused_attention
            else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        runtime.clear_log()
        ctx = llama_cpp.llama_init_from_model(self._model, params)
        if not ctx:
            raise self.error(f"cannot create a context for {self.name}: {runtime.last_message()}")
        batch = PackedBatch(llama_cpp, self._n_ctx, self._n_seq_max)
        return Lane(ctx, llama_cpp.llama_get_memory(ctx), batch)

    # ---------------------------------------------------------------- properties

    @property
    def name(self) -> str:
        return self._path.name

    @property
    def max_tokens(self) -> int:
        """Tokens a sequence may use (special tokens included) before truncation."""
        return self._max_tokens

    @property
    def context_size(self) -> int:
        """Tokens evaluated per decode at most."""
        return self._n_ctx

    @property
    def threads(self) -> int:
        """Threads (lanes) the last call could use (fewer while another model computes)."""
        return self._thread_limit.current

    @property
    def last_lanes(self) -> int:
        """Lanes the last call ran on (chosen by the cores free at its start)."""
        return self._last_lanes

    # ---------------------------------------------------------------- tokens

    def _tokenize(self, text: str, *, add_special: bool) -> list[int]:
        """Token ids as the model's own (HF) tokenizer would produce them."""
        if self._model is None:
            raise self.error(f"{self.role} {self.name} is closed")
        tokens = self._tokenizer.tokenize(text, add_special=add_special)
        if tokens is None:
            raise self.error(f"{self.name}: tokenization failed")
        return tokens

    # ---------------------------------------------------------------- encoding

    def _encode(self, token_lists: list[list[int]]) -> FloatMatrix:
        """One pooled row per token list (each at most ``max_tokens`` long)."""
        lanes = self._lanes
        if lanes is None or self._model is None:
            raise self.error(f"{self.role} {self.name} is closed")
        out = np.empty((len(token_lists), self._width), dtype=np.float32)
        token_lists = [tokens or [self._tokenizer.fallback_token] for tokens in token_lists]
        groups = pack_decodes([len(t) for t in token_lists], self._budget, self._max_group)
        with CPU.busy(self):
            self._thread_limit.fit()  # this model's share of the cores
            count = self._thread_limit.current
            if len(groups) > 1 and count > 1:  # a query is one decode: nothing to decide
                others = self._free_cpu.others()
                if others is not None:
                    count = lanes_for(count, self._cores, others, beyond=self._lanes_beyond)
            self._last_lanes = lanes.run(
                groups,
                count,
                lambda lane, group: self._decode(lane, group, token_lists, out),
            )
        return out

    def _decode(
        self, lane: Lane, group: list[int], token_lists: list[list[int]], out: FloatMatrix
    ) -> None:
        llama_cpp = self._llama
        sizes = lane.batch.fill([token_lists[i] for i in group])
        n = sum(sizes)

        if lane.memory is not None:
            llama_cpp.llama_memory_clear(lane.memory, True)
        runtime.clear_log()
        status = int(llama_cpp.llama_decode(lane.ctx, lane.batch.batch))
        if status != 0:
            raise self.error(
                f"{self.name}: llama_decode failed with status {status}: {runtime.last_message()}"
            )

        if self._pooling == POOLING_NONE:
            ptr = llama_cpp.llama_get_embeddings(lane.ctx)
            if not ptr:
                raise self.error(f"{self.name}: llama.cpp returned no token embeddings")
            tokens = np.ctypeslib.as_array(ptr, shape=(n, self._width))
            start = 0
            for index, size in zip(group, sizes, strict=True):
                out[index] = tokens[start : start + size].mean(axis=0)
                start += size
            return
        for seq, index in enumerate(group):
            ptr = llama_cpp.llama_get_embeddings_seq(lane.ctx, seq)
            if not ptr:
                raise self.error(f"{self.name}: llama.cpp returned no output")
            out[index] = np.ctypeslib.as_array(ptr, shape=(self._width,))

    # ---------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Free the llama.cpp contexts and model; the encoder is unusable afterwards."""
        llama_cpp = getattr(self, "_llama", None)
        if llama_cpp is None:
            return
        lanes, self._lanes = getattr(self, "_lanes", None), None
        model, self._model = self._model, None
        if lanes is not None:
            lanes.close(llama_cpp.llama_free)
        if model is not None:
            llama_cpp.llama_model_free(model)

    def __del__(self) -> None:
        # At interpreter shutdown ctypes or llama_cpp may already be torn down.
        with contextlib.suppress(Exception):
            self.close()
