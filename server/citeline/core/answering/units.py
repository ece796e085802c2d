"""Answer units: the sentences, list items, table rows and code blocks of a passage.

An extractive answer is made of units taken verbatim from the evidence, so a unit
must read well on its own and be exactly the source's words:

- prose is cut into sentences (``core/sentences.py``: in English after ``.``, ``!``,
  ``?`` followed by a space and not after an abbreviation, an initial or inside a
  number or a file name such as ``pg_hba.conf``; in Chinese after ``。！？；``,
  closing quotes included);
- each list item is a unit (its wrapped lines joined); the line that introduces
  the list is kept as the item's ``lead``;
- each table row is a unit, with the table's header row as its ``lead``;
- a fenced code block (or a preformatted block of an HTML page) stays whole.

Whitespace inside a line is kept as written; a paragraph's wrapped lines are
joined with one space (none between two CJK characters).  Nothing is reworded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from citeline.core.scripts import CJK_PUNCTUATION, WIDE_CHAR
from citeline.core.sentences import ends_like_a_sentence, split_sentences

UnitKind = Literal["sentence", "item", "row", "code"]


@dataclass(frozen=True)
class Unit:
    """One answer unit of a passage.

    ``block`` numbers the passage's paragraphs, lists, tables and code blocks;
    ``position`` is the unit's order in the passage.  ``lead`` is what the unit
    needs to be understood alone (a list's lead-in line, a table's header row).
    """

    text: str
    kind: UnitKind
    block: int
    position: int
    lead: str = ""

    @property
    def display(self) -> str:
        """The unit as shown in an answer: a table row under its header."""
        if self.kind == "row" and self.lead:
            return f"{self.lead}\n{self.text}"
        return self.text


def is_fragment(unit: Unit) -> bool:
    """A line that does not end like a sentence: a term being defined, a heading, a label."""
    return unit.kind == "sentence" and not ends_like_a_sentence(unit.text)


# A table of contents' line, as a PDF's text layer or a page's contents list gives it:
# a dotted leader to a page number ("Installing ....... 12"), or a section number
# with a page number before or after its title ("21 6.3 What about ”sid”?",
# "6.3 What about sid? 21").  It names a section; it answers nothing.
_DOTTED_LEADER = re.compile(r"(?:\.\s?){4,}\s*\d{1,4}\s*$|…{2,}\s*\d{1,4}\s*$")
_PAGE_THEN_SECTION = re.compile(r"^\d{1,4}\s+\d{1,2}(?:\.\d{1,2})+\.?\s+\S")
_SECTION_THEN_PAGE = re.compile(r"^\d{1,2}(?:\.\d{1,2})+\.?\s+[^.]{2,80}?\s+\d{1,4}$")
_CONTENTS_LENGTH = 160


def is_contents_line(unit: Unit) -> bool:
    """A table of contents' line (``_DOTTED_LEADER``, ``_PAGE_THEN_SECTION``,
    ``_SECTION_THEN_PAGE``): never an answer unit."""
    if unit.kind not in ("sentence", "item") or len(unit.text) > _CONTENTS_LENGTH:
        return False
    text = unit.text.strip()
    return bool(
        _DOTTED_LEADER.search(text)
        or _PAGE_THEN_SECTION.match(text)
        or _SECTION_THEN_PAGE.match(text)
    )


# -- blocks --------------------------------------------------------------------

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+\S")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_SHELL_PROMPT = re.compile(r"^\s*(?:\$|#|%|>>>|PS>)\s")
_CODE_LINE_END = re.compile(r"[{};]\s*$|^\s*[}\])]")


_CURLY_QUOTES = "“”‘’"


def _joins_tight(before: str, after: str) -> bool:
    """Whether a line break between these characters is no space: CJK text and its
    punctuation (，。“”) on both sides, not two curly quotes alone."""
    if before in _CURLY_QUOTES and after in _CURLY_QUOTES:
        return False
    return all(
        WIDE_CHAR.match(char) or CJK_PUNCTUATION.match(char) or char in _CURLY_QUOTES
        for char in (before, after)
    )


def _join_lines(lines: list[str]) -> str:
    """A paragraph's wrapped lines as one line: one space, none within CJK text."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if out and not _joins_tight(out[-1], line[0]):
            out += " "
        out += line
    return out


def _looks_like_code(lines: list[str]) -> bool:
    """A preformatted block of an HTML page or plain text: indented lines, prompts, braces.

    A list (its items' wrapped lines are indented) is not code."""
    if any(_LIST_ITEM.match(line) and not line[:1].isspace() for line in lines):
        return False
    if len(lines) < 2:
        return bool(lines) and bool(_SHELL_PROMPT.match(lines[0]))
    indented = sum(1 for line in lines if line[:1] in (" ", "\t") and line.strip())
    coded = sum(1 for line in lines if _SHELL_PROMPT.match(line) or _CODE_LINE_END.search(line))
    return indented >= len(lines) / 2 or coded >= len(lines) / 2


def _is_table(lines: list[str]) -> bool:
    return len(lines) >= 2 and "|" in lines[0] and bool(_TABLE_SEPARATOR.match(lines[1]))


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(kind, lines) for each block: ``code`` for fenced code, else ``text``."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            current.append(line)
            if line.strip().startswith(fence):
                blocks.append(("code", current))
                current, fence = [], None
            continue
        opening = _FENCE.match(line)
        if opening:
            if current:
                blocks.append(("text", current))
            current, fence = [line], opening.group(1)[0] * 3
            continue
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(("text", current))
            current = []
    if current:
        blocks.append(("code" if fence is not None else "text", current))
    return blocks


def split_units(text: str) -> list[Unit]:
    """The passage's units, in reading order."""
    units: list[Unit] = []
    previous_tail = ""  # the last sentence of the block before: a list's lead-in

    def add(unit_text: str, kind: UnitKind, block: int, lead: str = "") -> None:
        if unit_text.strip():
            units.append(Unit(unit_text, kind, block, len(units), lead))

    for block, (kind, lines) in enumerate(_blocks(text)):
        if kind == "code" or _looks_like_code(lines):
            add("\n".join(line.rstrip() for line in lines).strip("\n"), "code", block)
            previous_tail = ""
            continue
        if _is_table(lines):
            header = f"{lines[0].strip()}\n{lines[1].strip()}"
            for row in lines[2:]:
                add(row.strip(), "row", block, header)
            previous_tail = ""
            continue
        lead_lines: list[str] = []
        items: list[list[str]] = []
        for line in lines:
            if _LIST_ITEM.match(line):
                items.append([line])
            elif items:
                items[-1].append(line)
            else:
                lead_lines.append(line)
        sentences = split_sentences(_join_lines(lead_lines)) if lead_lines else []
        for sentence in sentences:
            add(sentence, "sentence", block)
        if items:
            lead = sentences[-1] if sentences else previous_tail
            lead = lead if lead.rstrip().endswith((":", "：")) else ""
            for item in items:
                add(_join_lines(item), "item", block, lead)
            previous_tail = ""
        else:
            previous_tail = sentences[-1] if sentences else ""
    return units
