"""Converting a BERT checkpoint (safetensors + WordPiece) to GGUF for llama.cpp.

Embedding models (sentence-transformers) keep their pooling; cross-encoders
(``BertForSequenceClassification``, e.g. ms-marco MiniLM rerankers) become
rerankers with llama.cpp's rank pooling and their classifier.  The conversion
follows llama.cpp's ``BertModel`` converter conventions:

* architecture ``bert``, HF tensor names mapped by ``gguf.get_tensor_name_map``;
* 2-D weight matrices as F16 (cosine >= 0.9999 against the F32 weights on
  all-MiniLM-L6-v2), LayerNorm weights, biases, position and token-type embeddings
  as F32;
* the WordPiece vocab in llama.cpp's "phantom space" form
  (:mod:`citeline.models.wordpiece_vocab`).

Used for the default embedding model (:mod:`citeline.models.minilm`) and by the
tests and benchmarks to build rerankers.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from citeline.models import ModelError, read_json
from citeline.models.wordpiece_vocab import load_wordpiece_vocab

#: Bump whenever the GGUF this module writes would differ (metadata, vocab, dtypes).
CONVERTER_VERSION = 1

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


def convert_bert_to_gguf(
    source: Path, target: Path, *, f16: bool = True, model_name: str | None = None
) -> None:
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

    config = read_json(source / "config.json", required=True)
    _check_bert_config(config, source)
    n_layers = int(config["num_hidden_layers"])
    vocab = load_wordpiece_vocab(source, int(config.get("vocab_size", 0)))
    labels = _classifier_labels(config)
    pooling = gguf.PoolingType.RANK if labels else _pooling_type(source)

    with gguf_writer(source, target) as writer:
        ftype = gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32

        writer.add_name(model_name or source.name)
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


@contextlib.contextmanager
def gguf_writer(source: Path, target: Path) -> Iterator[Any]:
    """A ``gguf.GGUFWriter`` (BERT architecture) on a temporary file in ``target``'s
    folder: the block adds metadata and tensors, and when it ends the file is written
    and renamed into place, so a reader never sees a partial file.  Any failure removes
    the temporary file and is one ``ModelError`` naming ``source``."""
    import gguf

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise ModelError(f"cannot write converted model to {target.parent}: {exc}") from exc
    tmp_path = Path(tmp_name)
    try:
        writer = gguf.GGUFWriter(tmp_path, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
        yield writer
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


def _pooling_type(source: Path) -> int:
    """The gguf PoolingType value of a sentence-transformers Pooling module (MEAN=1)."""
    modules = _read_json_list(source / "modules.json")
    pooling_dir = "1_Pooling"
    for module in modules:
        if str(module.get("type", "")).endswith("Pooling"):
            pooling_dir = str(module.get("path") or pooling_dir)
            break
    config = read_json(source / pooling_dir / "config.json", required=False)
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
