"""SentencePiece's ``precompiled_charsmap``, built from a table of replacements.

A SentencePiece normaliser (and HF's ``Precompiled`` normaliser, and llama.cpp's UGM
tokenizer reading ``tokenizer.ggml.precompiled_charsmap``) finds the longest prefix
of the input's UTF-8 bytes in a double-array trie (darts-clone's layout) and
replaces it with a NUL-terminated string.  The blob is:

* a uint32: the trie's size in bytes;
* the trie: uint32 units, each packing a label (bits 0-7), a "has leaf" flag (bit
  8) and an XOR offset to the node's children (bits 10-30; bit 9 shifts it left by
  8).  A node's child for byte ``c`` sits at ``index ^ offset ^ c`` and must carry
  label ``c``; a key ends at a node whose flag is set, and its value (bit 31 set,
  so it is never a label) sits at ``index ^ offset``;
* the replacement strings, each NUL-terminated; a value is an offset into them.

:func:`build_charsmap` writes that blob for any set of keys; :func:`charsmap_lookup`
reads one back, the way llama.cpp does, for the tests.
"""

from __future__ import annotations

import collections
import struct
from collections.abc import Mapping

_LEAF = 1 << 8
_VALUE = 1 << 31
_BLOCK = 256


class _Node:
    __slots__ = ("children", "value")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.value: int | None = None


def build_charsmap(replacements: Mapping[bytes, bytes]) -> bytes:
    """The precompiled charsmap replacing each key (UTF-8 bytes) by its value.

    A replacement may be empty (the key is deleted); neither may hold a NUL byte.
    """
    strings = bytearray()
    where: dict[bytes, int] = {}
    root = _Node()
    for key, value in sorted(replacements.items()):
        if not key or b"\0" in key or b"\0" in value:
            raise ValueError(f"charsmap keys must be non-empty, without NUL: {key!r}")
        if value not in where:
            where[value] = len(strings)
            strings += value + b"\0"
        node = root
        for byte in key:
            node = node.children.setdefault(byte, _Node())
        node.value = where[value]
    units = _double_array(root)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(strings)


def _double_array(root: _Node) -> list[int]:
    units: list[int] = [0] * _BLOCK
    used = bytearray(_BLOCK)  # 1 where a unit is taken
    used[0] = 1  # the root
    bases: set[int] = set()
    hint = _BLOCK  # the search for a free base starts here (block 0 holds the root)
    pending = collections.deque([(0, root)])
    while pending:
        index, node = pending.popleft()
        labels = sorted(node.children)
        if node.value is not None:
            labels = [0, *labels]
        base = _free_base(used, units, bases, index, labels, hint)
        hint = used.find(0, hint)
        if hint < 0:
            hint = len(used)
        bases.add(base)
        offset = index ^ base
        unit = units[index] & (_VALUE | _LEAF | 0xFF)
        unit |= offset << 10 if offset < (1 << 21) else (offset << 2) | (1 << 9)
        if node.value is not None:
            unit |= _LEAF
            units[base] = node.value | _VALUE
            used[base] = 1
        units[index] = unit
        for byte, child in sorted(node.children.items()):
            units[base ^ byte] = byte
            used[base ^ byte] = 1
            pending.append((base ^ byte, child))
    return units


def _free_base(
    used: bytearray, units: list[int], bases: set[int], index: int, labels: list[int], hint: int
) -> int:
    """The first base at or after a free unit (from ``hint``) whose children's units
    are all free, not the base of another node and encodable from ``index``."""
    first = labels[0]
    free = used.find(0, hint)
    while True:
        if free < 0:
            free = len(used)
            used.extend(bytes(_BLOCK))
            units.extend([0] * _BLOCK)
        base = free ^ first
        offset = index ^ base
        if base not in bases and offset < (1 << 29) and _encodable(offset):
            if (base | (_BLOCK - 1)) >= len(used):
                used.extend(bytes(_BLOCK))
                units.extend([0] * _BLOCK)
            if all(not used[base ^ c] for c in labels):
                return base
        free = used.find(0, free + 1)


def _encodable(offset: int) -> bool:
    return offset != 0 and (offset < (1 << 21) or offset % _BLOCK == 0)


def charsmap_lookup(charsmap: bytes, data: bytes) -> tuple[int, bytes] | None:
    """The longest prefix of ``data`` the charsmap replaces: (its length, the
    replacement); None when no prefix is replaced.  Reads as llama.cpp does."""
    (size,) = struct.unpack_from("<I", charsmap, 0)
    units: tuple[int, ...] = struct.unpack_from(f"<{size // 4}I", charsmap, 4)
    strings = charsmap[4 + size :]

    def base(i: int) -> int:
        return (units[i] >> 10) << ((units[i] & (1 << 9)) >> 6)

    found: tuple[int, bytes] | None = None
    node = base(0)
    for length, byte in enumerate(data, start=1):
        if byte == 0:
            break
        node ^= byte
        if (units[node] & (_VALUE | 0xFF)) != byte:
            break
        leaf = bool(units[node] & _LEAF)
        node ^= base(node)
        if leaf:
            start = units[node] & (_VALUE - 1)
            found = (length, strings[start : strings.index(b"\0", start)])
    return found
