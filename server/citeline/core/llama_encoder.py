"""Running a GGUF encoder (an embedding model or a reranker) with llama-cpp-python.

:class:`LlamaEncoder` owns what both kinds share: loading the model file, a context
sized for the model, tokenization that matches the model's own (HF) tokenizer, and
packing several sequences into one ``llama_decode`` call with distinct sequence ids.
llama.cpp evaluates a packed batch with per-sequence attention masks, so packing
changes speed, not results (see :data:`DEFAULT_DECODE_TOKEN_BUDGET`).  Each sequence
yields one pooled row: a vector for an embedding model, a relevance score for a
reranker (rank pooling).

Threading: an encoder (its llama.cpp model, context and batch buffers) must only be
used from one thread at a time.  It takes no locks.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import logging
import os
import re
import threading
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.core.cpu_share import CPU, ThreadLimit

logger = logging.getLogger(__name__)

FloatMatrix = npt.NDArray[np.float32]

# llama.cpp enum values (llama.h, ggml.h); kept here so this module imports without llama_cpp.
POOLING_NONE = 0
POOLING_MEAN = 1
POOLING_CLS = 2
POOLING_LAST = 3
POOLING_RANK = 4
POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}
_LOG_LEVEL_WARN = 3
_LOG_LEVEL_ERROR = 4
_LOG_LEVEL_CONT = 5

#: Without a caller-supplied ``max_tokens``, sequences are cut at the model's training
#: context, but never at more than this (decoder models train on 32k+ contexts).
DEFAULT_MAX_TOKENS_CAP = 8192
#: The context (and micro-batch) is at least this, or the training context if smaller;
#: MiniLM measured fastest with the context at its training length.
MIN_CONTEXT = 512
#: Sequences share a decode while their tokens total at most this; a longer sequence
#: gets a decode of its own.  llama.cpp attends over the whole packed micro-batch
#: (masking the other sequences out), so packing trades per-decode overhead for
#: quadratic attention work.  Measured with all-MiniLM-L6-v2 on 2 cores: packing up to
#: 512 tokens ran at 0.45-0.7x the speed of this budget, both for ~150-token chunks
#: and ~14-token texts.
DEFAULT_DECODE_TOKEN_BUDGET = 64
_MiB = 1 << 20


class LlamaModelError(Exception):
    """A GGUF encoder cannot be loaded or run; the message is one line."""


# --------------------------------------------------------------------------------------
# WordPiece (BERT) input compatibility
# --------------------------------------------------------------------------------------

# HF's WordPiece turns any word longer than this (in characters) into [UNK].
_WORDPIECE_MAX_WORD_CHARS = 100
_LONG_RUN = re.compile(rf"\S{{{_WORDPIECE_MAX_WORD_CHARS + 1},}}")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_KEEP_CONTROLS = frozenset("\t\n\r")
# HF's clean_text deletes control, format, private-use (and surrogate) characters;
# unassigned code points (Cn) stay and become [UNK].
_REMOVED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})


def _is_bert_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_bert_chinese_char(code: int) -> bool:
    """HF BasicTokenizer's ``_is_chinese_char``, code point for code point.

    Deliberately not ``citeline.core.scripts``: WordPiece ids must match HF's, so this
    follows HF's definition (CJK Unified Ideographs and extensions only; kana and
    Hangul are not split per character), whatever Citeline's own script rules are.
    """
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B920 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _unk_long_words(run: str, unk: str) -> str:
    """Replace each BERT word of ``run`` (no whitespace) longer than 100 chars by ``unk``."""
    parts: list[str] = []
    word: list[str] = []
    length = 0

    def flush() -> None:
        nonlocal length
        if word:
            too_long = length > _WORDPIECE_MAX_WORD_CHARS
            parts.append(f" {unk} " if too_long else "".join(word))
            word.clear()
            length = 0

    for char in run:
        if _is_bert_punctuation(char) or _is_bert_chinese_char(ord(char)):
            flush()
            parts.append(char)
        else:
            word.append(char)
            length += 1
    flush()
    return "".join(parts)


def wordpiece_compatible(text: str, *, strip_accents: bool, unk: str = "[UNK]") -> str:
    """Rewrite ``text`` so llama.cpp's WPM tokenizer produces HF BertTokenizer's ids.

    This applies the parts of HF's BertNormalizer and WordPiece that llama.cpp gets
    wrong: deleting control, format and private-use characters (llama.cpp treats some
    as spaces); with ``strip_accents``, NFD then deleting nonspacing marks (Mn) only
    (llama.cpp's NFD leaves Hangul syllables whole, and it also deletes spacing and
    enclosing marks such as Devanagari vowel signs); and mapping words longer than 100
    characters to [UNK] (llama.cpp splits them).  Lowercasing, punctuation and CJK
    splitting are left to llama.cpp, which matches HF there.  The embedder loads BERT
    models with llama.cpp's own accent stripping switched off, since it is done here.
    """
    if text.isascii():
        text = _ASCII_CONTROL.sub("", text)
    else:
        if strip_accents:
            text = unicodedata.normalize("NFD", text)
        removed = _REMOVED_CATEGORIES | {"Mn"} if strip_accents else _REMOVED_CATEGORIES
        text = "".join(
            char
            for char in text
            if char in _KEEP_CONTROLS
            or (unicodedata.category(char) not in removed and char != "\ufffd")
        )
    if _LONG_RUN.search(text):
        text = _LONG_RUN.sub(lambda match: _unk_long_words(match.group(0), unk), text)
    return text


# --------------------------------------------------------------------------------------
# llama.cpp logging: silence stderr, keep recent warnings/errors for error messages
# --------------------------------------------------------------------------------------

_log_lock = threading.Lock()
_log_callback: Any = None  # the ctypes callback; referenced here so it is never freed
_recent_log: collections.deque[str] = collections.deque(maxlen=32)
_backend_ready = False


def _on_llama_log(level: int, text: bytes | None, _user_data: Any) -> None:
    if not text:
        return
    message = text.decode("utf-8", errors="replace")
    if level == _LOG_LEVEL_CONT:
        if _recent_log:
            _recent_log[-1] += message
        return
    if level in (_LOG_LEVEL_WARN, _LOG_LEVEL_ERROR):
        _recent_log.append(message)


def prepare_llama(llama_cpp: Any) -> None:
    """Silence llama.cpp's C-level logging and initialise its backend, once."""
    global _log_callback, _backend_ready
    with _log_lock:
        if _log_callback is None:
            _log_callback = llama_cpp.llama_log_callback(_on_llama_log)
            llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True


