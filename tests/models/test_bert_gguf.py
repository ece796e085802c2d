"""The BERT to GGUF converter: what it writes for a cross-encoder (rank pooling, the
classifier and its labels) and for the default embedding model (its vocabulary in
llama.cpp's phantom-space form, its tokenizer settings).  That the converted models
compute what the originals compute is tested with the embedder and the reranker
(tests/backends/llama/test_embedder.py, test_reranker.py)."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest

from citeline.models import ModelError
from citeline.models.bert_gguf import CONVERTER_VERSION, convert_bert_to_gguf


def test_converted_model_is_a_rank_pooling_reranker(reranker_path: Path) -> None:
    import gguf

    reader = gguf.GGUFReader(reranker_path)
    pooling = reader.fields["bert.pooling_type"]
    assert int(pooling.parts[pooling.data[0]][0]) == 4  # LLAMA_POOLING_TYPE_RANK
    names = {tensor.name for tensor in reader.tensors}
    assert {"cls.weight", "cls.bias", "cls.output.weight", "cls.output.bias"} <= names


def test_classifier_labels_come_from_id2label(cross_encoder_dir: Path, tmp_path: Path) -> None:
    import gguf

    source = tmp_path / "two-labels"
    source.mkdir()
    for item in cross_encoder_dir.iterdir():
        (source / item.name).symlink_to(item)
    (source / "config.json").unlink()
    config = json.loads((cross_encoder_dir / "config.json").read_text())
    config["id2label"] = {"1": "relevant", "0": "irrelevant"}
    (source / "config.json").write_text(json.dumps(config))
    target = tmp_path / "two-labels.gguf"
    convert_bert_to_gguf(source, target, f16=True)
    field = gguf.GGUFReader(target).fields["bert.classifier.output_labels"]
    labels = [bytes(field.parts[i]).decode() for i in field.data]
    assert labels == ["irrelevant", "relevant"]


def field_value(reader: gguf.GGUFReader, key: str) -> object:
    field = reader.fields[key]
    value = field.parts[field.data[0]]
    return bytes(value).decode() if field.types[0] == gguf.GGUFValueType.STRING else value[0]


def test_the_default_model_is_written_as_llama_cpp_reads_bert(gguf_path: Path) -> None:
    reader = gguf.GGUFReader(gguf_path)
    assert field_value(reader, "general.architecture") == "bert"
    assert field_value(reader, "citeline.converter_version") == CONVERTER_VERSION
    assert field_value(reader, "bert.pooling_type") == 1  # mean, as sentence-transformers
    assert field_value(reader, "tokenizer.ggml.model") == "bert"
    tokens = reader.fields["tokenizer.ggml.tokens"]
    vocab = [bytes(tokens.parts[i]).decode() for i in tokens.data]
    assert vocab[101:103] == ["[CLS]", "[SEP]"]  # special tokens unchanged
    assert "\u2581hello" in vocab and "ing" in vocab  # word starts marked, "##ing" unmarked
    types = {t.name: str(t.tensor_type.name) for t in reader.tensors}
    assert types["token_embd.weight"] == "F16" and types["position_embd.weight"] == "F32"


def test_a_checkpoint_that_is_not_bert_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "roberta"}))
    with pytest.raises(ModelError, match="not bert"):
        convert_bert_to_gguf(tmp_path, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists()
