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


# -- the texts the comparisons run on -------------------------------------------------

LONG_PARAGRAPH = " ".join(
    [
        "Citeline indexes a folder of documents on your own machine and answers questions",
        "about them with citations that point at the exact file, section and line.",
        "It watches the folder for changes, re-embeds only the chunks whose text changed,",
        "and keeps vectors in a small on-disk store so that restarting the daemon is cheap.",
        "Markdown headings, HTML sections and PDF pages become the structure of each",
        "citation, so an answer can say 'see Installation > Proxies, lines 40-52' instead of",
        "pointing vaguely at a file.  The embedding model is all-MiniLM-L6-v2, converted",
        "once to GGUF and run through llama.cpp on the CPU; the answer model is a small",
        "instruction-tuned SmolLM2.  Nothing leaves the computer: there is no telemetry,",
        "no cloud service and no account.  When the evidence is too weak, Citeline says so",
        "rather than inventing an answer, and every sentence it writes carries a numbered",
        "reference to the passage it came from.  Large folders are indexed incrementally,",
        "in the background, with progress reported to the editor; queries made while",
        "indexing runs see the part of the folder that is already done.  Settings live in",
        "a TOML file next to the documents, so a team can share them in version control,",
        "and the index itself is a cache that can be deleted at any time and rebuilt from",
        "the documents alone, byte for byte, on any machine with the same model files.",
    ]
)

SENTENCES = [
    "Hello world",
    "a",
    "",
    "The quick brown fox jumps over the lazy dog.",
    "What is the capital of France?",
    "How do I reset my password if I no longer have access to my e-mail?",
    "Edit pg_hba.conf and restart PostgreSQL to allow md5 authentication.",
    "Run pip install --no-cache-dir -r requirements.txt inside the container.",
    "getUserById(user_id: int) -> Optional[User] raises KeyError",
    '$ export PATH="$HOME/.local/bin:$PATH" && echo $?',
    "Version 3.11.4 was released on 2023-06-06, fixing CVE-2023-24329 (score 7.5).",
    "URGENT!!! Read this... now?! <b>bold</b> & 100% {json: [1, 2]}",
    "The café on Rue Saint-Honoré serves crème brûlée.",
    "Naïve résumé: Zürich, São Paulo, Kraków, İstanbul, Straße, ÆØÅ.",
    "我想在苹果公司工作，因为那里的工程师很优秀。",
    "日本語のテキストも少し混ぜておきます。",
    "Привет, как дела? Всё хорошо.",
    "The temperature dropped to −40°C (−40°F) overnight; ∑ x_i / n ≈ 3.14159.",
    "Emoji 🚀🦙 and symbols ™ © ½ become unknown or split tokens.",
    "  leading and trailing whitespace\tand\ttabs\n\nand new lines  ",
    "zero\u200bwidth space and soft\u00adhyphen and non\u00a0breaking space",
    "ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ and ligature ﬁle",
    "Literal [CLS] and [SEP] and [MASK] markers in a document",
    "private\ue000use area character",
    LONG_PARAGRAPH,
]

# Where llama.cpp's own BERT tokenizer departs from HF's; LlamaEmbedder rewrites its
# input (citeline.backends.llama.wordpiece.wordpiece_compatible) so the ids match again.
COMPAT_SENTENCES = [
    "한국어 문장도 검색할 수 있어야 합니다.",  # HF's NFD splits Hangul into jamo
    "vertical\x0btab, form\x0cfeed and next\x85line controls",  # HF deletes them
    "मैं घर जा रहा हूँ।",  # HF strips only nonspacing marks, keeps the vowel signs
    "sha512 " + "0123456789abcdef" * 8 + " is one long word",  # > 100 chars: HF's [UNK]
]
