"""Heading-aware chunking with overlap and natural boundaries.

A document is first split by section (and, for PDFs, by page, since the page is
what a citation points at); each section is then cut into windows of at most
``max_cost`` that end at the strongest natural boundary available: a block (blank
line), a sentence end in English or Chinese, a line end, and only as a last
resort a space or an arbitrary character.  Consecutive windows overlap by about
``overlap_cost``.  Every chunk keeps the exact 1-based source lines it spans.

Sizes are measured in a cheap "cost" that approximates embedding tokens: one unit
per character, plus three for each CJK character (MiniLM-style WordPiece gives
roughly four Latin characters, but one CJK character, per token).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from citeline.core.documents import SECTION_SEPARATOR, Block, Chunk, SourceDocument
from citeline.core.scripts import WIDE_CHAR

# A sentence ends after . ! ? (followed by whitespace) or after a CJK full stop,
# exclamation, question mark or semicolon (no space needed).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|(?<=[。！？；])[”’」』）]*")


@dataclass(frozen=True)
class ChunkSettings:
    """How documents are cut.  Part of the index's identity: changing it re-chunks."""

    max_cost: int = 1000
    overlap_cost: int = 150
    headings_in_embedding: bool = True

    def fingerprint(self) -> str:
        return f"v1:{self.max_cost}:{self.overlap_cost}:{int(self.headings_in_embedding)}"


def text_cost(text: str) -> int:
    """Approximate embedding tokens × 4: characters, with CJK characters weighted 4."""
    return len(text) + 3 * len(WIDE_CHAR.findall(text))


@dataclass(frozen=True)
class _Piece:
    """An unbreakable run of text: a sentence or a part of one, inside one block."""

    text: str
    start_line: int | None
    end_line: int | None
    block: int
    row: int  # line index inside the block


def chunk_document(document: SourceDocument, settings: ChunkSettings) -> list[Chunk]:
    """Cut a loaded document into chunks, in reading order."""
    return list(iter_chunks(document, settings))


def iter_chunks(document: SourceDocument, settings: ChunkSettings) -> Iterator[Chunk]:
    """:func:`chunk_document` one chunk at a time, as it is cut (a big document's
    first chunks come before its last are made)."""
    ordinal = 0
    for group in _section_groups(document.blocks):
        for text, start, end in _windows(group, settings):
            yield Chunk(
                path=document.path,
                title=document.title,
                heading_path=group[0][1].heading_path,
                text=text,
                start_line=start,
                end_line=end,
                page=group[0][1].page,
                ordinal=ordinal,
                title_from_content=document.title_from_content,
            )
            ordinal += 1


def embedding_text(chunk: Chunk, settings: ChunkSettings) -> str:
    """The text sent to the embedder: title and heading path for context, then the chunk.

    A title that is only the file name is left out, so renaming a file never
    changes what is embedded.
    """
    if not settings.headings_in_embedding:
        return chunk.text
    context = list(chunk.heading_path)
    if chunk.title_from_content and chunk.title and (not context or context[0] != chunk.title):
        context.insert(0, chunk.title)
    if not context:
        return chunk.text
    return f"{SECTION_SEPARATOR.join(context)}\n\n{chunk.text}"


def embedding_key(text: str) -> str:
    """Content address of the text that is embedded: equal text, equal vector."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _section_groups(blocks: tuple[Block, ...]) -> Iterator[list[tuple[int, Block]]]:
    group: list[tuple[int, Block]] = []
    for index, block in enumerate(blocks):
        if not block.text.strip():
            continue
        if group and (
            group[-1][1].heading_path != block.heading_path or group[-1][1].page != block.page
        ):
            yield group
            group = []
        group.append((index, block))
    if group:
        yield group


def _pieces(index: int, block: Block, max_cost: int) -> Iterator[_Piece]:
    """Split a block into sentence pieces that each fit in a window."""
    line = block.start_line
    for row, raw_line in enumerate(block.text.split("\n")):
        if raw_line.strip():
            for sentence in _split_sentences(raw_line):
                for part in _split_oversized(sentence, max_cost):
                    yield _Piece(part, line, line, index, row)
        if line is not None:
            line += 1
            if block.end_line is not None:
                line = min(line, block.end_line)


def _split_sentences(line: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        end = match.end()
        if end > start and line[start:end].strip():
            parts.append(line[start:end])
            start = end
    if line[start:].strip():
        parts.append(line[start:])
    return parts


def _split_oversized(sentence: str, max_cost: int) -> Iterator[str]:
    """A sentence longer than a window is cut at spaces, or anywhere if it has none."""
    while text_cost(sentence) > max_cost:
        cut = _cut_point(sentence, max_cost)
        yield sentence[:cut]
        sentence = sentence[cut:]
    if sentence:
        yield sentence


def _cut_point(text: str, max_cost: int) -> int:
    cost = 0
    last_space = -1
    for position, char in enumerate(text):
        cost += 4 if WIDE_CHAR.match(char) else 1
        if cost > max_cost:
            return last_space + 1 if last_space > 0 else max(position, 1)
        if char.isspace():
            last_space = position
    return len(text)


def _join(pieces: list[_Piece]) -> str:
    out: list[str] = []
    previous: _Piece | None = None
    for piece in pieces:
        if previous is not None:
            if piece.block != previous.block:
                out.append("\n\n")
            elif piece.row != previous.row:
                out[-1] = out[-1].rstrip(" \t")
                out.append("\n")
        out.append(piece.text)
        previous = piece
    return "".join(out).strip()


def _windows(
    group: list[tuple[int, Block]], settings: ChunkSettings
) -> Iterator[tuple[str, int | None, int | None]]:
    pieces = [p for index, block in group for p in _pieces(index, block, settings.max_cost)]
    start = 0
    while start < len(pieces):
        end = start
        cost = 0
        while end < len(pieces):
            piece_cost = text_cost(pieces[end].text)
            if end > start and cost + piece_cost > settings.max_cost:
                break
            cost += piece_cost
            end += 1
        if end < len(pieces):
            end = _best_boundary(pieces, start, end, settings.max_cost)
        window = pieces[start:end]
        yield _join(window), window[0].start_line, window[-1].end_line
        if end >= len(pieces):
            return
        # Overlap: step back over whole pieces worth at most overlap_cost, but always
        # make progress.
        back = end
        overlap = 0
        while back - 1 > start:
            overlap += text_cost(pieces[back - 1].text)
            if overlap > settings.overlap_cost:
                break
            back -= 1
        start = back


def _boundary_strength(before: _Piece, after: _Piece) -> int:
    if before.block != after.block:
        return 3  # blank line: end of a paragraph, list, code block
    if before.row != after.row:
        return 2  # line end
    return 1  # sentence end inside a line


def _best_boundary(pieces: list[_Piece], start: int, end: int, max_cost: int) -> int:
    """Pull a full window's end back to the strongest boundary in its last part.

    Only boundaries that keep the window at least 60% full are considered, so
    windows do not shrink to fragments; among equally strong ones the latest wins.
    """
    best, best_strength = end, _boundary_strength(pieces[end - 1], pieces[end])
    cost = sum(text_cost(p.text) for p in pieces[start:end])
    for k in range(end - 1, start, -1):
        cost -= text_cost(pieces[k].text)
        if cost < 0.6 * max_cost:
            break
        strength = _boundary_strength(pieces[k - 1], pieces[k])
        if strength > best_strength:
            best, best_strength = k, strength
    return best
