"""A loaded GGUF model's tokenizer, giving the ids the model's own (HF) tokenizer gives.

llama.cpp tokenizes with the vocabulary in the GGUF file.  For BERT (WordPiece)
vocabularies its normalisation departs from HF's in a few places, so the text is
first rewritten by :func:`~citeline.backends.llama.wordpiece.wordpiece_compatible`.
Special-token text such as ``[SEP]`` in the input is parsed as that token, as
sentence-transformers does.
"""

from __future__ import annotations

from typing import Any

from citeline.backends.llama import runtime
from citeline.backends.llama.wordpiece import wordpiece_compatible


class Tokenizer:
    def __init__(self, llama_cpp: Any, model: Any) -> None:
        self._llama = llama_cpp
        self.vocab = llama_cpp.llama_model_get_vocab(model)

        def meta(key: str) -> str | None:
            return runtime.model_meta(llama_cpp, model, key)

        #: A BERT (WordPiece) vocabulary: its input is adjusted to match HF's exactly.
        self.wordpiece = meta("tokenizer.ggml.model") == "bert"
        lowercase = meta("tokenizer.ggml.normalizer.lowercase") != "false"
        strip = meta("tokenizer.ggml.normalizer.strip_accents")
        self._strip_accents = lowercase if strip is None else strip == "true"
        unk_id = int(meta("tokenizer.ggml.unknown_token_id") or 100)
        n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        unk_text = llama_cpp.llama_vocab_get_text(self.vocab, unk_id) if unk_id < n_vocab else b""
        self._unk_text = (unk_text or b"[UNK]").decode("utf-8", errors="replace")
        fallback = int(llama_cpp.llama_vocab_bos(self.vocab))
        if fallback < 0:
            fallback = int(llama_cpp.llama_vocab_eos(self.vocab))
        #: What an empty text is encoded as (BOS, else EOS, else token 0).
        self.fallback_token = max(fallback, 0)

    def tokenize(self, text: str, *, add_special: bool) -> list[int] | None:
        """The token ids of ``text``; None if llama.cpp fails to tokenize it."""
        llama_cpp = self._llama
        if self.wordpiece:
            text = wordpiece_compatible(text, strip_accents=self._strip_accents, unk=self._unk_text)
        data = text.encode("utf-8", errors="replace")
        capacity = len(data) + 16
        buf = (llama_cpp.llama_token * capacity)()
        tokenize = llama_cpp.llama_tokenize
        n = int(tokenize(self.vocab, data, len(data), buf, capacity, add_special, True))
        if n < 0:
            capacity = -n
            buf = (llama_cpp.llama_token * capacity)()
            n = int(tokenize(self.vocab, data, len(data), buf, capacity, add_special, True))
            if n < 0:
                return None
        return list(buf[:n])