def _last_llama_message() -> str:
    for message in reversed(_recent_log):
        line = " ".join(message.split())
        if line:
            return line
    return "no details from llama.cpp"


# --------------------------------------------------------------------------------------
# The encoder
# --------------------------------------------------------------------------------------


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
        self._ctx: Any = None
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, not {max_tokens}")
        if max_sequences_per_decode is not None and max_sequences_per_decode < 1:
            raise ValueError("max_sequences_per_decode must be positive")
        if decode_token_budget is not None and decode_token_budget < 1:
            raise ValueError("decode_token_budget must be positive")
        self._decode_token_budget = decode_token_budget

        llama_cpp = self._import_llama_cpp()
        self._llama: Any = llama_cpp
        self._check_file()
        prepare_llama(llama_cpp)
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

    def _import_llama_cpp(self) -> Any:
        try:
            import llama_cpp
        except Exception as exc:  # ImportError, or OSError from loading the shared library
            raise self.error(
                f"cannot load {self.role} {self._path.name}: "
                f"llama-cpp-python is unavailable ({exc})"
            ) from exc
        return llama_cpp

    def _check_file(self) -> None:
        path, role = self._path, self.role
        try:
            with open(path, "rb") as handle:
                magic = handle.read(4)
        except FileNotFoundError as exc:
            raise self.error(f"{role} {path} does not exist") from exc
        except IsADirectoryError as exc:
            raise self.error(f"{role} {path} is a directory, not a file") from exc
        except OSError as exc:
            raise self.error(f"cannot read {role} {path}: {exc}") from exc
        if magic != b"GGUF":
            raise self.error(f"{role} {path} is not a GGUF file")

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
        _recent_log.clear()
        model = llama_cpp.llama_model_load_from_file(str(self._path).encode("utf-8"), params)
        if not model:
            raise self.error(f"cannot load {self.role} {self._path}: {_last_llama_message()}")
        return model

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(256)
        n = int(self._llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf)))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", errors="replace")

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
        # Each sequence must fit one micro-batch (non-causal attention needs the whole
        # sequence at once); a context at the training length measured fastest.
        n_ctx = max(max_tokens, min(n_ctx_train, MIN_CONTEXT))
        n_ctx = -(-n_ctx // 64) * 64
        # llama.cpp aborts (GGML_ASSERT in its mean-pooling graph) when n_seq_max does
        # not divide the micro-batch size, so take the largest divisor of n_ctx.
        cap = min(n_ctx, int(llama_cpp.llama_max_parallel_sequences()))
        n_seq_max = max(d for d in range(1, cap + 1) if n_ctx % d == 0)
        self._max_group = n_seq_max
        if max_sequences_per_decode is not None:
            self._max_group = min(n_seq_max, max_sequences_per_decode)
        threads = n_threads if n_threads and n_threads > 0 else _available_cpus()

        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_ctx
        params.n_ubatch = n_ctx
        params.n_seq_max = n_seq_max
        params.n_threads = threads
        params.n_threads_batch = threads
        params.embeddings = True
        params.kv_unified = True
        params.no_perf = True
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        _recent_log.clear()
        ctx = llama_cpp.llama_init_from_model(model, params)
        if not ctx:
            raise self.error(f"cannot create a context for {name}: {_last_llama_message()}")
        self._ctx = ctx

        pooling = int(llama_cpp.llama_pooling_type(ctx))
        if pooling not in POOLING_NAMES:
            raise self.error(f"{name} uses unknown pooling type {pooling}")
        self._check_pooling(pooling, arch, declared_pooling, causal)
        self._pooling = pooling
        width = self._output_width()
        if width <= 0:
            raise self.error(f"{name} reports output size {width}")
        self._width = width
        self._memory = llama_cpp.llama_get_memory(ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._n_ctx = n_ctx
        budget = self._decode_token_budget or DEFAULT_DECODE_TOKEN_BUDGET
        self._budget = min(budget, n_ctx)
        self._n_seq_max = n_seq_max
        self._max_tokens = max_tokens
        self._n_threads = threads
        self._thread_limit = ThreadLimit(
            self, threads, lambda n: llama_cpp.llama_set_n_threads(ctx, n, n)
        )

        # llama.cpp's BERT tokenizer needs its input adjusted to match HF's exactly.
        self._wordpiece = self._meta("tokenizer.ggml.model") == "bert"
        lowercase = self._meta("tokenizer.ggml.normalizer.lowercase") != "false"
        strip = self._meta("tokenizer.ggml.normalizer.strip_accents")
        self._strip_accents = lowercase if strip is None else strip == "true"
        unk_id = int(self._meta("tokenizer.ggml.unknown_token_id") or 100)
        n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        unk_text = llama_cpp.llama_vocab_get_text(self._vocab, unk_id) if unk_id < n_vocab else b""
        self._unk_text = (unk_text or b"[UNK]").decode("utf-8", errors="replace")

        fallback = int(llama_cpp.llama_vocab_bos(self._vocab))
        if fallback < 0:
            fallback = int(llama_cpp.llama_vocab_eos(self._vocab))
        self._fallback_token = max(fallback, 0)
        self._init_batch()

    def _init_batch(self) -> None:
        """A llama_batch over numpy buffers owned by this object (never llama_batch_free)."""
        llama_cpp = self._llama
        n = self._n_ctx
        self._tokens_buf = np.zeros(n, dtype=np.int32)
        self._pos_buf = np.zeros(n, dtype=np.int32)
        self._n_seq_id_buf = np.ones(n, dtype=np.int32)
        self._logits_buf = np.ones(n, dtype=np.int8)  # every token is an output
        self._seq_ids = np.arange(self._n_seq_max, dtype=np.int32)
        self._seq_id_ptrs = np.zeros(n, dtype=np.uintp)
        self._seq_ids_base = int(self._seq_ids.ctypes.data)
        batch = llama_cpp.llama_batch()
        batch.n_tokens = 0
        batch.token = self._tokens_buf.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token))
        batch.embd = None
        batch.pos = self._pos_buf.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_pos))
        batch.n_seq_id = self._n_seq_id_buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        batch.seq_id = self._seq_id_ptrs.ctypes.data_as(
            ctypes.POINTER(ctypes.POINTER(llama_cpp.llama_seq_id))
        )
        batch.logits = self._logits_buf.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))
        self._batch = batch

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
        """Threads the last decode used (fewer while another model computes too)."""
        return self._thread_limit.current

    # ---------------------------------------------------------------- tokens

    def _tokenize(self, text: str, *, add_special: bool) -> list[int]:
        """Token ids as the model's own (HF) tokenizer would produce them.

        Special-token text such as ``[SEP]`` in the input is parsed as that token, as
        sentence-transformers does.
        """
        if self._model is None:
            raise self.error(f"{self.role} {self.name} is closed")
        llama_cpp = self._llama
        if self._wordpiece:
            text = wordpiece_compatible(text, strip_accents=self._strip_accents, unk=self._unk_text)
        data = text.encode("utf-8", errors="replace")
        capacity = len(data) + 16
        buf = (llama_cpp.llama_token * capacity)()
        tokenize = llama_cpp.llama_tokenize
        n = int(tokenize(self._vocab, data, len(data), buf, capacity, add_special, True))
        if n < 0:
            capacity = -n
            buf = (llama_cpp.llama_token * capacity)()
            n = int(tokenize(self._vocab, data, len(data), buf, capacity, add_special, True))
            if n < 0:
                raise self.error(f"{self.name}: tokenization failed ({n})")
        return list(buf[:n])

    # ---------------------------------------------------------------- encoding

    def _encode(self, token_lists: list[list[int]]) -> FloatMatrix:
        """One pooled row per token list (each at most ``max_tokens`` long)."""
        if self._ctx is None:
            raise self.error(f"{self.role} {self.name} is closed")
        out = np.empty((len(token_lists), self._width), dtype=np.float32)
        token_lists = [tokens or [self._fallback_token] for tokens in token_lists]
        # Longest first, greedily filling each decode up to the token budget.
        order = sorted(range(len(token_lists)), key=lambda i: -len(token_lists[i]))
        groups: list[list[int]] = []
        used = 0
        for index in order:
            size = len(token_lists[index])
            if not groups or used + size > self._budget or len(groups[-1]) >= self._max_group:
                groups.append([])
                used = 0
            groups[-1].append(index)
            used += size
        with CPU.busy(self):
            for group in groups:
                self._thread_limit.fit()  # this model's share of the cores
                self._decode(group, token_lists, out)
        return out

    def _decode(self, group: list[int], token_lists: list[list[int]], out: FloatMatrix) -> None:
        llama_cpp = self._llama
        sizes = [len(token_lists[i]) for i in group]
        n = sum(sizes)
        self._tokens_buf[:n] = np.fromiter(
            (t for i in group for t in token_lists[i]), dtype=np.int32, count=n
        )
        self._pos_buf[:n] = np.concatenate([np.arange(size, dtype=np.int32) for size in sizes])
        seq_of_token = np.repeat(np.arange(len(group), dtype=np.uintp), sizes)
        self._seq_id_ptrs[:n] = self._seq_ids_base + seq_of_token * np.uintp(4)
        self._batch.n_tokens = n

        if self._memory is not None:
            llama_cpp.llama_memory_clear(self._memory, True)
        _recent_log.clear()
        status = int(llama_cpp.llama_decode(self._ctx, self._batch))
        if status != 0:
            raise self.error(
                f"{self.name}: llama_decode failed with status {status}: {_last_llama_message()}"
            )

        if self._pooling == POOLING_NONE:
            ptr = llama_cpp.llama_get_embeddings(self._ctx)
            if not ptr:
                raise self.error(f"{self.name}: llama.cpp returned no token embeddings")
            tokens = np.ctypeslib.as_array(ptr, shape=(n, self._width))
            start = 0
            for index, size in zip(group, sizes, strict=True):
                out[index] = tokens[start : start + size].mean(axis=0)
                start += size
            return
        for seq, index in enumerate(group):
            ptr = llama_cpp.llama_get_embeddings_seq(self._ctx, seq)
            if not ptr:
                raise self.error(f"{self.name}: llama.cpp returned no output")
            out[index] = np.ctypeslib.as_array(ptr, shape=(self._width,))

    # ---------------------------------------------------------------- lifetime

    def close(self) -> None:
        """Free the llama.cpp context and model; the encoder is unusable afterwards."""
        llama_cpp = getattr(self, "_llama", None)
        if llama_cpp is None:
            return
        ctx, self._ctx = self._ctx, None
        model, self._model = self._model, None
        if ctx is not None:
            llama_cpp.llama_free(ctx)
        if model is not None:
            llama_cpp.llama_model_free(model)

    def __del__(self) -> None:
        # At interpreter shutdown ctypes or llama_cpp may already be torn down.
        with contextlib.suppress(Exception):
            self.close()


def _available_cpus() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def file_identity(path: Path) -> str:
    """sha256 of the first and last MiB plus the size: cheap, and changes with the model."""
    digest = hashlib.sha256()
    size = path.stat().st_size
    digest.update(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_MiB))
        if size > _MiB:
            handle.seek(max(size - _MiB, _MiB))
            digest.update(handle.read(_MiB))
    return digest.hexdigest()
