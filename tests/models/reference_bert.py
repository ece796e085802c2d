"""An independent reference for BERT models: a small numpy forward pass.

It reads the original safetensors weights and the HF ``tokenizers`` tokenizer directly,
and reproduces what sentence-transformers computes: truncation to ``max_seq_length``
(256), BERT embeddings + encoder layers with exact (erf) GELU, mean pooling over the
attention mask and L2 normalisation; and, for a cross-encoder checkpoint, the
classifier over the pooled [CLS] state.  It shares no code with the GGUF converter or with
llama.cpp, so agreement between the two is evidence that the conversion is right.

Everything is computed in float64.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file
from tokenizers import Tokenizer

Array = npt.NDArray[np.float64]


def _erf(x: Array) -> Array:
    """erf with |error| < 1.2e-7 (Numerical Recipes ``erfc`` Chebyshev fit)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t
                        * (
                            0.27886807
                            + t
                            * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))
                        )
                    )
                )
            )
        )
    )
    erfc = t * np.exp(poly)
    result: Array = np.where(x >= 0.0, 1.0 - erfc, erfc - 1.0)
    return result


def _gelu(x: Array) -> Array:
    result: Array = 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))
    return result


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    result: Array = (x - mean) / np.sqrt(var + eps) * weight + bias
    return result


class ReferenceBert:
    """sentence-transformers' all-MiniLM-L6-v2 pipeline, re-implemented in numpy."""

    def __init__(self, model_dir: Path, max_seq_length: int | None = None) -> None:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
        if max_seq_length is None:
            st_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
            max_seq_length = int(st_config["max_seq_length"])
        self.max_seq_length = max_seq_length
        self.n_layers = int(config["num_hidden_layers"])
        self.n_heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        raw = load_file(str(model_dir / "model.safetensors"))
        self.w: dict[str, Array] = {
            name.removeprefix("bert."): value.astype(np.float64) for name, value in raw.items()
        }
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json ships truncation/padding at 128; sentence-transformers uses 256
        # and pads only within a batch, which mean pooling over the mask ignores.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)

    def token_ids(self, text: str) -> list[int]:
        """Ids including [CLS]/[SEP], truncated to ``max_seq_length``."""
        return list(self.tokenizer.encode(text).ids)

    def untruncated_token_ids(self, text: str) -> list[int]:
        """Ids including [CLS]/[SEP], without truncation."""
        self.tokenizer.no_truncation()
        try:
            return list(self.tokenizer.encode(text).ids)
        finally:
            self.tokenizer.enable_truncation(max_length=self.max_seq_length)

    def embed(self, text: str) -> Array:
        """The L2-normalised mean-pooled sentence embedding of ``text``."""
        return self.embed_ids(self.token_ids(text))

    def embed_many(self, texts: list[str]) -> Array:
        """``embed`` for each text, as rows of one array."""
        return self.embed_id_lists([self.token_ids(text) for text in texts])

    def embed_ids(self, ids: list[int]) -> Array:
        """The sentence embedding of one already tokenized sequence."""
        row: Array = self.embed_id_lists([ids])[0]
        return row

    def embed_id_lists(self, id_lists: list[list[int]]) -> Array:
        """Embeddings of several sequences (mean pooling, L2-normalised)."""
        # Each sequence is unpadded, so mean pooling over its attention mask is a plain mean.
        pooled = np.stack([states.mean(axis=0) for states in self.hidden_states(id_lists)])
        normed: Array = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return normed

    def cross_encoder_scores(self, id_lists: list[list[int]]) -> Array:
        """BertForSequenceClassification's logit 0: classifier(tanh(pooler([CLS]))).

        Every token gets the first segment's token-type embedding, as in llama.cpp.
        """
        w = self.w
        cls = np.stack([states[0] for states in self.hidden_states(id_lists)])
        pooled = np.tanh(cls @ w["pooler.dense.weight"].T + w["pooler.dense.bias"])
        logits: Array = pooled @ w["classifier.weight"].T + w["classifier.bias"]
        return logits[:, 0]

    def hidden_states(self, id_lists: list[list[int]]) -> list[Array]:
        """The last layer's token states of each sequence.

        Position-wise layers run on all tokens of all sequences stacked together (fewer,
        larger matrix products); attention runs on each sequence's own rows, so
        sequences never see each other.
        """
        w = self.w
        spans: list[tuple[int, int]] = []
        start = 0
        for ids in id_lists:
            spans.append((start, start + len(ids)))
            start += len(ids)
        flat = [token for ids in id_lists for token in ids]
        positions = np.concatenate([np.arange(len(ids)) for ids in id_lists])
        x = (
            w["embeddings.word_embeddings.weight"][flat]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        head_dim = x.shape[1] // self.n_heads
        for layer in range(self.n_layers):
            p = f"encoder.layer.{layer}."

            def dense(h: Array, name: str, prefix: str = p) -> Array:
                out: Array = h @ w[f"{prefix}{name}.weight"].T + w[f"{prefix}{name}.bias"]
                return out

            q = dense(x, "attention.self.query")
            k = dense(x, "attention.self.key")
            v = dense(x, "attention.self.value")
            context = np.empty_like(x)
            for begin, end in spans:
                n = end - begin

                def heads(h: Array, begin: int = begin, end: int = end, n: int = n) -> Array:
                    out: Array = h[begin:end].reshape(n, self.n_heads, head_dim)
                    return out.transpose(1, 0, 2)

                scores = heads(q) @ heads(k).transpose(0, 2, 1) / np.sqrt(head_dim)
                scores -= scores.max(axis=-1, keepdims=True)
                probs = np.exp(scores)
                probs /= probs.sum(axis=-1, keepdims=True)
                context[begin:end] = (probs @ heads(v)).transpose(1, 0, 2).reshape(n, -1)
            x = _layer_norm(
                dense(context, "attention.output.dense") + x,
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
                self.eps,
            )
            hidden = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                dense(hidden, "output.dense") + x,
                w[f"{p}output.LayerNorm.weight"],
                w[f"{p}output.LayerNorm.bias"],
                self.eps,
            )
        return [x[begin:end] for begin, end in spans]
