"""The values that flow through Citeline: loaded documents, chunks, search hits.

Everything here is a frozen dataclass with no behaviour beyond small derived
properties, so every stage (loading, chunking, storing, retrieving, answering)
can share them without sharing state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict, overload

DocumentKind = Literal["markdown", "html", "pdf", "text"]

SECTION_SEPARATOR = " > "


@dataclass(frozen=True)
class Block:
    """A run of a document's text that belongs to one section.

    Line numbers are 1-based and inclusive, for text formats; the text keeps one
    line per source line where the format allows, so a chunker can compute the
    line of any offset inside it.  PDF blocks carry a 1-based page instead.
    """

    text: str
    heading_path: tuple[str, ...] = ()
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None


@dataclass(frozen=True)
class SourceDocument:
    """One file, loaded: its title, metadata and text blocks in reading order.

    ``title_from_content`` is False when the title fell back to the file name; such
    a title is not part of the text sent to the embedder, so renaming the file
    never changes what is embedded.
    """

    path: str
    kind: DocumentKind
    title: str
    blocks: tuple[Block, ...]
    title_from_content: bool = True
    metadata: Mapping[str, str] = field(default_factory=dict)
    # What loading left out of the text and why, one line each (e.g. the running
    # headers a PDF repeats on every page): recorded with the file, never silent.
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """A window of a document that is embedded and retrieved as one unit."""

    path: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    start_line: int | None
    end_line: int | None
    page: int | None
    ordinal: int
    title_from_content: bool = True

    @property
    def section(self) -> str:
        return SECTION_SEPARATOR.join(self.heading_path)


SCORE_DIGITS = 6  # a score as JSON carries it (the command line, MCP, the wire)
SECONDS_DIGITS = 4  # a timing or a probability as JSON carries it


@overload
def rounded(value: float, digits: int = SCORE_DIGITS) -> float: ...
@overload
def rounded(value: None, digits: int = SCORE_DIGITS) -> None: ...
def rounded(value: float | None, digits: int = SCORE_DIGITS) -> float | None:
    """``value`` rounded as every JSON output shows it (None stays None)."""
    return None if value is None else round(value, digits)


class PlaceJson(TypedDict):
    """Where a passage is, as JSON: the fields a hit and a citation share."""

    path: str
    title: str | None
    section: str | None
    page: int | None
    start_line: int | None
    end_line: int | None


class HitJson(PlaceJson):
    """A hit as JSON (:meth:`Hit.to_json`): what the command line and MCP print, and
    what the wire's ``Hit`` (``citeline.wire``) locates in its folder."""

    rank: int
    score: float
    dense: float | None
    keyword: float | None
    rerank: float | None
    text: str


@dataclass(frozen=True)
class Hit:
    """A chunk returned by a search, with its rank (1-based) and scores.

    ``score`` orders the results (the fused score in hybrid search).  The
    components say how strong each kind of match is, on scales that do not
    depend on the other results: ``dense`` is the cosine similarity of query and
    chunk; ``keyword`` is the chunk's BM25 score divided by the query's total
    IDF, roughly the share of the query's information the chunk matches.
    ``rerank`` is the reranker's score when one reordered the hit (the list is then
    ordered by it first); its scale depends on the reranker model.
    """

    chunk_id: int
    rank: int
    score: float
    chunk: Chunk
    dense: float | None = None
    keyword: float | None = None
    rerank: float | None = None

    def to_json(self) -> HitJson:
        c = self.chunk
        return {
            "rank": self.rank,
            "score": rounded(self.score),
            "dense": rounded(self.dense),
            "keyword": rounded(self.keyword),
            "rerank": rounded(self.rerank),
            "path": c.path,
            "title": c.title,
            "section": c.section,
            "page": c.page,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "text": c.text,
        }


def display_text(text: str) -> str:
    """``text`` as it can be shown and stored as UTF-8.

    File names are kept losslessly as Python keeps them (bytes that are not UTF-8
    become lone surrogates, ``os.fsdecode``); shown, such a byte is U+FFFD.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape" if _escapes_only(text) else "replace")
        return raw.decode("utf-8", "replace")


def _escapes_only(text: str) -> bool:
    """Whether every surrogate in ``text`` is one ``surrogateescape`` made (U+DC80-DCFF)."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


class LoadError(Exception):
    """A document could not be loaded; the message is one line, fit for a user."""
